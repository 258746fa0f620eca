// Commands and events of the restore job (`restore.<job_id>`): re-indexing an owner's namespace from the blob objects
// on chain (spec/relayer.md, POST /api/restore). The gateway starts the job and awaits its outcome. The start command
// carries the caller's decrypt credential and therefore lives only on the CMD work queue until acknowledged, like a
// remember's text; events carry counts and states, never the credential. The rows themselves are appended as
// `memory.restored` events on the namespace's index aggregate (memory-maintenance.ts), so a replay keeps them.
import type { DecryptCredential } from "../encryption.ts";
import { eventsOf, isEventOf, type EventOf, type NewEventOf } from "../envelope.ts";

export const RESTORE = "restore";

/** Whose candidates a restore examines: the route lists the owner's objects, the operator the namespace's own. */
export type RestoreScope = "owner" | "namespace";

export interface RestoreCommandData {
  readonly owner: string;
  readonly namespace: string;
  /** Most missing blobs restored by this job. */
  readonly limit: number;
  readonly include_forgotten: boolean;
  readonly candidate_cap: number;
  readonly scope: RestoreScope;
  /** Needed only when something is missing: a restore that finds everything indexed decrypts nothing. */
  readonly credential?: DecryptCredential;
}

export type RestoreCommand = {
  readonly type: "restore.start";
  readonly version: 1;
  readonly id: string;
  readonly aggregate: string;
  readonly issued_at: string;
  readonly correlation_id: string;
  readonly data: RestoreCommandData;
};

export interface RestoreAccepted {
  readonly owner: string;
  readonly namespace: string;
  readonly limit: number;
  readonly include_forgotten: boolean;
  readonly scope: RestoreScope;
}

export interface RestoreCounts {
  readonly restored: number;
  /** Already indexed, or forgotten (created at or before the namespace's last forget). */
  readonly skipped: number;
  /** restored + skipped + failed: the namespace's blob objects the job examined. */
  readonly total: number;
  readonly truncated: boolean;
  /** Skipped because forgotten (part of `skipped`). */
  readonly forgotten: number;
  /** Gone from the blob store (404, refused), or not opened with the credential (not part of `skipped`); never a blob store outage. */
  readonly failed: number;
}

export interface RestoreCompleted extends RestoreCounts {
  /** The memory index applied the restored rows before the job ended (else they appear shortly after). */
  readonly applied: boolean;
}

export interface RestoreFailed {
  readonly error: string;
  /** HTTP status the gateway answers with: 503 for a condition that passes (the index catching up, an outage). */
  readonly status: number;
  readonly retry_after_secs?: number;
  /** Set aside by the actor host after bounded retries. */
  readonly set_aside?: boolean;
}

export const RESTORE_EVENTS = {
  accepted: "restore.accepted",
  completed: "restore.completed",
  failed: "restore.failed",
} as const;

/** The restore job's event catalogue. */
export interface RestoreEventData {
  [RESTORE_EVENTS.accepted]: RestoreAccepted;
  [RESTORE_EVENTS.completed]: RestoreCompleted;
  [RESTORE_EVENTS.failed]: RestoreFailed;
}
export type RestoreEvent = EventOf<RestoreEventData>;
export type NewRestoreEvent = NewEventOf<RestoreEventData>;

const RESTORE_EVENT_VERSIONS = { [RESTORE_EVENTS.accepted]: 1, [RESTORE_EVENTS.completed]: 1, [RESTORE_EVENTS.failed]: 1 };
/** A restore-job event at its type's current version. */
export const restoreEvent = eventsOf<RestoreEventData>(RESTORE_EVENT_VERSIONS);
export const isRestoreEvent = isEventOf<RestoreEventData>(RESTORE_EVENT_VERSIONS);
