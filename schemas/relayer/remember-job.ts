// Commands and events of the remember-job aggregate (`job.<job_id>`). Events carry ids, vectors, keyed term hashes,
// sizes and states — never the memory text. The start command carries the text and lives only on the CMD work queue.
import { eventsOf, type EventOf, type NewEventOf } from "../envelope.ts";
import type { LexicalTerms } from "./lexical.ts";

export const JOB = "job";

export type JobStatus = "pending" | "running" | "uploaded" | "done" | "failed";

export interface RememberCommandData {
  readonly owner: string;
  readonly namespace: string;
  readonly text: string;
  readonly importance: number;
  readonly accepted_at: string;
  /** Index of the item in its bulk request (absent for a single remember): the submission order within one call. */
  readonly position?: number;
}

export type RememberCommand = {
  readonly type: "remember.start";
  readonly version: 1;
  readonly id: string;
  readonly aggregate: string;
  readonly issued_at: string;
  readonly correlation_id: string;
  readonly data: RememberCommandData;
};

export interface JobAccepted { readonly owner: string; readonly namespace: string; readonly accepted_at: string; readonly text_bytes: number }
export interface JobUploadAttemptFailed { readonly attempt: number; readonly wallet: string; readonly error: string }
/**
 * Version of `job.uploaded` and `job.indexed` as written now. 2: the vector as `vector_f32` (schemas/vector-wire.ts);
 * version-1 events (`vector` as JSON numbers) are upcast when read (schemas/upcasters.ts).
 */
export const JOB_VECTOR_EVENT_VERSION = 2;

export interface JobUploaded {
  readonly blob_id: string;
  readonly size: number;
  /** Little-endian float32, base64 (schemas/vector-wire.ts). */
  readonly vector_f32: string;
  readonly embedder: string;
}
export interface JobIndexed {
  readonly object_id: string;
  readonly wallet: string;
  readonly owner: string;
  readonly namespace: string;
  readonly blob_id: string;
  /** Little-endian float32, base64 (schemas/vector-wire.ts). */
  readonly vector_f32: string;
  readonly importance: number;
  readonly size: number;
  readonly created_at: string;
  /** Keyed term hashes of the text for the lexical index (absent when the relayer runs without a lexical key). */
  readonly lexical?: LexicalTerms;
  /** Name of the embedder that made the vector (absent in events before embedder changes were tracked). */
  readonly embedder?: string;
  /** Submission order (schemas/relayer/lexical.ts SubmissionOrder): when the remember was accepted, and its bulk position. */
  readonly submitted_at?: string;
  readonly position?: number;
}
/**
 * MEMRELAY_STORE_MODE=quilt: the memory's ciphertext and embedding, recorded before the ciphertext goes into any quilt.
 * From here on the job never encrypts again: a quilt rebuilt after a crash takes these exact bytes (schemas/relayer/quilt.ts).
 */
export interface JobEncrypted {
  /** The ciphertext (never the text), base64. */
  readonly ciphertext: string;
  readonly size: number;
  readonly vector_f32: string;
  readonly embedder: string;
}
/** The quilt (its key, `quilt.<key>`) the job asks to join; recorded before the quilt writer takes it as a member. */
export interface JobQuiltJoined { readonly quilt: string }
/** The quilt was sealed without the job or abandoned: its ciphertext is in no quilt, and it joins another. */
export interface JobQuiltLeft { readonly quilt: string; readonly reason: string }
export interface JobFailed {
  readonly error: string;
  readonly attempts: number;
  /** The command was set aside by the actor host (a defect, not the wallet attempts): its dead-letter alert says so. */
  readonly set_aside?: boolean;
  /** Carried when set aside before `job.accepted`, so the owner can still poll the failure. */
  readonly owner?: string;
  readonly namespace?: string;
}

/**
 * A job that finished in a batch the job-status read model committed, with the commit that finished it: what the
 * model announces (eventlog/subjects.ts JOB_OUTCOMES) so a long poll learns of it without a subscription of its own.
 */
export interface JobOutcome {
  readonly job_id: string;
  readonly status: "done" | "failed";
  readonly seq: number;
}

export const JOB_EVENTS = {
  accepted: "job.accepted",
  uploadAttemptFailed: "job.upload_attempt_failed",
  encrypted: "job.encrypted",
  quiltJoined: "job.quilt_joined",
  quiltLeft: "job.quilt_left",
  uploaded: "job.uploaded",
  indexed: "job.indexed",
  failed: "job.failed",
} as const;

/** The remember job's event catalogue: the data of each event type. */
export interface JobEventData {
  [JOB_EVENTS.accepted]: JobAccepted;
  [JOB_EVENTS.uploadAttemptFailed]: JobUploadAttemptFailed;
  [JOB_EVENTS.encrypted]: JobEncrypted;
  [JOB_EVENTS.quiltJoined]: JobQuiltJoined;
  [JOB_EVENTS.quiltLeft]: JobQuiltLeft;
  [JOB_EVENTS.uploaded]: JobUploaded;
  [JOB_EVENTS.indexed]: JobIndexed;
  [JOB_EVENTS.failed]: JobFailed;
}
export type JobEvent = EventOf<JobEventData>;
export type NewJobEvent = NewEventOf<JobEventData>;

/** A remember-job event at its type's current version. */
export const jobEvent = eventsOf<JobEventData>({
  [JOB_EVENTS.accepted]: 1,
  [JOB_EVENTS.uploadAttemptFailed]: 1,
  [JOB_EVENTS.encrypted]: 1,
  [JOB_EVENTS.quiltJoined]: 1,
  [JOB_EVENTS.quiltLeft]: 1,
  [JOB_EVENTS.uploaded]: JOB_VECTOR_EVENT_VERSION,
  [JOB_EVENTS.indexed]: JOB_VECTOR_EVENT_VERSION,
  [JOB_EVENTS.failed]: 1,
});

/** Wallet attempts before a job fails (spec: Events; REFERENCE: 5 wallets round-robin). */
export const MAX_WALLET_ATTEMPTS = 5;
