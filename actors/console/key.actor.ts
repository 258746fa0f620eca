// Wires the key machine to its decisions (key.decider.ts) and effects: `register` reads the owner and the key's space
// from the directory and records what key.decider.ts `registration` makes of them; `revoke` records the revocation (authentication reads the key's state from the event
// log on every request, so it takes effect at once).
import { Effect } from "effect";
import type { ActorDefinition } from "../host.ts";
import { Transient } from "../host.ts";
import { AGG, EV, consoleEvent, type NewConsoleEvent } from "../../schemas/console/events.ts";
import type { ConsoleCommand } from "../../schemas/console/commands.ts";
import { keyMachine } from "./key.machine.ts";
import { SPACE, USER } from "./deciders.ts";
import { keyEvents, registration } from "./key.decider.ts";
import type { ConsoleActorPorts } from "./ports.ts";

export function keyActor(ports: Pick<ConsoleActorPorts, "clog">): ActorDefinition<ConsoleCommand, typeof keyMachine, NewConsoleEvent> {
  return {
    aggregateType: AGG.key,
    machine: keyMachine,
    snapshotVersion: 1,
    freshOnFirstDelivery: false,
    decide: keyEvents,
    effects: {
      register: ({ context }) =>
        Effect.gen(function* () {
          const key = context.key!;
          const [user, space] = yield* Effect.tryPromise({
            try: () => Promise.all([ports.clog.aggregates.read(`${AGG.user}.${key.user_id}`, USER), key.space_id ? ports.clog.aggregates.read(`${AGG.space}.${key.space_id}`, SPACE) : null]),
            catch: (e) => new Transient(`directory unavailable: ${(e as Error).message}`),
          });
          return [registration(key, { user: user.state, space: space?.state ?? null, at: ports.clog.clock.now() })];
        }),
      revoke: () => Effect.sync(() => [consoleEvent(EV.keyRevoked, { revoked_at: ports.clog.clock.now() })]),
    },
  };
}
