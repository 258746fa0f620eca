// What the console's directory, name claims, buckets, files and sponsorships can be refused for, and how each refusal reads in the console's
// contract (spec/console.md): the ConsoleHttpError of schemas/console/http.ts, which the gateway answers with and
// the `memrelay console` command prints, so both present a refusal the same way.
import { CODE, ConsoleHttpError, badRequest, notFound } from "../../schemas/console/http.ts";

export type ClaimScope = "bucket" | "file" | "email";

export type ConsoleError =
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

const TAKEN: Record<ClaimScope, (name: string) => string> = {
  bucket: (name) => `a bucket named ${JSON.stringify(name)} already exists in this space`,
  file: (name) => `a file named ${JSON.stringify(name)} already exists in this bucket`,
  email: (name) => `${name} has already signed up`,
};

/** A sponsored transaction the caller cannot see: unknown, expired, or another user's. */
export const sponsorshipUnknown = (digest: string) => notFound(`no sponsored transaction ${digest} (unknown or expired)`);

export function contractError(e: ConsoleError): ConsoleHttpError {
  switch (e.code) {
    case "name_taken":
      return new ConsoleHttpError(409, TAKEN[e.scope](e.name), CODE.conflict);
    case "space_not_found":
      return new ConsoleHttpError(404, `space ${e.spaceId} not found`, CODE.notFound);
    case "not_a_team_space":
      return badRequest("members are added to team spaces only");
    case "plan_limit":
      return new ConsoleHttpError(422, `the ${e.tier} plan allows ${e.allowed} ${e.limit} per space`, CODE.planLimitExceeded, { limit: e.limit, currentTier: e.tier });
    case "storage_full":
      return new ConsoleHttpError(422, `the space has used its ${e.cap} bytes of storage`, CODE.planLimitExceeded, { limit: "storage", currentTier: e.tier });
    case "last_owner":
      return badRequest("a space keeps at least one owner");
    case "unknown_tier":
      return badRequest(`unknown plan tier ${e.tier} (known: ${e.known.join(", ")})`);
    case "bucket_not_found":
      return notFound(`bucket ${e.bucketId} not found`);
    case "bucket_not_finalized":
      return new ConsoleHttpError(409, "the bucket has not completed finalize", CODE.bucketNotFinalized);
    case "bucket_provisioning":
      return new ConsoleHttpError(409, "the bucket is still being set up; retry shortly", CODE.bucketNotFinalized, {}, { "retry-after": "1" });
    case "bucket_setting_up":
      return new ConsoleHttpError(409, "the bucket is being set up; retry shortly", CODE.conflict);
    case "bucket_in_state":
      return new ConsoleHttpError(409, `the bucket is ${e.state}`, CODE.conflict);
    case "bucket_not_empty":
      return badRequest(`the bucket is not empty (${e.files} files); delete its files first`);
    case "visibility_immutable":
      return new ConsoleHttpError(403, "a bucket's visibility cannot be changed", CODE.visibilityImmutable);
    case "unknown_policy":
      return badRequest(`encryptionPolicyId ${e.policyId} is not a bucket policy on chain`);
    case "not_private":
      return badRequest("only private buckets are finalized");
    case "no_reservation":
      return new ConsoleHttpError(409, "the bucket has no reservation", CODE.conflict);
    case "signature_mismatch":
      return badRequest(`signature is not a signature of the reserved bytes by the service key ${e.sender}`);
    case "reservation_expired":
      return badRequest("the reservation expired: delete the bucket and reserve it again");
    case "file_uploading":
      return new ConsoleHttpError(409, "the file is still uploading; delete it once its upload finished", CODE.conflict);
    case "group_needs_private_bucket":
      return badRequest("access groups belong to private buckets");
    case "bucket_without_policy":
      return new ConsoleHttpError(409, "the bucket has no encryption policy", CODE.bucketNotFinalized);
    case "sponsorship_unknown":
      return sponsorshipUnknown(e.digest);
    case "sponsor_signature_mismatch":
      return badRequest(`signature is not a signature of the sponsored bytes by the service key ${e.sender}`);
    case "file_locked":
      return new ConsoleHttpError(423, `the file is ${e.status}`, CODE.fileLocked);
    case "upload_not_completed":
      return new ConsoleHttpError(409, `the file's upload is ${e.uploadState}`, CODE.uploadNotCompleted);
    case "quota_exceeded":
      return new ConsoleHttpError(422, `the space's storage quota of ${e.cap} bytes would be exceeded`, CODE.quotaExceeded);
  }
}

/** The result, or the refusal thrown as the console's contract error. */
export function orThrow<R>(r: { readonly ok: true; readonly result: R } | { readonly ok: false; readonly error: ConsoleError }): R {
  if (!r.ok) throw contractError(r.error);
  return r.result;
}
