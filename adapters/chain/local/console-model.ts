// Transaction kinds of the developer console on the local ledger: bucket policies and their access groups
// (spec/console.md, private buckets and sponsorship). Pure types and constants; the rules are in console-decide.ts.
//
// Objects are Move-style and shared, stored through the ledger's ObjectPut event so the JSON-RPC subset serves them:
//   BucketPolicy  {id, bucket_id, space_id, admins[], groups[]}       one per private bucket (its encryption policy)
//   AccessGroup   {id, bucket_id, policy_id, admins[], members[]}     members: {address, scope: read | readwrite}

export const CONSOLE_TX_KINDS = [
  "bucket_policy_create",
  "bucket_group_create",
  "grant_bucket_access",
  "share_admin",
  "unshare",
  "unshare_bucket_access",
] as const;

export type ConsoleTxKind = (typeof CONSOLE_TX_KINDS)[number];

export type AccessScope = "read" | "readwrite";

export interface ConsoleTxArgs {
  bucket_policy_create: { bucket_id: string; space_id: string };
  bucket_group_create: { policy_id: string; bucket_id: string };
  grant_bucket_access: { group_ids: string[]; recipient: string; scope: AccessScope };
  share_admin: { group_id: string; member: string };
  unshare: { group_id: string; member: string };
  unshare_bucket_access: { group_id: string; service_signer: string };
}

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

export const bucketPolicyType = (packageId: string) => `${packageId}::bucket_policy::BucketPolicy`;
export const accessGroupType = (packageId: string) => `${packageId}::bucket_policy::AccessGroup`;

/** Most groups one grant may touch. */
export const MAX_GRANT_GROUPS = 16;
/** Most members or admins one group holds. */
export const MAX_GROUP_MEMBERS = 1_000;

export function isConsoleTxKind(kind: string): kind is ConsoleTxKind {
  return (CONSOLE_TX_KINDS as readonly string[]).includes(kind);
}
