// What the console's directory, name claims, buckets, files and sponsorships can be refused for: decisions, in the
// domain's words. How each reads in the console's contract (spec/console.md) is the edges' business:
// gateway/console/domain-errors.ts, which the gateway answers with and the `memrelay console` command prints.

export type ClaimScope = "bucket" | "file" | "email";

export type ConsoleError =
  /** input the directory cannot take (the message says which rule) */
  | { readonly code: "invalid_input"; readonly message: string }
  | { readonly code: "user_not_found"; readonly userId: string }
  | { readonly code: "key_not_found"; readonly keyId: string }
  /** another owner holds the name */
  | { readonly code: "name_taken"; readonly scope: ClaimScope; readonly name: string }
  | { readonly code: "space_not_found"; readonly spaceId: string }
  | { readonly code: "not_a_team_space"; readonly spaceId: string }
  | { readonly code: "plan_limit"; readonly limit: "users" | "buckets"; readonly tier: string; readonly allowed: number }
  | { readonly code: "storage_full"; readonly tier: string; readonly cap: number }
  | { readonly code: "last_owner"; readonly spaceId: string }
  | { readonly code: "unknown_tier"; readonly tier: string; readonly known: readonly string[] }
  // buckets (actors/console/bucket.decider.ts)
  | { readonly code: "bucket_not_found"; readonly bucketId: string }
  /** reserved or finalizing: the client has not completed finalize */
  | { readonly code: "bucket_not_finalized" }
  /** the blob-store bucket is being created: a moment away from active */
  | { readonly code: "bucket_provisioning" }
  /** finalizing or provisioning, where a delete must wait */
  | { readonly code: "bucket_setting_up" }
  | { readonly code: "bucket_in_state"; readonly state: string }
  | { readonly code: "bucket_not_empty"; readonly files: number }
  | { readonly code: "visibility_immutable" }
  | { readonly code: "unknown_policy"; readonly policyId: string }
  | { readonly code: "not_private" }
  | { readonly code: "no_reservation" }
  | { readonly code: "signature_mismatch"; readonly sender: string }
  | { readonly code: "reservation_expired" }
  // files
  | { readonly code: "file_uploading" }
  | { readonly code: "quota_exceeded"; readonly cap: number }
  | { readonly code: "file_locked"; readonly status: string }
  | { readonly code: "upload_not_completed"; readonly uploadState: string }
  // sponsorships (actors/console/sponsor.decider.ts)
  | { readonly code: "group_needs_private_bucket" }
  | { readonly code: "bucket_without_policy" }
  | { readonly code: "sponsorship_unknown"; readonly digest: string }
  | { readonly code: "sponsor_signature_mismatch"; readonly sender: string };

/** A refusal thrown by the console's commands; the edges (gateway/console/domain-errors.ts) say it in the contract. */
export class ConsoleRefusal extends Error {
  constructor(readonly error: ConsoleError) {
    super(`console refusal: ${error.code}`);
  }
}

/** The result, or the refusal thrown as a ConsoleRefusal. */
export function orThrow<R>(r: { readonly ok: true; readonly result: R } | { readonly ok: false; readonly error: ConsoleError }): R {
  if (!r.ok) throw new ConsoleRefusal(r.error);
  return r.result;
}
