// Wires the upload machine to its effects (see upload.machine.ts). A worker taking the command records the job as
// queued and started together with the outcome of `commit`, a read-only check: repeating it after a crash changes
// nothing.
import { Effect } from "effect";
import { prepared } from "../../db/pool.ts";
import type { ActorDefinition } from "../host.ts";
import { Transient } from "../host.ts";
import { AGG, CMD, EV, type BucketState, type UploadQueued, consoleEvent, type NewConsoleEvent } from "../../schemas/console/events.ts";
import type { ConsoleCommand } from "../../schemas/console/commands.ts";
import { transientOf } from "./bucket.actor.ts";
import { uploadMachine } from "./upload.machine.ts";
import type { ConsoleActorPorts } from "./ports.ts";

/** The blob store object holding a file: `<storage bucket>/<key>`. */
export const storageObjectId = (u: Pick<UploadQueued, "storage_bucket_name" | "storage_key">) => `${u.storage_bucket_name}/${u.storage_key}`;

/** The checks of `commit`: the space's storage and cap, and the state of the file's bucket (null when it has no row). */
const COMMIT_CHECKS = `SELECT s.storage_used, s.storage_cap, b.state AS bucket_state FROM console_spaces s
  LEFT JOIN console_buckets b ON b.bucket_id = $2 AND b.space_id = s.space_id WHERE s.space_id = $1`;

export function uploadActor(ports: ConsoleActorPorts): ActorDefinition<ConsoleCommand, typeof uploadMachine, NewConsoleEvent> {
  return {
    aggregateType: AGG.upload,
    machine: uploadMachine,
    snapshotVersion: 2,
    freshOnFirstDelivery: true,
    // the status route reads the job's last commit from the log (gateway/console/service.ts uploadView)
    noFinalSnapshot: true,
    // Pure: the time comes with the command (stamped by the gateway that issued it), so a redelivery decides the same.
    decide: (snapshot, command) =>
      command.type === CMD.uploadStart && snapshot.value === "none"
        ? [consoleEvent(EV.uploadQueued, command.data), consoleEvent(EV.uploadStarted, { started_at: command.issued_at })]
        : [],
    effects: {
      commit: ({ context }) =>
        Effect.gen(function* () {
          const u = context.upload!;
          // One read-model query: the bucket's state and the space's quota. The stored object itself is not asked
          // for again: the command carries the blob store's own answer to the upload (size, blob id, MD5), and the
          // listener publishes it only after that answer — a second request cost the blob store a lookup per upload.
          // The bucket's state is the read model's: a bucket delete answers only once the read model shows it
          // deleting, and a job that read the bucket's last commit could as well have read it just before the delete.
          const r = yield* Effect.tryPromise({
            try: () => ports.db.query<{ storage_used: string; storage_cap: string; bucket_state: BucketState | null }>(prepared(COMMIT_CHECKS, [u.space_id, u.bucket_id])),
            catch: transientOf("commit checks"),
          });
          const row = r.rows[0];
          // a read model being rebuilt (memrelay replay): checked again once it has the space and the bucket
          if (!row || row.bucket_state === null) return yield* Effect.fail(new Transient("the console read model does not have the bucket yet"));
          // What was seen, not what follows from it: the machine's guards decide (upload.machine.ts rejectionOf).
          return [consoleEvent(EV.uploadChecksSeen, { bucket_state: row.bucket_state, storage_used: Number(row.storage_used), storage_cap: Number(row.storage_cap), seen_at: ports.clog.clock.now() })];
        }),
      complete: ({ context }) => {
        const u = context.upload!;
        return Effect.succeed([consoleEvent(EV.uploadCompleted, { storage_object_id: storageObjectId(u), completed_at: context.checked_at!, bucket_id: u.bucket_id, space_id: u.space_id, size: u.size })]);
      },
      reject: ({ context }) => Effect.succeed([consoleEvent(EV.uploadFailed, { ...context.rejection!, failed_at: context.checked_at! })]),
      cleanup: ({ context, aggregateId }) =>
        Effect.tryPromise({
          try: async () => {
            const u = context.upload!;
            await ports.storage.remove(u.storage_bucket_name, u.storage_key).catch((err) => {
              if ((err as { transient?: boolean }).transient) throw err;
            });
            await ports.clog.release(u.name_claim, aggregateId);
          },
          catch: (e) => new Transient(`cleanup: ${(e as Error).message}`),
        }).pipe(Effect.map(() => [consoleEvent(EV.uploadCleaned, { cleaned_at: ports.clog.clock.now() })])),
    },
  };
}
