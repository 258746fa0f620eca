// A file request's decision, pure (like bucket.decider.ts): the file as the read model shows it in, the verdict or a
// ConsoleError out.
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
