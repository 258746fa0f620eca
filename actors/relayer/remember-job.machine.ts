// The remember job's lifecycle (spec: pending, running, uploaded, done, failed). Machine events are the job's
// domain events; states name the effect the host runs next (`meta.effect`). No timers: the host drives retries.
import { assign, setup } from "xstate";
import { JOB_EVENTS, type JobEventData } from "../../schemas/relayer/remember-job.ts";
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

export const rememberJobMachine = setup({
  types: { context: {} as JobContext, events: {} as MachineEventOf<JobEventData> },
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
        [JOB_EVENTS.uploadAttemptFailed]: {
          actions: assign(({ context, event }) => ({ attempts: context.attempts + 1, error: event.data.error })),
        },
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
        [JOB_EVENTS.uploadAttemptFailed]: {
          actions: assign(({ context, event }) => ({ attempts: context.attempts + 1, error: event.data.error })),
        },
        // The vector is only needed until it is indexed; the event log keeps it for replay.
        [JOB_EVENTS.indexed]: { target: "done", actions: assign(({ event }) => ({ object_id: event.data.object_id, vector_f32: undefined })) },
        [JOB_EVENTS.failed]: { target: "failed", actions: assign(({ event }) => ({ error: event.data.error })) },
      },
    },
    done: { type: "final" },
    failed: { type: "final" },
  },
});
