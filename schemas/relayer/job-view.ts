// The remember job as its owner sees it (GET /api/remember/:id), worked out in one place: `evolveJob` folds the job's
// events into its state (like Emmett's `evolve` for a read model), and `visibleStatus` says what a state reads as
// while the recall indexes catch up. The job-status projection, the lookup's fallback to the event log and any other
// reader use these two, so the job's lifecycle is not worked out again elsewhere. Pure.
import { JOB_EVENTS, type JobStatus } from "./remember-job.ts";
import type { IndexLogEvent } from "./memory-maintenance.ts";

export interface JobView {
  readonly job_id: string;
  readonly status: JobStatus;
  readonly owner: string;
  readonly namespace: string;
  readonly blob_id?: string;
  readonly error?: string;
}

/** What a job's events tell of it. `owner` is unknown until an event names it (accepted, indexed, an early failure). */
export interface JobState {
  readonly status: JobStatus;
  readonly owner?: string;
  readonly namespace?: string;
  readonly blob_id?: string;
  readonly error?: string;
  /** Stream sequence of the commit that indexed the job: recallable once the recall indexes have applied it. */
  readonly done_seq?: number;
}

/** A job no event has been folded into yet: its command was accepted, so it is running. */
export const INITIAL_JOB: JobState = { status: "running" };

/**
 * The job's state after `event`, committed at stream sequence `seq`. Events that change nothing the owner sees
 * (a wallet attempt that failed, events of other aggregates on the subject family) return `state` itself, so a
 * caller can tell that nothing changed.
 */
export function evolveJob(state: JobState, e: IndexLogEvent, seq: number): JobState {
  switch (e.type) {
    case JOB_EVENTS.accepted:
      return { ...state, status: "running", owner: e.data.owner, namespace: e.data.namespace };
    case JOB_EVENTS.uploaded:
      return { ...state, status: "uploaded", blob_id: e.data.blob_id };
    case JOB_EVENTS.indexed:
      // Owner, namespace and blob id came with `accepted` and `uploaded`, earlier in the same log: not written again.
      return { ...state, status: "done", done_seq: seq };
    case JOB_EVENTS.failed:
      // A command set aside before `job.accepted` carries the owner, so the owner can still poll the failure.
      return { ...state, status: "failed", error: e.data.error, ...(e.data.owner ? { owner: e.data.owner, namespace: e.data.namespace ?? "default" } : {}) };
    default:
      return state;
  }
}

/** Folds a job's events, in log order. */
export function foldJob(events: readonly { readonly seq: number; readonly event: IndexLogEvent }[], from: JobState = INITIAL_JOB): JobState {
  return events.reduce((s, { event, seq }) => evolveJob(s, event, seq), from);
}

/**
 * Done means recallable: a job whose indexing commit the recall indexes have not all applied yet (their lowest
 * checkpoint is below `done_seq`) still reads uploaded; one whose commit an index set aside will never be
 * recallable, and reads failed with the reason.
 */
export function visibleStatus(state: JobState, recallCheckpoint: number, setAsideBy?: string): JobStatus {
  if (setAsideBy !== undefined) return "failed";
  if (state.status === "done" && (state.done_seq ?? 0) > recallCheckpoint) return "uploaded";
  return state.status;
}

/** The view an owner is answered with: no error unless failed, no blob id before there is one. */
export function jobView(jobId: string, state: JobState & { readonly owner: string }, status: JobStatus = state.status, error = state.error): JobView {
  return {
    job_id: jobId,
    status,
    owner: state.owner,
    namespace: state.namespace ?? "default",
    ...(state.blob_id ? { blob_id: state.blob_id } : {}),
    ...(status === "failed" && error ? { error } : {}),
  };
}
