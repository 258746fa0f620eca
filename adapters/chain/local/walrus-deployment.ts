// The local network's Walrus deployment: the system package, the shared `System` and `Staking` objects with their
// versioned inner states (dynamic fields named by the version, u64), and one `StakingPool` per storage node carrying
// its network address and BLS public key, laid out as `@mysten/walrus` reads them (walrus-layouts.ts). The ids are
// fixed per network, so the ledger's decoder knows which calls are Walrus calls; the operator publishes the objects
// with put_object. Real networks have Mysten's deployment instead (the SDK's own package config).
import { createHash } from "node:crypto";
import { bcs } from "@mysten/sui/bcs";
import { deriveDynamicFieldID, normalizeStructTag, normalizeSuiAddress } from "@mysten/sui/utils";
import { bls12_381 } from "@noble/curves/bls12-381.js";
import type { PutObjectInput } from "./local-chain.ts";
import { COIN_TYPES } from "./rpc/transactions.ts";
import { StakingInnerV1Bcs, StakingPoolBcs, SystemStateInnerV1Bcs, VersionedBcs } from "./walrus-layouts.ts";

/** The epoch the local Walrus committee serves (it never changes: the local network has no epoch changes). */
export const LOCAL_WALRUS_EPOCH = 1;
/** Version of the inner states; names their dynamic fields. */
const INNER_VERSION = 1n;
/** Most epochs a storage reservation may reach ahead (Walrus mainnet's limit). */
export const MAX_EPOCHS_AHEAD = 53;

export interface WalrusIds {
  readonly packageId: string;
  readonly systemObjectId: string;
  readonly stakingObjectId: string;
  /** The WAL coin type: the ledger's WAL token. */
  readonly walCoinType: string;
}

const idOf = (label: string) => normalizeSuiAddress(createHash("sha256").update(`memrelay/local-walrus/${label}`).digest("hex"));

/** The ids of a network's local Walrus deployment (the `packageConfig` a WalrusClient is given). */
export function localWalrusIds(network: string): WalrusIds {
  return {
    packageId: idOf(`${network}/package`),
    systemObjectId: idOf(`${network}/system`),
    stakingObjectId: idOf(`${network}/staking`),
    walCoinType: normalizeStructTag(COIN_TYPES.WAL!),
  };
}

/** What a WalrusClient is given as `packageConfig` for the network's local deployment. */
export function localWalrusPackageConfig(network: string): { systemObjectId: string; stakingPoolId: string } {
  const ids = localWalrusIds(network);
  return { systemObjectId: ids.systemObjectId, stakingPoolId: ids.stakingObjectId };
}

/** A storage node's id (its StakingPool object) by its position in the committee. */
export const localWalrusNodeId = (network: string, index: number) => idOf(`${network}/node/${index}`);

export interface WalrusNodeInfo {
  readonly name: string;
  /** host:port; clients prepend their URL scheme (`storageNodeUrlScheme`, http locally). */
  readonly networkAddress: string;
  /** 48-byte compressed BLS12-381 G1 public key (min-pk). */
  readonly publicKey: Uint8Array;
  readonly shards: readonly number[];
}

export interface WalrusDeploymentSpec {
  readonly network: string;
  readonly nShards: number;
  readonly nodes: readonly WalrusNodeInfo[];
  /** WAL (smallest unit) per MiB of encoded size per epoch. */
  readonly storagePricePerUnit: bigint;
  /** WAL per MiB of encoded size, once per registration. */
  readonly writePricePerUnit: bigint;
  readonly totalCapacity: bigint;
  /** Bytes already reserved (kept across a republication of the deployment). */
  readonly usedCapacity?: bigint;
}

/** The committee of a deployment as the ledger checks certificates against it. */
export interface WalrusCommitteeView {
  readonly epoch: number;
  readonly nShards: number;
  readonly members: readonly { readonly publicKey: Uint8Array; readonly weight: number; readonly nodeId: string }[];
}

const struct = (address: string, module: string, name: string, typeArguments: unknown[] = []) => ({ Struct: { address: normalizeSuiAddress(address), module, name, typeArguments } });
const TX_CONTEXT = { MutableReference: struct("0x2", "tx_context", "TxContext") };

/** Signatures of the package's functions the SDK resolves arguments against (and reads the WAL type from). */
function walrusFunctions(ids: WalrusIds): Record<string, unknown> {
  const [walAddress, walModule, walName] = ids.walCoinType.split("::") as [string, string, string];
  const coinWal = struct("0x2", "coin", "Coin", [struct(walAddress, walModule, walName)]);
  const own = (module: string, name: string) => struct(ids.packageId, module, name);
  const fn = (parameters: unknown[], returns: unknown[] = [], takesContext = false) => ({ visibility: "Public", isEntry: false, typeParameters: [], parameters: takesContext ? [...parameters, TX_CONTEXT] : parameters, return: returns });
  return {
    "system::reserve_space": fn([{ MutableReference: own("system", "System") }, "U64", "U32", { MutableReference: coinWal }], [own("storage_resource", "Storage")], true),
    "system::register_blob": fn([{ MutableReference: own("system", "System") }, own("storage_resource", "Storage"), "U256", "U256", "U64", "U8", "Bool", { MutableReference: coinWal }], [own("blob", "Blob")], true),
    "system::certify_blob": fn([{ Reference: own("system", "System") }, { MutableReference: own("blob", "Blob") }, { Vector: "U8" }, { Vector: "U8" }, { Vector: "U8" }]),
    "system::delete_blob": fn([{ Reference: own("system", "System") }, own("blob", "Blob")], [own("storage_resource", "Storage")]),
    "system::extend_blob": fn([{ MutableReference: own("system", "System") }, { MutableReference: own("blob", "Blob") }, "U32", { MutableReference: coinWal }]),
    "metadata::new": fn([], [own("metadata", "Metadata")]),
    "blob::add_metadata": fn([{ MutableReference: own("blob", "Blob") }, own("metadata", "Metadata")]),
    "blob::insert_or_update_metadata_pair": fn([{ MutableReference: own("blob", "Blob") }, struct("0x1", "string", "String"), struct("0x1", "string", "String")]),
    "blob::remove_metadata_pair": fn([{ MutableReference: own("blob", "Blob") }, struct("0x1", "string", "String")]),
    // Declared for the SDK, which reads the WAL type from its second parameter; the ledger does not implement staking.
    "staking::stake_with_pool": fn([{ MutableReference: own("staking", "Staking") }, coinWal, struct("0x2", "object", "ID")], [own("staked_wal", "StakedWal")], true),
  };
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const versionName = { type: "u64", value: String(INNER_VERSION), bcs: b64(bcs.u64().serialize(INNER_VERSION).toBytes()) };
const SHARED = { Shared: { initial_shared_version: "1" } } as const;

/** The objects to publish (in order) for a deployment; put_object inputs keyed by object id. */
export function walrusDeploymentObjects(spec: WalrusDeploymentSpec): { objectId: string; input: PutObjectInput }[] {
  const ids = localWalrusIds(spec.network);
  const nodeIds = spec.nodes.map((_, i) => localWalrusNodeId(spec.network, i));
  const sub = (label: string) => idOf(`${spec.network}/${label}`);
  const aggregate = bls12_381.longSignatures.aggregatePublicKeys(spec.nodes.map((n) => n.publicKey)).toBytes(true);
  const committee = { contents: spec.nodes.map((n, i) => ({ key: nodeIds[i]!, value: [...n.shards] })) };
  const systemInner = SystemStateInnerV1Bcs.serialize({
    committee: {
      members: spec.nodes.map((n, i) => ({ public_key: { bytes: [...n.publicKey] }, weight: n.shards.length, node_id: nodeIds[i]! })),
      n_shards: spec.nShards,
      epoch: LOCAL_WALRUS_EPOCH,
      total_aggregated_key: { bytes: [...aggregate] },
    },
    total_capacity_size: spec.totalCapacity,
    used_capacity_size: spec.usedCapacity ?? 0n,
    storage_price_per_unit_size: spec.storagePricePerUnit,
    write_price_per_unit_size: spec.writePricePerUnit,
    future_accounting: { current_index: 0, length: 0, ring_buffer: [] },
    event_blob_certification_state: { latest_certified_blob: null, aggregate_weight_per_blob: { contents: [] } },
    deny_list_sizes: { id: sub("deny_list_sizes") },
  }).toBytes();
  const stakingInner = StakingInnerV1Bcs.serialize({
    n_shards: spec.nShards,
    epoch_duration: 14n * 24n * 3600n * 1000n,
    first_epoch_start: 0n,
    pools: { id: sub("pools"), size: BigInt(spec.nodes.length) },
    epoch: LOCAL_WALRUS_EPOCH,
    active_set: { id: sub("active_set") },
    next_committee: null,
    committee: [committee],
    previous_committee: [{ contents: [] }],
    next_epoch_params: null,
    epoch_state: { EpochChangeDone: 0n },
    next_epoch_public_keys: { id: sub("next_epoch_public_keys") },
  }).toBytes();
  const versioned = (id: string) => b64(VersionedBcs.serialize({ id, version: INNER_VERSION, package_id: ids.packageId, new_package_id: null }).toBytes());
  /** A shared Walrus object whose state is its versioned inner value, in a dynamic field named by the version. */
  const sharedVersioned = (objectId: string, type: string, innerType: string, inner: Uint8Array) => ({
    objectId,
    input: {
      type: `${ids.packageId}::${type}`,
      version: "1",
      fields: {},
      owner: SHARED,
      bcs: versioned(objectId),
      dynamicFields: [{ name: versionName, value_type: `${ids.packageId}::${innerType}`, value: {}, value_bcs: b64(inner) }],
    },
  });
  const pools = spec.nodes.map((n, i) => ({
    objectId: nodeIds[i]!,
    input: {
      type: `${ids.packageId}::staking_pool::StakingPool`,
      version: "1",
      fields: { name: n.name, network_address: n.networkAddress },
      owner: { ObjectOwner: sub("pools") },
      bcs: b64(
        StakingPoolBcs.serialize({
          id: nodeIds[i]!,
          state: { Active: null },
          voting_params: { storage_price: spec.storagePricePerUnit, write_price: spec.writePricePerUnit, node_capacity: spec.totalCapacity / BigInt(spec.nodes.length) },
          node_info: {
            name: n.name,
            node_id: nodeIds[i]!,
            network_address: n.networkAddress,
            public_key: { bytes: [...n.publicKey] },
            next_epoch_public_key: null,
            network_public_key: [],
            metadata: { id: sub(`node/${i}/metadata`) },
          },
          activation_epoch: LOCAL_WALRUS_EPOCH,
          latest_epoch: LOCAL_WALRUS_EPOCH,
          wal_balance: 0n,
          num_shares: 0n,
          pending_shares_withdraw: [{ contents: [] }],
          pre_active_withdrawals: [{ contents: [] }],
          pending_commission_rate: [{ contents: [] }],
          commission_rate: 0,
          exchange_rates: { id: sub(`node/${i}/exchange_rates`), size: 0n },
          pending_stake: [{ contents: [] }],
          rewards_pool: { value: 0n },
          commission: { value: 0n },
          commission_receiver: { Address: nodeIds[i]! },
          governance_authorized: { Address: nodeIds[i]! },
          extra_fields: { id: sub(`node/${i}/extra_fields`), size: 0n },
        }).toBytes(),
      ),
    } satisfies PutObjectInput,
  }));
  return [
    { objectId: ids.packageId, input: { type: "package", version: "1", fields: { functions: walrusFunctions(ids) }, owner: "Immutable" } },
    ...pools,
    sharedVersioned(ids.systemObjectId, "system::System", "system_state_inner::SystemStateInnerV1", systemInner),
    sharedVersioned(ids.stakingObjectId, "staking::Staking", "staking_inner::StakingInnerV1", stakingInner),
  ];
}

/** The id of the System object's inner state field (where the ledger reads the committee and prices). */
export function systemInnerFieldId(network: string): string {
  return deriveDynamicFieldID(localWalrusIds(network).systemObjectId, "u64", bcs.u64().serialize(INNER_VERSION).toBytes());
}

/** Reads the committee and prices from the System inner state's BCS (a Field<u64, SystemStateInnerV1>: id ‖ name ‖ value). */
export function parseSystemInnerField(fieldBcs: Uint8Array): { committee: WalrusCommitteeView; storagePricePerUnit: bigint; writePricePerUnit: bigint; totalCapacity: bigint; usedCapacity: bigint } {
  const inner = SystemStateInnerV1Bcs.parse(fieldBcs.subarray(32 + 8));
  return {
    totalCapacity: BigInt(inner.total_capacity_size),
    usedCapacity: BigInt(inner.used_capacity_size),
    committee: {
      epoch: inner.committee.epoch,
      nShards: inner.committee.n_shards,
      members: inner.committee.members.map((m) => ({ publicKey: Uint8Array.from(m.public_key.bytes), weight: m.weight, nodeId: m.node_id })),
    },
    storagePricePerUnit: BigInt(inner.storage_price_per_unit_size),
    writePricePerUnit: BigInt(inner.write_price_per_unit_size),
  };
}

/** The System inner state's field BCS with another used capacity (reservations add to it; it is never freed here). */
export function withUsedCapacity(fieldBcs: Uint8Array, used: bigint): Uint8Array {
  const head = fieldBcs.subarray(0, 32 + 8);
  const inner = SystemStateInnerV1Bcs.parse(fieldBcs.subarray(32 + 8));
  return Uint8Array.from([...head, ...SystemStateInnerV1Bcs.serialize({ ...inner, used_capacity_size: used }).toBytes()]);
}
