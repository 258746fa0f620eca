// BCS layouts of the memory package's Move structs (move/memrelay/sources), as a node returns their contents. The
// chain port parses objects from these bytes, which every Sui API (JSON-RPC, gRPC, GraphQL) returns alike; the local
// ledger serves its objects in the same layouts.
import { bcs } from "@mysten/sui/bcs";

/** `account::DelegateKey` */
const DelegateKeyBcs = bcs.struct("DelegateKey", { public_key: bcs.vector(bcs.u8()), sui_address: bcs.Address, label: bcs.String, created_at: bcs.u64() });

/** `account::MemWalAccount` (a UID is its address) */
export const MemWalAccountBcs = bcs.struct("MemWalAccount", { id: bcs.Address, owner: bcs.Address, delegate_keys: bcs.vector(DelegateKeyBcs), created_at: bcs.u64(), active: bcs.bool() });

/** `account::AccountRegistry`: its `accounts` field is a `0x2::table::Table<address, ID>` (id and size). */
export const AccountRegistryBcs = bcs.struct("AccountRegistry", { id: bcs.Address, accounts: bcs.struct("Table", { id: bcs.Address, size: bcs.u64() }) });

/** `blob_registry::MemoryBlob` */
export const MemoryBlobBcs = bcs.struct("MemoryBlob", {
  id: bcs.Address,
  owner: bcs.Address,
  blob_id: bcs.String,
  namespace: bcs.String,
  package_id: bcs.Address,
  size: bcs.u64(),
  created_at: bcs.u64(),
});

/** `0x2::object::ID`, the value type of the registry's owner → account table. */
export const ObjectIdBcs = bcs.Address;
