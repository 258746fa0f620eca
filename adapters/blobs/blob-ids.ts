// The consistency check of cold reads (BLOBSTORE_SKIP_CONSISTENCY_CHECK unset): the bytes an aggregator answers must be
// the blob its id names. Ids are computed the way the network's blob store computes them: our blob store names a blob
// by the SHA-256 of its bytes; Walrus by its RedStuff encoding's metadata over the committee's shards (the Walrus
// SDK's own WebAssembly encoder; seconds per blob at 1000 shards, which is why trusted deployments skip the check).
import { createHash } from "node:crypto";
import { BlobEncoder } from "@mysten/walrus-wasm";
import { blobIdFromInt } from "@mysten/walrus";
import { bcs } from "@mysten/sui/bcs";

/** true when `bytes` are the blob `blobId` names. */
export type BlobIdCheck = (blobId: string, bytes: Uint8Array) => boolean;

/** Our blob store's ids: base64url SHA-256 of the bytes (adapters/blob-bytes). */
export const sha256BlobIds: BlobIdCheck = (blobId, bytes) => createHash("sha256").update(bytes).digest("base64url") === blobId;

/** Walrus blob ids for a committee of `nShards` shards. */
export function walrusBlobIds(nShards: number): BlobIdCheck {
  return (blobId, bytes) => walrusBlobId(bytes, nShards) === blobId;
}

export function walrusBlobId(bytes: Uint8Array, nShards: number): string {
  const [id] = new BlobEncoder(nShards).compute_metadata(bytes) as [Iterable<number>, ...unknown[]];
  return blobIdFromInt(bcs.u256().parse(new Uint8Array(id)));
}
