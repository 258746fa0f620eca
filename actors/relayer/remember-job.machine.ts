// The remember job's lifecycle (spec: pending, running, uploaded, done, failed). Machine events are the job's
// domain events; states name the effect the host runs next (`meta.effect`). No timers: the host drives retries.
// Effects report what happened (an attempt failed, the blob is stored, the memory is indexed); the machine's guard
// decides when the wallet attempts are used up, and the job then gives up (`fail` records the failure).
import { assign, setup } from "xstate";
import { JOB_EVENTS, MAX_WALLET_ATTEMPTS, type JobEventData } from "../../schemas/relayer/remember-job.ts";
import type { MachineEventOf } from "../../schemas/envelope.ts";

export interface JobContext {
  owner: string;
  namespace: string;
  attempts: number;
  blob_id?: string;
  object_id?: string;
  size?: number;
  /** The embedding between upload and indexing, in its event form (schemas/vector-wire.ts). */
  vector_f32?: string;
  error?: string;
}

/** Whether a job that has failed `attempts` wallet attempts may try another wallet (spec: 5 wallets round-robin). */
export const mayAttemptAgain = (attempts: number): boolean => attempts < MAX_WALLET_ATTEMPTS;

/** A failed wallet attempt: counted; the last one allowed moves the job to giving up. */
const attemptFailed = [
  { guard: "lastAttempt", target: "giving_up", actions: "countAttempt" },
  { actions: "countAttempt" },
] as const;

export const rememberJobMachine = setup({
  types: { context: {} as JobContext, events: {} as MachineEventOf<JobEventData> },
  guards: {
    lastAttempt: ({ context, event }) => event.type === JOB_EVENTS.uploadAttemptFailed && !mayAttemptAgain(context.attempts + 1),
  },
  actions: {
    countAttempt: assign(({ context, event }) => (event.type === JOB_EVENTS.uploadAttemptFailed ? { attempts: context.attempts + 1, error: event.data.error } : {})),
  },
}).createMachine({
  id: "remember-job",
  initial: "pending",
  context: { owner: "", namespace: "default", attempts: 0 },
  states: {
    pending: {
      on: {
        [JOB_EVENTS.accepted]: {
          target: "running",
          actions: assign(({ event }) => ({ owner: event.data.owner, namespace: event.data.namespace })),
        },
      },
    },
    running: {
      meta: { effect: "store" },
      on: {
        [JOB_EVENTS.uploadAttemptFailed]: attemptFailed,
        [JOB_EVENTS.uploaded]: {
          target: "uploaded",
          actions: assign(({ event }) => ({ blob_id: event.data.blob_id, size: event.data.size, vector_f32: event.data.vector_f32 })),
        },
        [JOB_EVENTS.failed]: { target: "failed", actions: assign(({ event }) => ({ error: event.data.error })) },
      },
    },
    uploaded: {
      // The blob id is committed before the chain record, so a crash never records two blobs for one job.
      meta: { effect: "record", durableBefore: true },
      on: {
        [JOB_EVENTS.uploadAttemptFailed]: attemptFailed,
        // The vector is only needed until it is indexed; the event log keeps it for replay.
        [JOB_EVENTS.indexed]: { target: "done", actions: assign(({ event }) => ({ object_id: event.data.object_id, vector_f32: undefined })) },
        [JOB_EVENTS.failed]: { target: "failed", actions: assign(({ event }) => ({ error: event.data.error })) },
      },
    },
    // The attempts are used up: `fail` records the failure with the last attempt's error.
    giving_up: {
      meta: { effect: "fail" },
      on: { [JOB_EVENTS.failed]: { target: "failed", actions: assign(({ event }) => ({ error: event.data.error })) } },
    },
    done: { type: "final" },
    failed: { type: "final" },
  },
});
