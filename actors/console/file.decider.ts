// A file request's decisions, pure (like bucket.decider.ts): the file or the space's quota as the read model shows
// them in, the verdict or a ConsoleError out.
import { accept, reject, type Decision } from "../../eventlog/aggregate-store.ts";
import type { ConsoleError } from "./errors.ts";

/** `already`: a delete under way or done answers as done. */
export type FileDeletion = { readonly already: boolean };

/** A file still uploading cannot be deleted yet (its upload job owns the bytes); deleting twice is deleting once. */
export function deleteFile(file: { readonly status: string }): Decision<FileDeletion, ConsoleError> {
  if (file.status === "deleting" || file.status === "deleted") return accept({ already: true });
  if (file.status === "uploading") return reject({ code: "file_uploading" });
  return accept({ already: false });
}

/** A file's bytes are read once its upload completed, and not while or after it is deleted. */
export function downloadable(file: { readonly status: string; readonly upload_state: string }): Decision<null, ConsoleError> {
  if (file.status === "deleting" || file.status === "deleted") return reject({ code: "file_locked", status: file.status });
  if (file.status !== "completed") return reject({ code: "upload_not_completed", uploadState: file.upload_state });
  return accept(null);
}

/** A space's storage as the read model shows it: bytes stored, bytes of uploads under way, the cap. */
export interface QuotaFacts {
  readonly used: number;
  readonly inFlight: number;
  readonly cap: number;
}

/**
 * An upload of at most `size` bytes is admitted while it fits the space's quota beside the uploads under way (the
 * upload's own checks, upload.machine.ts, decide again against the stored bytes).
 */
export function admitUpload(quota: QuotaFacts, size: number): Decision<null, ConsoleError> {
  return quota.used + quota.inFlight + size > quota.cap ? reject({ code: "quota_exceeded", cap: quota.cap }) : accept(null);
}
