// A recorded blob as the Move object clients read (`obj.<id>`), and back: the object is the only stored copy of a
// blob's record, found by (owner, blob id) at its derived id (tx.ts deriveBlobObjectId).
import { memoryBlobType } from "../../../schemas/chain.ts";
import type { BlobRecord } from "./model.ts";

export interface BlobObjectView {
  readonly object_id: string;
  readonly type: string;
  readonly version: string;
  readonly owner: { readonly AddressOwner: string };
  readonly fields: { id: string; blob_id: string; namespace: string; package_id: string; size: string; created_at: string };
}

export function blobObjectView(b: BlobRecord): BlobObjectView {
  return {
    object_id: b.object_id,
    type: memoryBlobType(b.package_id),
    version: "1",
    owner: { AddressOwner: b.owner },
    fields: { id: b.object_id, blob_id: b.blob_id, namespace: b.namespace, package_id: b.package_id, size: String(b.size), created_at: String(b.created_at) },
  };
}

/** The record of a blob object view (null for anything else). */
export function blobRecordOf(view: BlobObjectView | null): BlobRecord | null {
  const f = view?.fields;
  if (!view || !f || typeof f.blob_id !== "string" || !("AddressOwner" in (view.owner ?? {}))) return null;
  return {
    object_id: view.object_id,
    owner: view.owner.AddressOwner,
    blob_id: f.blob_id,
    namespace: f.namespace,
    package_id: f.package_id,
    size: Number(f.size),
    created_at: Number(f.created_at),
  };
}
