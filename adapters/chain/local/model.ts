// The local ledger's data model: transactions, state objects and the events a transaction produces. Pure types and
// constants; amounts are u64 carried as decimal strings in JSON.
import type { SignedTx, StoredObject } from "../../../schemas/chain.ts";
import type { BlobRecordArgs, CallArgs, CallKind, DynamicFieldInput, ObjectInput } from "../sui/call-kinds.ts";
import type { WalrusPtb } from "./walrus-ptb.ts";

// The call catalogue is shared with the real adapters (adapters/chain/sui/call-kinds.ts); the ledger names it here too.
export type { BlobRecordArgs, CallKind, DynamicFieldInput, ObjectInput };

export const MAX_DELEGATE_KEYS = 20;
export const MAX_LABEL_BYTES = 64;
export const MAX_NAMESPACE_BYTES = 256;
export const U64_MAX = (1n << 64n) - 1n;
/**
 * Blob index page size (items per KV value). Small, because recording a blob rewrites its page (twice: the owner's
 * and the namespace's index), while a listing reads a whole index only on restore.
 */
export const BLOB_PAGE_SIZE = 8;
export const GAS_TOKEN = "SUI";
export const DEFAULT_TOKENS = ["SUI", "WAL"] as const;


/** `walrus`: a programmable transaction calling the local Walrus system package (walrus-ptb.ts), as @mysten/walrus builds it. */
export type TxKind = CallKind | "walrus";

/** Kinds only the operator may sign; they pay no gas. */
export const SYSTEM_KINDS: ReadonlySet<TxKind> = new Set(["genesis", "mint", "put_object"]);

export interface TxArgs extends CallArgs {
  walrus: WalrusPtb;
}

/** A transaction as the ledger reads it from its Sui `TransactionData` (transaction-data.ts). */
export interface TxBody<K extends TxKind = TxKind> {
  /** The network the transaction is meant for (its chain identifier is signed; replay protection across ledgers). */
  readonly chain: string;
  readonly kind: K;
  readonly sender: string;
  /** Pays the gas when it is not the sender (a sponsored transaction); must co-sign. */
  readonly gas_owner?: string;
  /** u32 chosen by the builder; with the digest record it makes a signed transaction single-use. */
  readonly nonce: number;
  /** The validity window (ms since the epoch) outside which the ledger refuses it. */
  readonly valid_from_ms: number;
  readonly valid_until_ms: number;
  readonly args: TxArgs[K];
}

export interface DelegateKey {
  readonly public_key: string;
  readonly sui_address: string;
  readonly label: string;
  readonly created_at: number;
}

export interface Account {
  readonly id: string;
  readonly owner: string;
  readonly delegate_keys: readonly DelegateKey[];
  readonly created_at: number;
  readonly active: boolean;
  /** Incremented by every transaction that changes the account. */
  readonly version: number;
}

export interface BlobRecord {
  readonly object_id: string;
  readonly owner: string;
  readonly blob_id: string;
  readonly namespace: string;
  readonly package_id: string;
  readonly size: number;
  readonly created_at: number;
}

export interface StoredDynamicField extends DynamicFieldInput {
  readonly parent_id: string;
  /** The derived field object id, when the name's BCS was given. */
  readonly field_id?: string;
}

export interface GenesisState {
  readonly operator_address: string;
  readonly operator_public_key: string;
  readonly network: string;
  readonly package_id: string;
  readonly created_at: number;
}

// ---------------------------------------------------------------- events

export type ChainEvent =
  | { readonly type: "Genesis"; readonly genesis: GenesisState }
  | { readonly type: "AccountCreated"; readonly account: Account }
  | { readonly type: "DelegateKeyAdded"; readonly account: Account; readonly key: DelegateKey }
  | { readonly type: "DelegateKeyRemoved"; readonly account: Account; readonly public_key: string; readonly sui_address: string }
  | { readonly type: "AccountDeactivated"; readonly account: Account }
  | { readonly type: "AccountReactivated"; readonly account: Account }
  | { readonly type: "BlobRecorded"; readonly blob: BlobRecord; readonly index_all: number; readonly index_ns: number }
  | {
      readonly type: "BalanceChanged";
      readonly address: string;
      readonly token: string;
      /** Balance after the change. */
      readonly amount: string;
      readonly delta: string;
      readonly reason: "gas" | "transfer" | "mint";
    }
  | { readonly type: "ObjectPut"; readonly object: StoredObject; readonly dynamic_fields: readonly StoredDynamicField[] }
  /** An object a Walrus call created or changed (a Blob or Storage), its Move contents in `bcs`. */
  | { readonly type: "WalrusObjectWritten"; readonly object: StoredObject; readonly created: boolean }
  /**
   * A Walrus object that stops being an object of its own: wrapped into another (a Storage registered for a blob) or
   * deleted (a deletable Blob, whose registration of `blob_id` (u256, decimal) ends, and its attributes field).
   */
  | { readonly type: "WalrusObjectRemoved"; readonly object_id: string; readonly blob_id?: string };

/** A verified transaction and the events it produced. */
export interface ChainRecord {
  readonly v: 1;
  readonly digest: string;
  readonly tx: SignedTx;
  readonly kind: TxKind;
  readonly sender: string;
  readonly gas_owner: string | null;
  readonly gas_used: string;
  readonly executed_at: number;
  readonly events: readonly ChainEvent[];
}

/**
 * One message on `chain.tx`: the transactions one process committed together (group commit), in execution order.
 * Each record was decided against the state left by the records before it.
 */
export interface ChainBlock {
  readonly v: 1;
  readonly records: readonly ChainRecord[];
}

/** What `tx.<digest>` holds: the record plus its position in the ledger. */
export interface TxReceipt extends Omit<ChainRecord, "tx"> {
  /** chain.tx stream sequence of the block */
  readonly seq: number;
  /** position in the block */
  readonly index: number;
}
