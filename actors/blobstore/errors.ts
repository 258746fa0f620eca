// What a blob store command can be refused for. Domain facts only: the gateway decides how each reads over HTTP
// (gateway/blobstore/domain-errors.ts), the operator CLI how it reads in a terminal.

export type PreconditionFailure = "key_exists" | "key_missing" | "etag_mismatch";

export type BlobstoreError =
  /** the caller's account already has a live bucket of that name */
  | { readonly code: "bucket_exists"; readonly name: string }
  /** another account has a live bucket of that name */
  | { readonly code: "bucket_name_taken"; readonly name: string }
  /** no live bucket of that name owned by the caller (someone else's bucket is not found either) */
  | { readonly code: "bucket_not_found"; readonly name: string }
  | { readonly code: "bucket_not_empty"; readonly name: string; readonly blobs: number }
  | { readonly code: "precondition_failed"; readonly reason: PreconditionFailure }
  | { readonly code: "blob_not_found"; readonly bucket: string; readonly key: string }
  /** no key of that id, kind and owner */
  | { readonly code: "key_not_found"; readonly keyId: string }
  /** a create found its aggregate already there: a freshly drawn id collided, or an app was created before */
  | { readonly code: "already_exists"; readonly aggregate: string };
