// Given/when/then specs of the console's request decisions: a bucket's (actors/console/bucket.decider.ts, the bucket
// folded from its events by its machine), a file's (file.decider.ts: delete, download, the upload's quota admission) and a
// sponsorship's (sponsor.decider.ts, folded from its events), through the aggregate store over an in-memory log; and
// how each refusal reads in the console's contract (the answers the black-box console-api-* tests assert). No NATS,
// no Postgres.
import { describe, expect, it } from "vitest";
import { EV, consoleEvent, type BucketReserved } from "../schemas/console/events.ts";
import { PLAN_TIERS } from "../schemas/console/http.ts";
import { BUCKET, deleteBucket, finalizeBucket, onMachine, reserveBucket, updateBucket, type SpaceFacts } from "../actors/console/bucket.decider.ts";
import { admitUpload, deleteFile, downloadable } from "../actors/console/file.decider.ts";
import { SPONSOR, executeSponsored, groupPolicy } from "../actors/console/sponsor.decider.ts";
import type { ConsoleError } from "../actors/console/errors.ts";
import { contractError } from "../gateway/console/domain-errors.ts";
import { buildSponsoredTx, txValidUntil } from "../actors/console/chain.ts";
import { localTarget } from "../adapters/chain/local/transaction-data.ts";
import { generateKeypair, toSerializedSignature } from "../adapters/chain/sui/keys.ts";
import { signingDigest } from "../adapters/chain/sui/digest.ts";
import { deciderSpec } from "./support/decider-spec.ts";

const T0 = "2026-11-27T10:00:00.000Z";
const NOW = Date.parse(T0);
const B = "b1";
const service = generateKeypair().keypair;
const other = generateKeypair().keypair;
const sponsor = generateKeypair().keypair;
const tx = buildSponsoredTx({ target: localTarget("spec", "0x2"), kind: "bucket_policy_create", args: { bucket_id: B, space_id: "s1" }, sender: service.address, sponsorAddress: sponsor.address, timestampMs: NOW });
const signedBy = (k: typeof service) => toSerializedSignature(k.sign(signingDigest(Buffer.from(tx.bytes, "base64"))), k.publicKey);

const base = { bucket_id: B, space_id: "s1", name: "photos", storage_bucket_name: "sb-b1", name_claim: "c1", created_by: "u1", created_at: T0 };
const reservation: BucketReserved = { ...base, visibility: "private", tx_bytes: tx.bytes, digest: tx.digest, sender: service.address };
const reserved = consoleEvent(EV.bucketReserved, reservation);
const created = consoleEvent(EV.bucketCreated, { ...base, visibility: "public" });
const finalizeRequested = consoleEvent(EV.bucketFinalizeRequested, { requested_by: "u1" });
const policyCreated = consoleEvent(EV.bucketPolicyCreated, { policy_id: "0xp1", chain_digest: "d", policy: { object_id: "0xp1", type: "t", version: "1", owner: "Immutable", fields: {}, previous_transaction: "d" } });
const activated = consoleEvent(EV.bucketActivated, { activated_at: T0 });
const deleteRequested = consoleEvent(EV.bucketDeleteRequested, { requested_by: "u1", requested_at: T0 });

const spec = deciderSpec(BUCKET, { history: "one commit" });
const on = onMachine;

describe("bucket: reserve within the space's plan", () => {
  const space = (over: Partial<SpaceFacts>): SpaceFacts => ({ tier: "free", plan: PLAN_TIERS.free!, liveBuckets: 0, storageUsed: 0, storageCap: 1000, ...over });
  it("a space under its plan gets the bucket", () => spec.given().when(() => reserveBucket(space({}))).then([], null));
  it("a space at its plan's bucket count is refused", () =>
    spec.given().when(() => reserveBucket(space({ liveBuckets: PLAN_TIERS.free!.buckets }))).thenRejects({ code: "plan_limit", limit: "buckets", tier: "free", allowed: PLAN_TIERS.free!.buckets }));
  it("a space that has used its storage is refused", () => spec.given().when(() => reserveBucket(space({ storageUsed: 1000 }))).thenRejects({ code: "storage_full", tier: "free", cap: 1000 }));
  it("a space with storage left gets the bucket (900 of 1000 bytes)", () => spec.given().when(() => reserveBucket(space({ storageUsed: 900 }))).then([], null));
});

describe("bucket: update", () => {
  it("an active bucket is renamed", () => spec.given(created, activated).when(on(B, updateBucket({ name: "new" }))).then([], { renamed: true, policyChange: false }));
  it("the same name and no policy change nothing", () => spec.given(created, activated).when(on(B, updateBucket({ name: "photos" }))).then([], { renamed: false, policyChange: false }));
  it("a policy on chain replaces the bucket's", () =>
    spec.given(reserved, finalizeRequested, policyCreated, activated).when(on(B, updateBucket({ name: "photos", encryptionPolicyId: "0xp2", policyOnChain: true }))).then([], { renamed: false, policyChange: true }));
  it("the bucket's own policy again is no change (and needs no chain read)", () =>
    spec.given(reserved, finalizeRequested, policyCreated, activated).when(on(B, updateBucket({ name: "photos", encryptionPolicyId: "0xp1" }))).then([], { renamed: false, policyChange: false }));
  it("a policy not on chain is refused", () =>
    spec.given(created, activated).when(on(B, updateBucket({ name: "photos", encryptionPolicyId: "0xp9", policyOnChain: false }))).thenRejects({ code: "unknown_policy", policyId: "0xp9" }));
  it("visibility never changes, whatever the state", async () => {
    await spec.given(created, activated).when(on(B, updateBucket({ name: "photos", visibility: "private" }))).thenRejects({ code: "visibility_immutable" });
    await spec.given(reserved).when(on(B, updateBucket({ name: "photos", visibility: "public" }))).thenRejects({ code: "visibility_immutable" });
  });
  it("a bucket not finalized, still provisioning, deleting or absent is refused", async () => {
    await spec.given(reserved).when(on(B, updateBucket({ name: "x" }))).thenRejects({ code: "bucket_not_finalized" });
    await spec.given(reserved, finalizeRequested).when(on(B, updateBucket({ name: "x" }))).thenRejects({ code: "bucket_not_finalized" });
    await spec.given(created).when(on(B, updateBucket({ name: "x" }))).thenRejects({ code: "bucket_provisioning" });
    await spec.given(created, activated, deleteRequested).when(on(B, updateBucket({ name: "x" }))).thenRejects({ code: "bucket_not_found", bucketId: B });
    await spec.given().when(on(B, updateBucket({ name: "x" }))).thenRejects({ code: "bucket_not_found", bucketId: B });
  });
});

describe("bucket: delete", () => {
  it("an empty active or reserved bucket is deleted", async () => {
    await spec.given(created, activated).when(on(B, deleteBucket({ files: 0 }))).then([], { already: false });
    await spec.given(reserved).when(on(B, deleteBucket({ files: 0 }))).then([], { already: false });
  });
  it("a delete under way answers as done, files or not", () => spec.given(created, activated, deleteRequested).when(on(B, deleteBucket({ files: 3 }))).then([], { already: true }));
  it("a bucket being set up waits", async () => {
    await spec.given(created).when(on(B, deleteBucket({ files: 0 }))).thenRejects({ code: "bucket_setting_up" });
    await spec.given(reserved, finalizeRequested).when(on(B, deleteBucket({ files: 0 }))).thenRejects({ code: "bucket_setting_up" });
  });
  it("a bucket holding files is refused", () => spec.given(created, activated).when(on(B, deleteBucket({ files: 2 }))).thenRejects({ code: "bucket_not_empty", files: 2 }));
});

describe("bucket: finalize", () => {
  const finalize = (signature: string, now = NOW, r: BucketReserved | null = reservation) => on(B, finalizeBucket({ signature, reservation: r, now }));
  it("the service key's signature of the reserved bytes finalizes a pending bucket", () => spec.given(reserved).when(finalize(signedBy(service))).then([], { already: false }));
  it("an active private bucket answers as finalized", () => spec.given(reserved, finalizeRequested, policyCreated, activated).when(finalize("x")).then([], { already: true }));
  it("a public bucket is not finalized", () => spec.given(created, activated).when(finalize(signedBy(service))).thenRejects({ code: "not_private" }));
  it("a bucket finalizing or deleting is in the way", async () => {
    await spec.given(reserved, finalizeRequested).when(finalize(signedBy(service))).thenRejects({ code: "bucket_in_state", state: "finalizing" });
    await spec.given(reserved, deleteRequested).when(finalize(signedBy(service))).thenRejects({ code: "bucket_in_state", state: "deleting" });
  });
  it("another key's signature, or garbage, is refused", async () => {
    await spec.given(reserved).when(finalize(signedBy(other))).thenRejects({ code: "signature_mismatch", sender: service.address });
    await spec.given(reserved).when(finalize("not-a-signature")).thenRejects({ code: "signature_mismatch", sender: service.address });
  });
  it("an expired reservation is refused", () => spec.given(reserved).when(finalize(signedBy(service), txValidUntil(tx.bytes) + 1)).thenRejects({ code: "reservation_expired" }));
  it("a pending bucket without its reservation is refused", () => spec.given(reserved).when(finalize(signedBy(service), NOW, null)).thenRejects({ code: "no_reservation" }));
});

describe("file: delete", () => {
  it("a completed or failed file is deleted", () => {
    expect(deleteFile({ status: "completed" })).toEqual({ ok: true, events: [], result: { already: false } });
    expect(deleteFile({ status: "failed" })).toEqual({ ok: true, events: [], result: { already: false } });
  });
  it("a delete under way or done answers as done", () => {
    expect(deleteFile({ status: "deleting" })).toMatchObject({ ok: true, result: { already: true } });
    expect(deleteFile({ status: "deleted" })).toMatchObject({ ok: true, result: { already: true } });
  });
  it("a file still uploading is refused", () => expect(deleteFile({ status: "uploading" })).toEqual({ ok: false, error: { code: "file_uploading" } }));
});

describe("file: download", () => {
  it("a completed file is read", () => expect(downloadable({ status: "completed", upload_state: "completed" })).toMatchObject({ ok: true }));
  it("a file being deleted or deleted is locked", () => {
    expect(downloadable({ status: "deleting", upload_state: "completed" })).toEqual({ ok: false, error: { code: "file_locked", status: "deleting" } });
    expect(downloadable({ status: "deleted", upload_state: "completed" })).toEqual({ ok: false, error: { code: "file_locked", status: "deleted" } });
  });
  it("a file whose upload has not completed is not read", () => {
    expect(downloadable({ status: "uploading", upload_state: "active" })).toEqual({ ok: false, error: { code: "upload_not_completed", uploadState: "active" } });
    expect(downloadable({ status: "failed", upload_state: "failed" })).toEqual({ ok: false, error: { code: "upload_not_completed", uploadState: "failed" } });
  });
});

describe("file: upload admitted within the space's quota", () => {
  const quota = { used: 600, inFlight: 300, cap: 1000 };
  it("an upload that fits beside the uploads under way is admitted", () => {
    expect(admitUpload(quota, 100)).toEqual({ ok: true, events: [], result: null });
    expect(admitUpload(quota, 0)).toMatchObject({ ok: true });
  });
  it("one byte past the quota, counting the uploads under way, is refused", () => {
    expect(admitUpload(quota, 101)).toEqual({ ok: false, error: { code: "quota_exceeded", cap: 1000 } });
    expect(admitUpload({ ...quota, inFlight: 0 }, 401)).toEqual({ ok: false, error: { code: "quota_exceeded", cap: 1000 } });
  });
});

describe("sponsorship: access groups and execution", () => {
  const facts = { bucket_id: B, state: "active", visibility: "private" as const, name: "photos", encryption_policy_id: "0xp1" };
  it("an active private bucket with its policy gets an access group under that policy", () => expect(groupPolicy(facts)).toMatchObject({ ok: true, result: "0xp1" }));
  it("a public bucket, one not active, or one without a policy is refused", () => {
    expect(groupPolicy({ ...facts, visibility: "public" })).toEqual({ ok: false, error: { code: "group_needs_private_bucket" } });
    expect(groupPolicy({ ...facts, state: "pending_policy" })).toEqual({ ok: false, error: { code: "bucket_not_finalized" } });
    expect(groupPolicy({ ...facts, encryption_policy_id: null })).toEqual({ ok: false, error: { code: "bucket_without_policy" } });
  });

  const sponsored = consoleEvent(EV.sponsorReserved, { digest: tx.digest, kind: "bucket_group_create", tx_bytes: tx.bytes, sender: service.address, key_id: "k1", user_id: "u1", bucket_ids: [B], reserved_at: T0, expires_at: T0 });
  const executed = { chain_digest: "cd", kind: "bucket_group_create" as const, bucket_ids: [B], objects: [], executed_at: T0 };
  const sspec = deciderSpec(SPONSOR, { history: "one commit" });
  const execute = (signature: string, userId = "u1") => executeSponsored({ digest: tx.digest, userId, signature });
  it("the reserving user's service-key signature executes it", () => sspec.given(sponsored).when(execute(signedBy(service))).then([], { executed: null }));
  it("an executed transaction answers with its outcome again", () =>
    sspec.given(sponsored, consoleEvent(EV.sponsorExecuted, executed)).when(execute("x")).then([], { executed }));
  it("after a refused execution another signature may be tried", () =>
    sspec.given(sponsored, consoleEvent(EV.sponsorFailed, { code: "chain_rejected", error: "e" })).when(execute(signedBy(service))).then([], { executed: null }));
  it("unknown, expired, or another user's transaction is unknown", async () => {
    await sspec.given().when(execute(signedBy(service))).thenRejects({ code: "sponsorship_unknown", digest: tx.digest });
    await sspec.given(sponsored).when(execute(signedBy(service), "u2")).thenRejects({ code: "sponsorship_unknown", digest: tx.digest });
    await sspec.given(sponsored, consoleEvent(EV.sponsorExpired, { expired_at: T0 })).when(execute(signedBy(service))).thenRejects({ code: "sponsorship_unknown", digest: tx.digest });
  });
  it("another key's signature is refused", () => sspec.given(sponsored).when(execute(signedBy(other))).thenRejects({ code: "sponsor_signature_mismatch", sender: service.address }));
});

describe("how bucket, file and sponsorship refusals read in the contract", () => {
  const reads = (e: ConsoleError) => {
    const h = contractError(e);
    return { status: h.status, code: h.code, message: h.message };
  };
  it.each([
    [{ code: "plan_limit", limit: "buckets", tier: "free", allowed: 3 }, 422, "PLAN_LIMIT_EXCEEDED", "the free plan allows 3 buckets per space"],
    [{ code: "storage_full", tier: "free", cap: 1000 }, 422, "PLAN_LIMIT_EXCEEDED", "the space has used its 1000 bytes of storage"],
    [{ code: "visibility_immutable" }, 403, "visibility_immutable", "a bucket's visibility cannot be changed"],
    [{ code: "bucket_not_finalized" }, 409, "bucket_not_finalized", "the bucket has not completed finalize"],
    [{ code: "bucket_provisioning" }, 409, "bucket_not_finalized", "the bucket is still being set up; retry shortly"],
    [{ code: "bucket_not_found", bucketId: B }, 404, "not_found", `bucket ${B} not found`],
    [{ code: "bucket_setting_up" }, 409, "conflict", "the bucket is being set up; retry shortly"],
    [{ code: "bucket_in_state", state: "finalizing" }, 409, "conflict", "the bucket is finalizing"],
    [{ code: "bucket_not_empty", files: 2 }, 400, "bad_request", "the bucket is not empty (2 files); delete its files first"],
    [{ code: "unknown_policy", policyId: "0xp9" }, 400, "bad_request", "encryptionPolicyId 0xp9 is not a bucket policy on chain"],
    [{ code: "not_private" }, 400, "bad_request", "only private buckets are finalized"],
    [{ code: "signature_mismatch", sender: "0xs" }, 400, "bad_request", "signature is not a signature of the reserved bytes by the service key 0xs"],
    [{ code: "reservation_expired" }, 400, "bad_request", "the reservation expired: delete the bucket and reserve it again"],
    [{ code: "file_uploading" }, 409, "conflict", "the file is still uploading; delete it once its upload finished"],
    [{ code: "group_needs_private_bucket" }, 400, "bad_request", "access groups belong to private buckets"],
    [{ code: "bucket_without_policy" }, 409, "bucket_not_finalized", "the bucket has no encryption policy"],
    [{ code: "sponsorship_unknown", digest: "D" }, 404, "not_found", "no sponsored transaction D (unknown or expired)"],
    [{ code: "sponsor_signature_mismatch", sender: "0xs" }, 400, "bad_request", "signature is not a signature of the sponsored bytes by the service key 0xs"],
    [{ code: "file_locked", status: "deleting" }, 423, "file_locked", "the file is deleting"],
    [{ code: "upload_not_completed", uploadState: "active" }, 409, "upload_not_completed", "the file's upload is active"],
    [{ code: "quota_exceeded", cap: 1000 }, 422, "quota_exceeded", "the space's storage quota of 1000 bytes would be exceeded"],
  ] as [ConsoleError, number, string, string][])("%o answers %i %s", (e, status, code, message) => expect(reads(e)).toEqual({ status, code, message }));
  it("a bucket still provisioning says when to retry", () => expect(contractError({ code: "bucket_provisioning" }).headers).toEqual({ "retry-after": "1" }));
  it("a plan limit names the limit and the tier", () => {
    expect(contractError({ code: "plan_limit", limit: "buckets", tier: "free", allowed: 3 }).extra).toEqual({ limit: "buckets", currentTier: "free" });
    expect(contractError({ code: "storage_full", tier: "pro", cap: 1 }).extra).toEqual({ limit: "storage", currentTier: "pro" });
  });
});
