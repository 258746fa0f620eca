// An upload's progress as the file routes show it (upload_state, progress, error, storage object, finish time),
// worked out in one place: the console projection applies it to its file rows, and the status route's fallback
// (an upload the read model does not have yet) folds the job's events with it. Pure.
import { EV, type ConsoleEvent, type UploadFailed, type UploadState } from "./events.ts";

export interface UploadProgress {
  readonly upload_state: UploadState;
  readonly upload_progress: number | null;
  readonly upload_error: UploadFailed | null;
  readonly storage_object_id: string | null;
  readonly upload_finished_at: string | null;
}

/** What `event` changes of an upload's progress; undefined for events that are not an upload's. */
export function uploadChange(event: ConsoleEvent): Partial<UploadProgress> | undefined {
  switch (event.type) {
    case EV.uploadQueued:
      return { upload_state: "queued", upload_progress: 0 };
    case EV.uploadStarted:
      return { upload_state: "active" };
    case EV.uploadCompleted:
      return { upload_state: "completed", upload_progress: 1, storage_object_id: event.data.storage_object_id, upload_finished_at: event.data.completed_at };
    // A failed upload reads failed once its cleanup removed the bytes and released the name (upload.machine.ts
    // `failing`): a client that sees failed may upload the same name again, or delete the file, at once.
    case EV.uploadFailed:
      return { upload_error: event.data, upload_finished_at: event.data.failed_at };
    case EV.uploadCleaned:
      return { upload_state: "failed" };
    default:
      return undefined;
  }
}

/** A queued upload nothing has happened to yet. */
export const QUEUED_UPLOAD: UploadProgress = { upload_state: "queued", upload_progress: 0, upload_error: null, storage_object_id: null, upload_finished_at: null };

/** Folds an upload's events, in log order. */
export function foldUpload(events: readonly ConsoleEvent[], from: UploadProgress = QUEUED_UPLOAD): UploadProgress {
  return events.reduce((s, e) => ({ ...s, ...uploadChange(e) }), from);
}
