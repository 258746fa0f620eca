// A sponsored access-policy transaction (spec/console.md, sponsor routes): reserved (bytes handed to the client,
// expiring) → execute with the client's signature → executing (co-signed by the sponsor, submitted) → executed,
// or back to reserved when the chain refuses it; an execute after expiry ends it as expired.
import { assign, setup } from "xstate";
import { EV, type SponsorFailed, type SponsorReserved, type ConsoleEventData } from "../../schemas/console/events.ts";
import type { MachineEventOf } from "../../schemas/envelope.ts";

export interface SponsorContext {
  reservation?: SponsorReserved;
  chain_digest?: string;
  last_error?: SponsorFailed;
}

type SponsorEvent = MachineEventOf<Pick<ConsoleEventData, typeof EV.sponsorReserved | typeof EV.sponsorExecuteRequested | typeof EV.sponsorExecuted | typeof EV.sponsorFailed | typeof EV.sponsorExpired>>;

export const sponsorMachine = setup({ types: { context: {} as SponsorContext, events: {} as SponsorEvent } }).createMachine({
  id: "console-sponsor",
  initial: "none",
  context: {},
  states: {
    none: { on: { [EV.sponsorReserved]: { target: "reserved", actions: assign(({ event }) => ({ reservation: event.data })) } } },
    reserved: { on: { [EV.sponsorExecuteRequested]: "executing", [EV.sponsorExpired]: "expired" } },
    executing: {
      meta: { effect: "execute" },
      on: {
        [EV.sponsorExecuted]: { target: "executed", actions: assign(({ event }) => ({ chain_digest: event.data.chain_digest })) },
        [EV.sponsorFailed]: { target: "reserved", actions: assign(({ event }) => ({ last_error: event.data })) },
      },
    },
    executed: { type: "final" },
    expired: { type: "final" },
  },
});
