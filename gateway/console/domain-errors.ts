// How a console refusal (actors/console/errors.ts) reads in the console's contract (spec/console.md): status, code,
// message and headers. The gateway answers with it; `memrelay console` prints the same words.
import { CODE, ConsoleHttpError, badRequest, notFound } from "../../schemas/console/http.ts";
import { ConsoleRefusal, type ClaimScope, type ConsoleError } from "../../actors/console/errors.ts";

const TAKEN: Record<ClaimScope, (name: string) => string> = {
  bucket: (name) => `a bucket named ${JSON.stringify(name)} already exists in this space`,
  file: (name) => `a file named ${JSON.stringify(name)} already exists in this bucket`,
  email: (name) => `${name} has already signed up`,
};

/** A sponsored transaction the caller cannot see: unknown, expired, or another user's. */
export const sponsorshipUnknown = (digest: string) => notFound(`no sponsored transaction ${digest} (unknown or expired)`);

export function contractError(e: ConsoleError): ConsoleHttpError {
  switch (e.code) {
    case "invalid_input":
      return badRequest(e.message);
    case "user_not_found":
      return new ConsoleHttpError(404, `user ${e.userId} not found`, CODE.notFound);
    case "key_not_found":
      return new ConsoleHttpError(404, `API key ${e.keyId} not found`, CODE.notFound);
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

/** A thrown refusal as the contract's error; anything else unchanged. */
export const inContract = (err: unknown): unknown => (err instanceof ConsoleRefusal ? contractError(err.error) : err);
