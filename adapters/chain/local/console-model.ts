// Transaction kinds of the developer console on the local ledger: bucket policies and their access groups
// (spec/console.md, private buckets and sponsorship). Pure types and constants; the rules are in console-decide.ts.
//
// Objects are Move-style and shared, stored through the ledger's ObjectPut event so the JSON-RPC subset serves them;
// their shapes are the contract's (schemas/chain.ts).
import type { AccessScope } from "../../../schemas/chain.ts";

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

/** Most members or admins one group holds. */
export const MAX_GROUP_MEMBERS = 1_000;

export function isConsoleTxKind(kind: string): kind is ConsoleTxKind {
  return (CONSOLE_TX_KINDS as readonly string[]).includes(kind);
}
