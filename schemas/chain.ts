// The on-chain objects the services' contracts name (events carry them, read models store them): Sui's object shape
// as its JSON-RPC shows it, and the developer console's bucket-policy objects (spec/console.md, private buckets and
// sponsorship). Pure types; any chain adapter, local or real, produces these.

export type ObjectOwner = { AddressOwner: string } | { ObjectOwner: string } | { Shared: { initial_shared_version: string } } | "Immutable";

export interface DynamicFieldName {
  /** Move type of the name, e.g. `u64`. */
  readonly type: string;
  /** JSON value of the name (numbers of u64 and friends as decimal strings or numbers). */
  readonly value: unknown;
  /** base64 BCS of the name; when given, the field is also stored as a `0x2::dynamic_field::Field` object at its derived id. */
  readonly bcs?: string;
}

export interface StoredObject {
  readonly object_id: string;
  readonly type: string;
  readonly version: string;
  readonly owner: ObjectOwner;
  readonly fields: unknown;
  readonly bcs?: string;
  /** Names of its dynamic fields. */
  readonly dynamic_field_names?: readonly DynamicFieldName[];
  readonly previous_transaction: string;
}

/** How the relayer reaches a Sui node: its gRPC API (CHAIN_GRPC_URL, spoken as gRPC-web) or its JSON-RPC (CHAIN_RPC_URL). */
export type ChainTransport = "grpc" | "jsonrpc";

/** Where transactions go: the network (its chain identifier is signed), the Move package and the account registry. */
export interface ChainTarget {
  readonly network: string;
  /** Digest of the network's genesis checkpoint, which every transaction's expiration names. */
  readonly chainIdentifier: string;
  readonly packageId: string;
  readonly registryId: string;
}

/** What travels to the chain: the exact signed bytes and Sui serialized signatures over their intent digest. */
export interface SignedTx {
  /** base64 of the transaction bytes */
  readonly tx_bytes: string;
  readonly signatures: readonly string[];
}

// ---------------------------------------------------------------- the console's bucket policies
//   BucketPolicy  {id, bucket_id, space_id, admins[], groups[]}       one per private bucket (its encryption policy)
//   AccessGroup   {id, bucket_id, policy_id, admins[], members[]}     members: {address, scope: read | readwrite}

export type AccessScope = "read" | "readwrite";

export interface BucketPolicyFields {
  readonly id: string;
  readonly bucket_id: string;
  readonly space_id: string;
  readonly admins: readonly string[];
  readonly groups: readonly string[];
}

export interface GroupMember {
  readonly address: string;
  readonly scope: AccessScope;
}

export interface AccessGroupFields {
  readonly id: string;
  readonly bucket_id: string;
  readonly policy_id: string;
  readonly admins: readonly string[];
  readonly members: readonly GroupMember[];
}

/** A memory account (`account::MemWalAccount`) as readers see it, on the local ledger or a Sui node. */
export interface MemoryAccount {
  readonly id: string;
  readonly owner: string;
  readonly active: boolean;
  readonly delegate_keys: readonly {
    /** lowercase hex of the Ed25519 public key */
    readonly public_key: string;
    readonly sui_address: string;
    readonly label: string;
    /** Unix milliseconds */
    readonly created_at: number;
  }[];
}

export const bucketPolicyType = (packageId: string) => `${packageId}::bucket_policy::BucketPolicy`;
// The memory package's account and blob objects (move/memrelay).
export const memWalAccountType = (packageId: string) => `${packageId}::account::MemWalAccount`;
export const accountRegistryType = (packageId: string) => `${packageId}::account::AccountRegistry`;
export const memoryBlobType = (packageId: string) => `${packageId}::blob_registry::MemoryBlob`;
export const accessGroupType = (packageId: string) => `${packageId}::bucket_policy::AccessGroup`;

/**
 * How the ledger words its refusal of a transaction past its ValidDuring window (a Sui node says "expired" too): a
 * sponsored transaction that expired before execution is re-sponsored, so callers must tell it from other refusals.
 */
export const TX_EXPIRED = "transaction expired";

/** true when a chain refusal (a PortError's or a JSON-RPC error's message) says the transaction expired. */
export const isExpiredTransactionError = (message: string): boolean => /transaction (has )?expired/i.test(message);
