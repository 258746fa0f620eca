// Wires the key machine to its effects: `register` checks that the owner exists and, for a key limited to one
// space, is a member of it; `revoke` records the revocation (authentication reads the key's state from the event
// log on every request, so it takes effect at once).
import { Effect } from "effect";
import type { ActorDefinition } from "../host.ts";
import { Transient } from "../host.ts";
import type { CommandEnvelope } from "../../schemas/envelope.ts";
import { AGG, CMD, EV, type KeyMinted, type KeyRevokeCommandData, type SpaceState, consoleEvent, type NewConsoleEvent } from "../../schemas/console/events.ts";
import { keyMachine } from "./key.machine.ts";
import type { ConsoleActorPorts } from "./ports.ts";

export function keyActor(ports: Pick<ConsoleActorPorts, "clog">): ActorDefinition<CommandEnvelope, typeof keyMachine, NewConsoleEvent> {
  return {
    aggregateType: AGG.key,
    machine: keyMachine,
    snapshotVersion: 1,
    freshOnFirstDelivery: false,
    decide: (snapshot, command) => {
      const state = snapshot.value as string;
      if (command.type === CMD.keyMint && state === "none") return [consoleEvent(EV.keyMinted, command.data as KeyMinted)];
      if (command.type === CMD.keyRevoke && (state === "registering" || state === "active")) return [consoleEvent(EV.keyRevokeRequested, command.data as KeyRevokeCommandData)];
      return [];
    },
    effects: {
      register: ({ context }) =>
        Effect.gen(function* () {
          const key = context.key!;
          const [user, space] = yield* Effect.tryPromise({
            try: () => Promise.all([ports.clog.lastEvent(AGG.user, key.user_id), key.space_id ? ports.clog.lastEvent(AGG.space, key.space_id) : Promise.resolve(null)]),
            catch: (e) => new Transient(`directory unavailable: ${(e as Error).message}`),
          });
          if (!user) return [consoleEvent(EV.keyRejected, { reason: "unknown user" })];
          if (key.space_id) {
            const s = space?.data as SpaceState | undefined;
            if (!s || !s.members.some((m) => m.user_id === key.user_id)) return [consoleEvent(EV.keyRejected, { reason: "the user is not a member of the key's space" })];
          }
          return [consoleEvent(EV.keyActivated, { activated_at: new Date().toISOString() })];
        }),
      revoke: () => Effect.succeed([consoleEvent(EV.keyRevoked, { revoked_at: new Date().toISOString() })]),
    },
  };
}
