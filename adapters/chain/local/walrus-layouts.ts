// BCS layouts of the Walrus system package's Move structs, exactly as `@mysten/walrus` parses them (its generated
// `contracts/walrus/*` definitions), plus the two derivations both sides of a write must agree on: the blob id of an
// encoded blob's metadata (Merkle root over the sliver-pair hashes) and the storage confirmation message the storage
// nodes sign. The local ledger serves its Walrus objects in these layouts and reads them back when it executes calls.
import { bcs, type BcsType } from "@mysten/sui/bcs";
import { blake2b } from "@noble/hashes/blake2.js";

const Element = bcs.struct("Element", { bytes: bcs.vector(bcs.u8()) });
const ExtendedField = bcs.struct("ExtendedField", { id: bcs.Address });
const Balance = bcs.struct("Balance", { value: bcs.u64() });
const VecMap = <K, V>(name: string, key: BcsType<K>, value: BcsType<V>) =>
  bcs.struct(`VecMap<${name}>`, { contents: bcs.vector(bcs.struct(`Entry<${name}>`, { key, value })) });

/** `committee::Committee`: node id → its shard indices. */
export const CommitteeBcs = bcs.tuple([VecMap("address,vector<u16>", bcs.Address, bcs.vector(bcs.u16()))]);
const PendingValues = bcs.tuple([VecMap("u32,u64", bcs.u32(), bcs.u64())]);

export const BlsCommitteeBcs = bcs.struct("BlsCommittee", {
  members: bcs.vector(bcs.struct("BlsCommitteeMember", { public_key: Element, weight: bcs.u16(), node_id: bcs.Address })),
  n_shards: bcs.u16(),
  epoch: bcs.u32(),
  total_aggregated_key: Element,
});

const EventBlob = bcs.struct("EventBlob", { blob_id: bcs.u256(), ending_checkpoint_sequence_number: bcs.u64() });

/** `system_state_inner::SystemStateInnerV1`, the System object's versioned inner state. */
export const SystemStateInnerV1Bcs = bcs.struct("SystemStateInnerV1", {
  committee: BlsCommitteeBcs,
  total_capacity_size: bcs.u64(),
  used_capacity_size: bcs.u64(),
  storage_price_per_unit_size: bcs.u64(),
  write_price_per_unit_size: bcs.u64(),
  future_accounting: bcs.struct("FutureAccountingRingBuffer", {
    current_index: bcs.u32(),
    length: bcs.u32(),
    ring_buffer: bcs.vector(bcs.struct("FutureAccounting", { epoch: bcs.u32(), used_capacity: bcs.u64(), rewards_to_distribute: Balance })),
  }),
  event_blob_certification_state: bcs.struct("EventBlobCertificationState", {
    latest_certified_blob: bcs.option(EventBlob),
    aggregate_weight_per_blob: VecMap("EventBlob,u16", EventBlob, bcs.u16()),
  }),
  deny_list_sizes: ExtendedField,
});

/** `system::System` and `staking::Staking` share this shape: the version names their inner dynamic field. */
export const VersionedBcs = bcs.struct("Versioned", { id: bcs.Address, version: bcs.u64(), package_id: bcs.Address, new_package_id: bcs.option(bcs.Address) });

/** `staking_inner::StakingInnerV1` */
export const StakingInnerV1Bcs = bcs.struct("StakingInnerV1", {
  n_shards: bcs.u16(),
  epoch_duration: bcs.u64(),
  first_epoch_start: bcs.u64(),
  pools: bcs.struct("ObjectTable", { id: bcs.Address, size: bcs.u64() }),
  epoch: bcs.u32(),
  active_set: ExtendedField,
  next_committee: bcs.option(CommitteeBcs),
  committee: CommitteeBcs,
  previous_committee: CommitteeBcs,
  next_epoch_params: bcs.option(bcs.struct("EpochParams", { total_capacity_size: bcs.u64(), storage_price_per_unit_size: bcs.u64(), write_price_per_unit_size: bcs.u64() })),
  epoch_state: bcs.enum("EpochState", { EpochChangeSync: bcs.u16(), EpochChangeDone: bcs.u64(), NextParamsSelected: bcs.u64() }),
  next_epoch_public_keys: ExtendedField,
});

const Authorized = bcs.enum("Authorized", { Address: bcs.Address, ObjectID: bcs.Address });

/** `staking_pool::StakingPool`: one per storage node, at the node's id; the SDK reads `node_info` from it. */
export const StakingPoolBcs = bcs.struct("StakingPool", {
  id: bcs.Address,
  state: bcs.enum("PoolState", { Active: null, Withdrawing: bcs.u32(), Withdrawn: null }),
  voting_params: bcs.struct("VotingParams", { storage_price: bcs.u64(), write_price: bcs.u64(), node_capacity: bcs.u64() }),
  node_info: bcs.struct("StorageNodeInfo", {
    name: bcs.string(),
    node_id: bcs.Address,
    network_address: bcs.string(),
    public_key: Element,
    next_epoch_public_key: bcs.option(Element),
    network_public_key: bcs.vector(bcs.u8()),
    metadata: ExtendedField,
  }),
  activation_epoch: bcs.u32(),
  latest_epoch: bcs.u32(),
  wal_balance: bcs.u64(),
  num_shares: bcs.u64(),
  pending_shares_withdraw: PendingValues,
  pre_active_withdrawals: PendingValues,
  pending_commission_rate: PendingValues,
  commission_rate: bcs.u16(),
  exchange_rates: bcs.struct("Table", { id: bcs.Address, size: bcs.u64() }),
  pending_stake: PendingValues,
  rewards_pool: Balance,
  commission: Balance,
  commission_receiver: Authorized,
  governance_authorized: Authorized,
  extra_fields: bcs.struct("Bag", { id: bcs.Address, size: bcs.u64() }),
});

/** `storage_resource::Storage` */
export const StorageBcs = bcs.struct("Storage", { id: bcs.Address, start_epoch: bcs.u32(), end_epoch: bcs.u32(), storage_size: bcs.u64() });

/** `blob::Blob` */
export const BlobBcs = bcs.struct("Blob", {
  id: bcs.Address,
  registered_epoch: bcs.u32(),
  blob_id: bcs.u256(),
  size: bcs.u64(),
  encoding_type: bcs.u8(),
  certified_epoch: bcs.option(bcs.u32()),
  storage: StorageBcs,
  deletable: bcs.bool(),
});

/** `metadata::Metadata`, a Blob's attributes, kept in its dynamic field named `b"metadata"` (a `vector<u8>`). */
export const MetadataBcs = bcs.struct("Metadata", { metadata: VecMap("String,String", bcs.string(), bcs.string()) });
export const METADATA_FIELD_NAME = bcs.vector(bcs.u8()).serialize(new TextEncoder().encode("metadata")).toBytes();

export type StorageValue = ReturnType<typeof StorageBcs.parse>;
export type BlobValue = ReturnType<typeof BlobBcs.parse>;

// ---------------------------------------------------------------- encoding and blob ids

/** The only encoding the SDK writes (`EncodingType::RS2`, Move's `encoding_type: u8` 1). */
export const RS2_ENCODING = 1;

const MerkleNode = bcs.enum("MerkleNode", { Empty: null, Digest: bcs.bytes(32) });
/** What a client PUTs to a storage node's `/v1/blobs/{id}/metadata` (the SDK's `BlobMetadata`). */
export const BlobMetadataBcs = bcs.enum("BlobMetadata", {
  V1: bcs.struct("BlobMetadataV1", {
    encoding_type: bcs.enum("EncodingType", { RedStuff: null, RS2: null }),
    unencoded_length: bcs.u64(),
    hashes: bcs.vector(bcs.struct("SliverPairMetadata", { primary_hash: MerkleNode, secondary_hash: MerkleNode })),
  }),
});

const blake2b256 = (bytes: Uint8Array) => blake2b(bytes, { dkLen: 32 });
const nodeBytes = (n: ReturnType<typeof MerkleNode.parse>) => (n.Digest ? Uint8Array.from(n.Digest) : new Uint8Array(32));

/** Walrus's Merkle root over the sliver pairs' hashes: leaves blake2b(0 ‖ primary ‖ secondary), inner nodes blake2b(1 ‖ l ‖ r), odd levels padded with an empty (zero) node. */
export function metadataRootHash(metadata: ReturnType<typeof BlobMetadataBcs.parse>): Uint8Array {
  let level = metadata.V1.hashes.map((h) => blake2b256(Uint8Array.from([0, ...nodeBytes(h.primary_hash), ...nodeBytes(h.secondary_hash)])));
  if (level.length === 0) return new Uint8Array(32);
  while (level.length > 1) {
    if (level.length % 2 === 1) level.push(new Uint8Array(32) as (typeof level)[number]);
    const next = [] as typeof level;
    for (let i = 0; i < level.length; i += 2) next.push(blake2b256(Uint8Array.from([1, ...level[i]!, ...level[i + 1]!])));
    level = next;
  }
  return level[0]!;
}

/** Move's `blob::derive_blob_id`: blake2b-256 of BCS (encoding_type: u8, size: u64, root_hash: u256). Bytes, little-endian as a u256. */
export function deriveBlobId(rootHash: Uint8Array, encodingType: number, size: bigint): Uint8Array {
  return blake2b256(Uint8Array.from([encodingType, ...bcs.u64().serialize(size).toBytes(), ...rootHash]));
}

/** A blob id's URL-safe base64 (no padding), as clients and node URLs carry it. */
export function blobIdToString(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64url");
}

/** A blob id string's 32 bytes, or null when it is not one. */
export function blobIdFromString(id: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]{43}$/.test(id)) return null;
  const bytes = new Uint8Array(Buffer.from(id, "base64url"));
  return bytes.length === 32 && blobIdToString(bytes) === id ? bytes : null;
}

export const blobIdToU256 = (bytes: Uint8Array): bigint => BigInt(bcs.u256().parse(bytes));
export const blobIdFromU256 = (value: bigint | string): Uint8Array => bcs.u256().serialize(value).toBytes();

// ---------------------------------------------------------------- storage confirmations

/** `IntentType::BLOB_CERT_MSG`, with intent version 0 and app id 3 (Walrus). */
export const BLOB_CERT_INTENT = { type: 1, version: 0, appId: 3 } as const;

/** `ProtocolMessage<StorageConfirmationBody>`: what each storage node signs and `certify_blob` checks. */
export const StorageConfirmationBcs = bcs.struct("StorageConfirmation", {
  intent: bcs.struct("Intent", { type: bcs.u8(), version: bcs.u8(), appId: bcs.u8() }),
  epoch: bcs.u32(),
  blobId: bcs.u256(),
  blobType: bcs.enum("BlobPersistenceType", { Permanent: null, Deletable: bcs.struct("Deletable", { objectId: bcs.Address }) }),
});

/** A Blob object registered for a blob id, as the ledger indexes it (`wblob.<id>`) and storage nodes check it. */
export interface WalrusRegistration {
  readonly objectId: string;
  readonly deletable: boolean;
  readonly endEpoch: number;
  readonly certifiedEpoch: number | null;
}

export type BlobPersistence = { readonly deletable: false } | { readonly deletable: true; readonly objectId: string };

export function confirmationMessage(epoch: number, blobId: Uint8Array, persistence: BlobPersistence): Uint8Array {
  return StorageConfirmationBcs.serialize({
    intent: BLOB_CERT_INTENT,
    epoch,
    blobId: blobIdToU256(blobId),
    blobType: persistence.deletable ? { Deletable: { objectId: persistence.objectId } } : { Permanent: null },
  }).toBytes();
}

// ---------------------------------------------------------------- sizes and quorums (as the SDK and Move compute them)

const maxFaulty = (nShards: number) => Math.floor((nShards - 1) / 3);

/** Source symbols per sliver for RS2: primary = n − 2f, secondary = n − f. */
export function sourceSymbols(nShards: number): { primary: number; secondary: number } {
  const f = maxFaulty(nShards);
  return { primary: nShards - 2 * f, secondary: nShards - f };
}

/** The symbol size of a blob of `size` bytes (RS2 aligns symbols to 2 bytes). */
export function symbolSize(size: number, nShards: number): number {
  const { primary, secondary } = sourceSymbols(nShards);
  const s = Math.floor((Math.max(size, 1) - 1) / (primary * secondary)) + 1;
  return s % 2 === 1 ? s + 1 : s;
}

/** Encoded size of a blob (slivers plus every node's copy of the metadata), what storage must cover. */
export function encodedBlobLength(size: number, nShards: number): number {
  const { primary, secondary } = sourceSymbols(nShards);
  return nShards * (nShards * 32 * 2 + 32) + (primary + secondary) * symbolSize(size, nShards) * nShards;
}

export const BYTES_PER_UNIT_SIZE = 1024 * 1024;
export const storageUnits = (encodedSize: number | bigint) => (BigInt(encodedSize) + BigInt(BYTES_PER_UNIT_SIZE) - 1n) / BigInt(BYTES_PER_UNIT_SIZE);

/** Move's `is_quorum`: more than two thirds of the shards. */
export const isQuorumWeight = (weight: number, nShards: number) => 3 * weight >= 2 * nShards + 1;
