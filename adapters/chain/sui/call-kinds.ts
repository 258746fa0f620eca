// The Move call catalogue both sides of the chain port share: the transaction kinds that are one table-driven Move
// call (move-calls.ts) and their arguments. The real adapters (sui/, sui-rpc/) build transactions from it; the local
// ledger (adapters/chain/local/) reads them back with it. Pure types and constants.
import type { AccessScope, DynamicFieldName, ObjectOwner } from "../../../schemas/chain.ts";

/** The console's bucket policies and access groups (spec/console.md; the ledger's rules: local/console-decide.ts). */
export const CONSOLE_TX_KINDS = [
  "bucket_policy_create",
  "bucket_group_create",
  "grant_bucket_access",
  "share_admin",
  "unshare",
  "unshare_bucket_access",
] as const;

export type ConsoleTxKind = (typeof CONSOLE_TX_KINDS)[number];

export interface ConsoleTxArgs {
  bucket_policy_create: { bucket_id: string; space_id: string };
  bucket_group_create: { policy_id: string; bucket_id: string };
  grant_bucket_access: { group_ids: string[]; recipient: string; scope: AccessScope };
  share_admin: { group_id: string; member: string };
  unshare: { group_id: string; member: string };
  unshare_bucket_access: { group_id: string; service_signer: string };
}

/** Kinds whose transaction is one table-driven Move call (move-calls.ts), built by this project's builders. */
export type CallKind =
  | "genesis"
  | "create_account"
  | "add_delegate_key"
  | "remove_delegate_key"
  | "deactivate_account"
  | "reactivate_account"
  | "record_blob"
  | "transfer"
  | "mint"
  | "put_object"
  /** the console's bucket policies and access groups (console-model.ts) */
  | ConsoleTxKind;

/** The arguments of each call kind. */
export interface CallArgs extends ConsoleTxArgs {
  genesis: { operator_public_key: string; package_id: string };
  create_account: Record<string, never>;
  add_delegate_key: { account_id: string; public_key: string; label: string };
  remove_delegate_key: { account_id: string; public_key: string };
  deactivate_account: { account_id: string };
  reactivate_account: { account_id: string };
  /** One `record_blob` call per record (a relayer records a batch of memories in one transaction). */
  record_blob: { package_id: string; records: readonly BlobRecordArgs[] };
  transfer: { to: string; token: string; amount: string };
  mint: { to: string; token: string; amount: string };
  put_object: { object: ObjectInput };
}

/** One blob registration of a `record_blob` transaction. */
export interface BlobRecordArgs {
  readonly owner: string;
  readonly blob_id: string;
  readonly namespace: string;
  readonly size: number;
}

/** A Move-style object published by the operator (package objects, Seal key servers, ...). */
export interface ObjectInput {
  readonly object_id: string;
  /** Move type, e.g. `0x…::key_server::KeyServer` or `package`. */
  readonly type: string;
  readonly version: string;
  readonly owner?: ObjectOwner;
  readonly fields: unknown;
  /** base64 BCS of the object's Move contents, when the reader needs it (e.g. Sui core getObject content). */
  readonly bcs?: string;
  readonly dynamic_fields?: readonly DynamicFieldInput[];
}

export interface DynamicFieldInput {
  readonly name: DynamicFieldName;
  /** Move type of the value. */
  readonly value_type: string;
  readonly value: unknown;
  /** base64 BCS of the value. */
  readonly value_bcs?: string;
}
