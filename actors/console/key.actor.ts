// Wires the key machine to its effects: `register` checks that the owner exists and, for a key limited to one
// space, is a member of it; `revoke` records the revocation (authentication reads the key's state from the event
// log on every request, so it takes effect at once).
import { Effect } from "effect";
import type { ActorDefinition } from "../host.ts";
import { Transient } from "../host.ts";
import { AGG, CMD, EV, consoleEvent, type NewConsoleEvent } from "../../schemas/console/events.ts";
import type { ConsoleCommand } from "../../schemas/console/commands.ts";
import { keyMachine } from "./key.machine.ts";
import { SPACE, USER } from "./deciders.ts";
import type { ConsoleActorPorts } from "./ports.ts";

export function keyActor(ports: Pick<ConsoleActorPorts, "clog">): ActorDefinition<ConsoleCommand, typeof keyMachine, NewConsoleEvent> {
  return {
    aggregateType: AGG.key,
    machine: keyMachine,
    snapshotVersion: 1,
    freshOnFirstDelivery: false,
    decide: (snapshot, command) => {
      const state = snapshot.value as string;
      if (command.type === CMD.keyMint && state === "none") return [consoleEvent(EV.keyMinted, command.data)];
      if (command.type === CMD.keyRevoke && (state === "registering" || state === "active")) return [consoleEvent(EV.keyRevokeRequested, command.data)];
      return [];
    },
    effects: {
      register: ({ context, command }) =>
        Effect.gen(function* () {
          const key = context.key!;
          const [user, space] = yield* Effect.tryPromise({
            try: () => Promise.all([ports.clog.aggregates.read(`${AGG.user}.${key.user_id}`, USER), key.space_id ? ports.clog.aggregates.read(`${AGG.space}.${key.space_id}`, SPACE) : null]),
            catch: (e) => new Transient(`directory unavailable: ${(e as Error).message}`),
          });
          if (!user.state) return [consoleEvent(EV.keyRejected, { reason: "unknown user" })];
          if (key.space_id) {
            const s = space?.state;
            if (!s || !s.members.some((m) => m.user_id === key.user_id)) return [consoleEvent(EV.keyRejected, { reason: "the user is not a member of the key's space" })];
          }
          return [consoleEvent(EV.keyActivated, { activated_at: command.issued_at })];
        }),
      revoke: ({ command }) => Effect.succeed([consoleEvent(EV.keyRevoked, { revoked_at: command.issued_at })]),
    },
  };
}
