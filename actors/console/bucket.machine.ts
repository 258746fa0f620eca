// Bucket lifecycle (spec/console.md, States: private bucket). Public: created → provisioning → active. Private:
// reserved → pending_policy (transaction bytes handed to the client, no uploads) → finalize with the client's
// signature → finalizing (the policy transaction executes on chain) → provisioning → active. Both: active →
// deleting (storage released) → deleted. States name the effect the host runs next.
import { assign, setup } from "xstate";
import { EV, type BucketCreated, type BucketFinalizeFailed, type ConsoleEventData } from "../../schemas/console/events.ts";
import type { MachineEventOf } from "../../schemas/envelope.ts";

export interface BucketContext {
  bucket?: BucketCreated;
  tx_bytes?: string;
  digest?: string;
  sender?: string;
  name?: string;
  name_claim?: string;
  policy_id?: string | null;
  chain_digest?: string;
  last_error?: BucketFinalizeFailed;
}

type BucketEvent = MachineEventOf<Pick<ConsoleEventData, typeof EV.bucketCreated | typeof EV.bucketReserved | typeof EV.bucketFinalizeRequested | typeof EV.bucketFinalizeFailed | typeof EV.bucketPolicyCreated | typeof EV.bucketActivated | typeof EV.bucketUpdated | typeof EV.bucketDeleteRequested | typeof EV.bucketDeleted>>;

export const bucketMachine = setup({ types: { context: {} as BucketContext, events: {} as BucketEvent } }).createMachine({
  id: "console-bucket",
  initial: "none",
  context: {},
  states: {
    none: {
      on: {
        [EV.bucketCreated]: { target: "provisioning", actions: assign(({ event }) => ({ bucket: event.data, name: event.data.name, name_claim: event.data.name_claim, policy_id: null })) },
        [EV.bucketReserved]: {
          target: "pending_policy",
          actions: assign(({ event }) => ({
            bucket: event.data,
            name: event.data.name,
            name_claim: event.data.name_claim,
            tx_bytes: event.data.tx_bytes,
            digest: event.data.digest,
            sender: event.data.sender,
            policy_id: null,
          })),
        },
      },
    },
    pending_policy: {
      on: {
        [EV.bucketFinalizeRequested]: "finalizing",
        [EV.bucketDeleteRequested]: "deleting",
      },
    },
    finalizing: {
      meta: { effect: "execute_policy" },
      on: {
        [EV.bucketPolicyCreated]: { target: "provisioning", actions: assign(({ event }) => ({ policy_id: event.data.policy_id, chain_digest: event.data.chain_digest })) },
        [EV.bucketFinalizeFailed]: { target: "pending_policy", actions: assign(({ event }) => ({ last_error: event.data })) },
      },
    },
    provisioning: { meta: { effect: "provision" }, on: { [EV.bucketActivated]: "active" } },
    active: {
      on: {
        [EV.bucketUpdated]: {
          actions: assign(({ context, event }) => ({
            name: event.data.name ?? context.name,
            name_claim: event.data.name_claim ?? context.name_claim,
            policy_id: event.data.encryption_policy_id === undefined ? context.policy_id : event.data.encryption_policy_id,
          })),
        },
        [EV.bucketDeleteRequested]: "deleting",
      },
    },
    deleting: { meta: { effect: "deprovision", durableBefore: true }, on: { [EV.bucketDeleted]: "deleted" } },
    deleted: { type: "final" },
  },
});
