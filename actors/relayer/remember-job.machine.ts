// The remember job's lifecycle (spec: pending, running, uploaded, done, failed). Machine events are the job's
// domain events; states name the effect the host runs next (`meta.effect`). No timers: the host drives retries.
// In quilt mode a job records its ciphertext (`encrypted`) and the quilt it joins (`joined`) before the quilt writer
// takes it: after a crash it finds that quilt again and never encrypts or joins a second one while the first holds
// it (actors/relayer/remember-job.quilts.ts). Both states read as running to the owner (schemas/relayer/job-view.ts).
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
  embedder?: string;
  /** The recorded ciphertext (base64) until it is stored: a quilt rebuilt or joined again takes these exact bytes. */
  ciphertext?: string;
  /** Key of the quilt the job joined (quilt mode). */
  quilt?: string;
  error?: string;
}

/** Whether a job that has failed `attempts` wallet attempts may try another wallet (spec: 5 wallets round-robin). */
export const mayAttemptAgain = (attempts: number): boolean => attempts < MAX_WALLET_ATTEMPTS;

/** A failed wallet attempt: counted; the last one allowed moves the job to giving up. */
const attemptFailed = [
  { guard: "lastAttempt", target: "giving_up", actions: "countAttempt" },
  { actions: "countAttempt" },
] as const;

/** The ciphertext is stored (a blob, or a quilt patch): what recording on chain needs next. */
const uploaded = { target: "uploaded", actions: "recordUpload" } as const;
const failed = { target: "failed", actions: "recordFailure" } as const;

export const rememberJobMachine = setup({
  types: { context: {} as JobContext, events: {} as MachineEventOf<JobEventData> },
  guards: {
    lastAttempt: ({ context, event }) => event.type === JOB_EVENTS.uploadAttemptFailed && !mayAttemptAgain(context.attempts + 1),
  },
  actions: {
    countAttempt: assign(({ context, event }) => (event.type === JOB_EVENTS.uploadAttemptFailed ? { attempts: context.attempts + 1, error: event.data.error } : {})),
    // The recorded ciphertext is no longer needed once stored; the event log keeps it.
    recordUpload: assign(({ event }) =>
      event.type === JOB_EVENTS.uploaded ? { blob_id: event.data.blob_id, size: event.data.size, vector_f32: event.data.vector_f32, ciphertext: undefined, quilt: undefined } : {},
    ),
    recordFailure: assign(({ event }) => (event.type === JOB_EVENTS.failed ? { error: event.data.error } : {})),
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
        [JOB_EVENTS.encrypted]: {
          target: "encrypted",
          actions: assign(({ event }) => ({ ciphertext: event.data.ciphertext, size: event.data.size, vector_f32: event.data.vector_f32, embedder: event.data.embedder })),
        },
        [JOB_EVENTS.uploaded]: uploaded,
        [JOB_EVENTS.failed]: failed,
      },
    },
    // The ciphertext is recorded: it joins a quilt (or, in blob mode, is stored as its own blob).
    encrypted: {
      meta: { effect: "gather", durableBefore: true },
      on: {
        [JOB_EVENTS.uploadAttemptFailed]: attemptFailed,
        [JOB_EVENTS.quiltJoined]: { target: "joined", actions: assign(({ event }) => ({ quilt: event.data.quilt })) },
        [JOB_EVENTS.uploaded]: uploaded,
        [JOB_EVENTS.failed]: failed,
      },
    },
    // The quilt it joined is recorded before the writer takes it: the job waits for that quilt, or finds its fate.
    joined: {
      meta: { effect: "quilt", durableBefore: true, waitsOnly: true },
      on: {
        [JOB_EVENTS.uploadAttemptFailed]: attemptFailed,
        [JOB_EVENTS.quiltLeft]: { target: "encrypted", actions: assign({ quilt: undefined }) },
        [JOB_EVENTS.uploaded]: uploaded,
        [JOB_EVENTS.failed]: failed,
      },
    },
    uploaded: {
      // The blob id is committed before the chain record, so a crash never records two blobs for one job.
      meta: { effect: "record", durableBefore: true, waitsOnly: true },
      on: {
        [JOB_EVENTS.uploadAttemptFailed]: attemptFailed,
        // The vector is only needed until it is indexed; the event log keeps it for replay.
        [JOB_EVENTS.indexed]: { target: "done", actions: assign(({ event }) => ({ object_id: event.data.object_id, vector_f32: undefined })) },
        [JOB_EVENTS.failed]: failed,
      },
    },
    // The attempts are used up: `fail` records the failure with the last attempt's error.
    giving_up: {
      meta: { effect: "fail" },
      on: { [JOB_EVENTS.failed]: failed },
    },
    done: { type: "final" },
    failed: { type: "final" },
  },
});
