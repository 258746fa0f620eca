// API key lifecycle (spec/console.md, Authentication; issue 5: registering, active, revoking, revoked). Minting
// records the key (its hash only) as registering; the `register` effect checks the owner and activates it.
// Revocation passes through revoking while the `revoke` effect runs. No timers: the host drives retries.
import { assign, setup } from "xstate";
import { EV, type KeyMinted, type ConsoleEventData } from "../../schemas/console/events.ts";
import type { MachineEventOf } from "../../schemas/envelope.ts";

export interface KeyContext {
  key?: KeyMinted;
  reason?: string;
}

type KeyEvent = MachineEventOf<Pick<ConsoleEventData, typeof EV.keyMinted | typeof EV.keyActivated | typeof EV.keyRejected | typeof EV.keyRevokeRequested | typeof EV.keyRevoked>>;

export const keyMachine = setup({ types: { context: {} as KeyContext, events: {} as KeyEvent } }).createMachine({
  id: "console-key",
  initial: "none",
  context: {},
  states: {
    none: { on: { [EV.keyMinted]: { target: "registering", actions: assign(({ event }) => ({ key: event.data })) } } },
    registering: {
      // Recorded before the effect runs: a key is observably registering until its owner checks out.
      meta: { effect: "register", durableBefore: true },
      on: {
        [EV.keyActivated]: "active",
        [EV.keyRejected]: { target: "rejected", actions: assign(({ event }) => ({ reason: event.data.reason })) },
        [EV.keyRevokeRequested]: "revoking",
      },
    },
    active: { on: { [EV.keyRevokeRequested]: "revoking" } },
    revoking: { meta: { effect: "revoke", durableBefore: true }, on: { [EV.keyRevoked]: "revoked" } },
    revoked: { type: "final" },
    rejected: { type: "final" },
  },
});
