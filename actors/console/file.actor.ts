// Wires the file machine to its effect: `release` deletes the object from the blob store (reference-counted
// there; its collector removes unreferenced bytes), confirms the key no longer resolves, frees the name.
import { Effect } from "effect";
import type { ActorDefinition } from "../host.ts";
import { Transient } from "../host.ts";
import { AGG, CMD, EV, consoleEvent, type NewConsoleEvent } from "../../schemas/console/events.ts";
import type { ConsoleCommand } from "../../schemas/console/commands.ts";
import { fileMachine } from "./file.machine.ts";
import type { ConsoleActorPorts } from "./ports.ts";

export function fileActor(ports: ConsoleActorPorts): ActorDefinition<ConsoleCommand, typeof fileMachine, NewConsoleEvent> {
  return {
    aggregateType: AGG.file,
    machine: fileMachine,
    snapshotVersion: 2,
    decide: (snapshot, command) => {
      if (command.type !== CMD.fileDelete || snapshot.value !== "completed") return [];
      const d = command.data;
      const requested = consoleEvent(EV.fileDeleteRequested, d);
      // A failed upload stored nothing (its job cleaned up): discard it at once.
      if (d.upload_failed) return [requested, consoleEvent(EV.fileDeleted, { deleted_at: d.requested_at, bucket_id: d.bucket_id, space_id: d.space_id, size: 0 })];
      return [requested];
    },
    effects: {
      release: ({ context, aggregateId }) =>
        Effect.tryPromise({
          try: async () => {
            const f = context.file!;
            await ports.storage.remove(f.storage_bucket_name, f.storage_key).catch((err) => {
              if ((err as { transient?: boolean }).transient) throw err;
            });
            const still = await ports.storage.stat(f.storage_bucket_name, f.storage_key).catch((err) => {
              if ((err as { transient?: boolean }).transient) throw err;
              return null;
            });
            if (still) throw new Error("the stored object is still there");
            await ports.clog.release(f.name_claim, aggregateId);
            return [consoleEvent(EV.fileDeleted, { deleted_at: ports.clog.clock.now(), bucket_id: f.bucket_id, space_id: f.space_id, size: f.size })];
          },
          catch: (e) => new Transient(`release: ${(e as Error).message}`),
        }),
    },
  };
}
