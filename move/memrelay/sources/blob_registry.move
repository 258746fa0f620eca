/// The relayer's record of a stored memory blob: which owner it belongs to, its namespace and the package whose
/// Seal policy encrypted it. Restore lists these to find an owner's blobs. The object goes to the owner.
module memrelay::blob_registry;

use std::string::String;
use sui::clock::Clock;
use sui::event;

const ENamespaceLength: u64 = 1;
const EBlobIdLength: u64 = 2;

const MAX_NAMESPACE_BYTES: u64 = 256;
const MAX_BLOB_ID_BYTES: u64 = 128;

public struct MemoryBlob has key, store {
    id: UID,
    owner: address,
    blob_id: String,
    namespace: String,
    package_id: address,
    size: u64,
    created_at: u64,
}

public struct BlobRecorded has copy, drop { object_id: ID, owner: address, blob_id: String, namespace: String, package_id: address, size: u64 }

/// Called by a relayer wallet (the sender pays the gas); the ledger additionally makes (owner, blob_id) idempotent.
entry fun record_blob(owner: address, blob_id: String, namespace: String, package_id: address, size: u64, clock: &Clock, ctx: &mut TxContext) {
    assert!(namespace.length() > 0 && namespace.length() <= MAX_NAMESPACE_BYTES, ENamespaceLength);
    assert!(blob_id.length() > 0 && blob_id.length() <= MAX_BLOB_ID_BYTES, EBlobIdLength);
    let blob = MemoryBlob { id: object::new(ctx), owner, blob_id, namespace, package_id, size, created_at: clock.timestamp_ms() };
    event::emit(BlobRecorded { object_id: object::id(&blob), owner, blob_id, namespace, package_id, size });
    transfer::transfer(blob, owner);
}
