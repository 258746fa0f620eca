// How the blob store's domain errors (actors/blobstore/errors.ts) read over HTTP: the status and message each one
// answers with (spec/blobstore.md). The only place a refused command becomes an HttpError.
import { HttpError } from "../http.ts";
import type { Result } from "../../eventlog/aggregate-store.ts";
import type { BlobstoreError, PreconditionFailure } from "../../actors/blobstore/errors.ts";

const PRECONDITION: Record<PreconditionFailure, string> = {
  key_exists: "precondition failed: the key already exists (If-None-Match: *)",
  key_missing: "precondition failed: the key does not exist (If-Match)",
  etag_mismatch: "precondition failed: the current ETag does not match (If-Match)",
};

export function httpError(e: BlobstoreError): HttpError {
  switch (e.code) {
    case "bucket_exists":
      return new HttpError(409, `bucket ${e.name} already exists`);
    case "bucket_name_taken":
      return new HttpError(409, `bucket name ${e.name} is taken`);
    case "bucket_not_found":
      return new HttpError(404, `bucket ${e.name} not found`);
    case "bucket_not_empty":
      return new HttpError(409, `bucket ${e.name} is not empty (${e.blobs} blobs); delete its blobs first or pass ?force=true`);
    case "precondition_failed":
      return new HttpError(412, PRECONDITION[e.reason]);
    case "blob_not_found":
      return new HttpError(404, `blob ${e.key} not found in bucket ${e.bucket}`);
    case "key_not_found":
      return new HttpError(404, `key ${e.keyId} not found`);
    case "already_exists":
      return new HttpError(409, `${e.aggregate} already exists`);
  }
}

/** The command's result, or its domain error thrown as the HTTP answer. */
export function answer<R>(r: Result<R, BlobstoreError>): R {
  if (!r.ok) throw httpError(r.error);
  return r.result;
}
