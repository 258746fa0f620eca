// What a remember job's `blob_id` may be: a Walrus blob id (MEMRELAY_STORE_MODE=blob) or a quilt patch id (quilt, the
// default). Stack tests run in either mode (test/support/stack.ts storeModeOfRun), so they accept both, and nothing else.
import { isBlobId } from "../../schemas/blobstore/validation.ts";
import { isQuiltPatchId } from "../../adapters/blobs/quilt-codec.ts";

export const storedBlobId = (id: string): boolean => isBlobId(id) || isQuiltPatchId(id);
