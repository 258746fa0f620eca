// Given/when/then specs of the blob store's deciders (actors/blobstore/deciders.ts) through the aggregate store over
// an in-memory log: no NATS, no Postgres. The HTTP answers these refusals map to are judged by the black-box tests.
import { describe, expect, it } from "vitest";
import { EVT, newEvent, type BucketState, type KeyState, type ObjectState } from "../schemas/blobstore/events.ts";
import * as decide from "../actors/blobstore/deciders.ts";
import { BUCKET, EXISTS, KEY, OBJECT, UNCONDITIONAL } from "../actors/blobstore/deciders.ts";
import { deciderSpec } from "./support/decider-spec.ts";
import type { BlobstoreError } from "../actors/blobstore/errors.ts";
import { answer, httpError } from "../gateway/blobstore/domain-errors.ts";

const T0 = "2026-11-27T10:00:00.000Z";
const T1 = "2026-11-27T11:00:00.000Z";

const bucket: BucketState = { name: "photos", bucket_id: "b-1", account_id: "acct-a", description: "d", metadata: { k: "v" }, created_at: T0, updated_at: T0 };
const object: ObjectState = {
  object_id: "o1",
  bucket: "photos",
  bucket_id: "b-1",
  account_id: "acct-a",
  key: "a/b.txt",
  blob_id: "blob-1",
  size: 3,
  md5: "aaaa",
  content_type: "text/plain",
  created_at: T0,
  updated_at: T0,
};
const key: KeyState = { key_id: "k1", kind: "api", app_id: "app-1", account_id: "acct-a", hash: "h", prefix: "p", label: null, created_at: T0, revoked_at: null, sealed_secret: null };

describe("buckets", () => {
  const spec = deciderSpec(BUCKET);
  const create = decide.createBucket({ accountId: "acct-a", name: "photos", bucketId: "b-2", description: "d2", metadata: {}, at: T1 });
  const created: BucketState = { name: "photos", bucket_id: "b-2", account_id: "acct-a", description: "d2", metadata: {}, created_at: T1, updated_at: T1 };

  it("a new name is created with the command's generation id and time", () => spec.given().when(create).then([newEvent(EVT.bucketCreated, created)], created));
  it("a name the caller holds already exists", () => spec.given(newEvent(EVT.bucketCreated, bucket)).when(create).thenRejects({ code: "bucket_exists", name: "photos" }));
  it("a name another account holds is taken", () =>
    spec.given(newEvent(EVT.bucketCreated, { ...bucket, account_id: "acct-b" })).when(create).thenRejects({ code: "bucket_name_taken", name: "photos" }));
  it("a deleted name is free again, as a new generation", () =>
    spec
      .given(newEvent(EVT.bucketCreated, bucket), newEvent(EVT.bucketDeleted, { name: "photos", bucket_id: "b-1", account_id: "acct-a", deleted_at: T0 }))
      .when(create)
      .then([newEvent(EVT.bucketCreated, created)]));

  const update = (accountId: string) => decide.updateBucket({ accountId, name: "photos", patch: { description: "new" }, at: T1 });
  it("an update changes what it names and keeps the rest", () => {
    const updated = { ...bucket, description: "new", updated_at: T1 };
    return spec.given(newEvent(EVT.bucketCreated, bucket)).when(update("acct-a")).then([newEvent(EVT.bucketUpdated, updated)], updated);
  });
  it("an update of a missing bucket is not found", () => spec.given().when(update("acct-a")).thenRejects({ code: "bucket_not_found", name: "photos" }));
  it("an update of another account's bucket is not found", () => spec.given(newEvent(EVT.bucketCreated, bucket)).when(update("acct-b")).thenRejects({ code: "bucket_not_found", name: "photos" }));

  const remove = (bucketId: string) => decide.deleteBucket({ accountId: "acct-a", name: "photos", bucketId, at: T1 });
  it("a delete of the checked generation deletes it", () =>
    spec.given(newEvent(EVT.bucketCreated, bucket)).when(remove("b-1")).then([newEvent(EVT.bucketDeleted, { name: "photos", bucket_id: "b-1", account_id: "acct-a", deleted_at: T1 })]));
  it("a delete of a generation recreated meanwhile is not found", () => spec.given(newEvent(EVT.bucketCreated, bucket)).when(remove("b-0")).thenRejects({ code: "bucket_not_found", name: "photos" }));
  it("a delete of a deleted bucket is not found", () =>
    spec
      .given(newEvent(EVT.bucketCreated, bucket), newEvent(EVT.bucketDeleted, { name: "photos", bucket_id: "b-1", account_id: "acct-a", deleted_at: T0 }))
      .when(remove("b-1"))
      .thenRejects({ code: "bucket_not_found", name: "photos" }));
});

describe("objects", () => {
  const spec = deciderSpec(OBJECT);
  const blob = { blobId: "blob-2", size: 5, md5: "bbbb", contentType: "image/png" };
  const write = (pre: decide.Preconditions) => decide.writeObject({ bucket, key: "a/b.txt", objectId: "o1", blob, pre, at: T1 });
  const written: ObjectState = { ...object, blob_id: "blob-2", size: 5, md5: "bbbb", content_type: "image/png", created_at: T1, updated_at: T1 };

  it("an unconditional write overwrites", () => spec.given(newEvent(EVT.blobWritten, object)).when(write(UNCONDITIONAL)).then([newEvent(EVT.blobWritten, written)], written));
  it("If-None-Match: * on an existing key fails", () =>
    spec.given(newEvent(EVT.blobWritten, object)).when(write({ ifNoneMatchAny: true, ifMatch: null })).thenRejects({ code: "precondition_failed", reason: "key_exists" }));
  it("If-None-Match: * on a deleted key writes", () =>
    spec
      .given(newEvent(EVT.blobWritten, object), newEvent(EVT.blobDeleted, { object_id: "o1", bucket: "photos", bucket_id: "b-1", account_id: "acct-a", key: "a/b.txt", blob_id: "blob-1", deleted_at: T0, reason: "deleted" }))
      .when(write({ ifNoneMatchAny: true, ifMatch: null }))
      .then([newEvent(EVT.blobWritten, written)]));
  it("If-Match on a missing key fails", () => spec.given().when(write({ ifNoneMatchAny: false, ifMatch: ["*"] })).thenRejects({ code: "precondition_failed", reason: "key_missing" }));
  it("If-Match with another ETag fails", () =>
    spec.given(newEvent(EVT.blobWritten, object)).when(write({ ifNoneMatchAny: false, ifMatch: ["cccc"] })).thenRejects({ code: "precondition_failed", reason: "etag_mismatch" }));
  it("If-Match listing the current ETag writes", () => spec.given(newEvent(EVT.blobWritten, object)).when(write({ ifNoneMatchAny: false, ifMatch: ["cccc", "aaaa"] })).then([newEvent(EVT.blobWritten, written)]));

  const remove = (pre: decide.Preconditions) => decide.removeObject({ objectId: "o1", key: "a/b.txt", reason: "deleted", pre, at: T1 });
  it("a delete records the blob it releases and why", () =>
    spec
      .given(newEvent(EVT.blobWritten, object))
      .when(remove(UNCONDITIONAL))
      .then([newEvent(EVT.blobDeleted, { object_id: "o1", bucket: "photos", bucket_id: "b-1", account_id: "acct-a", key: "a/b.txt", blob_id: "blob-1", deleted_at: T1, reason: "deleted" })], object));
  it("a delete of a missing key appends nothing and answers null", () => spec.given().when(remove(UNCONDITIONAL)).then([], null));
  it("a delete with a stale If-Match fails", () =>
    spec.given(newEvent(EVT.blobWritten, object)).when(remove({ ifNoneMatchAny: false, ifMatch: ["zzzz"] })).thenRejects({ code: "precondition_failed", reason: "etag_mismatch" }));
});

describe("keys", () => {
  const spec = deciderSpec(KEY);
  const revoke = (expect: decide.RevokeKey["expect"]) => decide.revokeKey({ keyId: "k1", expect, at: T1 });
  const revoked = { ...key, revoked_at: T1 };

  it("revoking a live key of the expected kind and owner revokes it", () =>
    spec.given(newEvent(EVT.keyIssued, key)).when(revoke({ kind: "api", accountId: "acct-a" })).then([newEvent(EVT.keyRevoked, revoked)], { outcome: "revoked", state: revoked }));
  it("revoking a revoked key appends nothing and says so", () =>
    spec.given(newEvent(EVT.keyIssued, key), newEvent(EVT.keyRevoked, revoked)).when(revoke({ kind: "api" })).then([], { outcome: "already_revoked", state: revoked }));
  it("a missing key is not found", () => spec.given().when(revoke({ kind: "api" })).thenRejects({ code: "key_not_found", keyId: "k1" }));
  it("a key of another kind is not found", () => spec.given(newEvent(EVT.keyIssued, key)).when(revoke({ kind: "access" })).thenRejects({ code: "key_not_found", keyId: "k1" }));
  it("another account's key is not found", () =>
    spec.given(newEvent(EVT.keyIssued, key)).when(revoke({ kind: "api", accountId: "acct-b" })).thenRejects({ code: "key_not_found", keyId: "k1" }));
  it("another app's key is not found", () => spec.given(newEvent(EVT.keyIssued, key)).when(revoke({ kind: "api", appId: "app-2" })).thenRejects({ code: "key_not_found", keyId: "k1" }));
});

describe("creates", () => {
  const spec = deciderSpec(EXISTS);
  it("issuing a key with a fresh id appends it", () => spec.given().when(decide.issueKey(key)).then([newEvent(EVT.keyIssued, key)], key));
  it("an id that is taken is refused, not overwritten", () => spec.given(newEvent(EVT.keyIssued, key)).when(decide.issueKey(key)).thenRejects({ code: "already_exists", aggregate: "key k1" }));
  it("an app is created once", () =>
    spec.given(newEvent(EVT.appCreated, { app_id: "app-1", created_at: T0 })).when(decide.createApp({ app_id: "app-1", created_at: T1 })).thenRejects({ code: "already_exists", aggregate: "app app-1" }));
});

describe("each refusal over HTTP", () => {
  const cases: [BlobstoreError, number, string][] = [
    [{ code: "bucket_exists", name: "b" }, 409, "bucket b already exists"],
    [{ code: "bucket_name_taken", name: "b" }, 409, "bucket name b is taken"],
    [{ code: "bucket_not_found", name: "b" }, 404, "bucket b not found"],
    [{ code: "bucket_not_empty", name: "b", blobs: 3 }, 409, "bucket b is not empty (3 blobs); delete its blobs first or pass ?force=true"],
    [{ code: "precondition_failed", reason: "key_exists" }, 412, "precondition failed: the key already exists (If-None-Match: *)"],
    [{ code: "precondition_failed", reason: "key_missing" }, 412, "precondition failed: the key does not exist (If-Match)"],
    [{ code: "precondition_failed", reason: "etag_mismatch" }, 412, "precondition failed: the current ETag does not match (If-Match)"],
    [{ code: "blob_not_found", bucket: "b", key: "k" }, 404, "blob k not found in bucket b"],
    [{ code: "key_not_found", keyId: "k1" }, 404, "key k1 not found"],
    [{ code: "already_exists", aggregate: "key k1" }, 409, "key k1 already exists"],
  ];
  it.each(cases)("%o answers %i", (error, status, message) => {
    const e = httpError(error);
    expect([e.status, e.message]).toEqual([status, message]);
    expect(() => answer({ ok: false, error })).toThrow(message);
  });
  it("a result passes through", () => expect(answer({ ok: true, result: 7 })).toBe(7));
});
