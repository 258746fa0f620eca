// An API key's decisions, pure, in the shape of the console directory's deciders (deciders.ts): the key's state (its
// machine, key.machine.ts, folded over its events) and a command or the directory's facts in, the events to append
// out. The key actor (key.actor.ts) decides with these; test/console-key-decider.test.ts specifies them as given
// events / when / then events.
import { accept, type Decision, type Fold } from "../../eventlog/aggregate-store.ts";
import { CMD, EV, consoleEvent, type ConsoleMachineEvent, type KeyMinted, type NewConsoleEvent, type SpaceState, type UserState } from "../../schemas/console/events.ts";
import type { ConsoleCommand } from "../../schemas/console/commands.ts";
import { initialSnapshot, step, type SnapshotOf } from "../machine-steps.ts";
import { keyMachine } from "./key.machine.ts";

export type KeySnapshot = SnapshotOf<typeof keyMachine>;

/** A key's state: its machine after its events. */
export const KEY: Fold<KeySnapshot, ConsoleMachineEvent> = { initial: initialSnapshot(keyMachine), evolve: (s, e) => step(keyMachine, s, e) };

/** The events a command produces in the key's state: minted once; a revocation while registering or active; else none. */
export function keyEvents(s: KeySnapshot, command: ConsoleCommand): NewConsoleEvent[] {
  if (command.type === CMD.keyMint && s.value === "none") return [consoleEvent(EV.keyMinted, command.data)];
  if (command.type === CMD.keyRevoke && (s.value === "registering" || s.value === "active")) return [consoleEvent(EV.keyRevokeRequested, command.data)];
  return [];
}

export const decideKey =
  (command: ConsoleCommand) =>
  (s: KeySnapshot): Decision<null, never> =>
    accept(null, keyEvents(s, command));

/** What the directory says of a key's owner when it registers (read by the `register` effect). */
export interface OwnerFacts {
  readonly user: UserState | null;
  /** The key's space, when the key is limited to one (null: no such space or no limit). */
  readonly space: SpaceState | null;
  /** When the facts were read (the actor's clock). */
  readonly at: string;
}

/** A registering key is activated when its owner exists and, for a key limited to a space, is a member of it. */
export function registration(key: KeyMinted, facts: OwnerFacts): NewConsoleEvent {
  if (!facts.user) return consoleEvent(EV.keyRejected, { reason: "unknown user" });
  if (key.space_id && !facts.space?.members.some((m) => m.user_id === key.user_id)) return consoleEvent(EV.keyRejected, { reason: "the user is not a member of the key's space" });
  return consoleEvent(EV.keyActivated, { activated_at: facts.at });
}

export const register =
  (facts: OwnerFacts) =>
  (s: KeySnapshot): Decision<null, never> =>
    accept(null, s.value === "registering" && s.context.key ? [registration(s.context.key, facts)] : []);
