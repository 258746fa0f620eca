// The write side of the blob storage service: each operation reads its aggregate's current state from the log,
// decides, appends with optimistic concurrency, and waits until the read model reflects the append (so the next
// request, on this or any process sharing the database, sees it). Shared by the HTTP service and the operator CLI.
import { randomBytes, randomUUID } from "node:crypto";
import { HttpError } from "../../schemas/http-error.ts";
import type { Db } from "../../db/pool.ts";
import {
  EVT,
  KIND,
  filterOf,
  newEvent,
  objectAggregateId,
  walrusAggregateId,
  type AccountState,
  type BucketState,
  type Kind,
  type KeyKind,
  type KeyState,
  type ObjectState,
  type WalrusObjectState,
} from "../../schemas/blobstore/events.ts";
import { newAccessKeyId, newAccessSecret, newKeySecret, hashSecret, type MasterKey } from "./keys.ts";
import type { BlobstoreLog, Last } from "./log.ts";

export interface Core {
  readonly log: BlobstoreLog;
  readonly db: Db;
  /** Resolves once the read model of `kind` reflects stream sequence `seq`. */
  settle(kind: Kind, seq: number): Promise<void>;
}

const ctx = () => ({ correlationId: randomUUID() });
const now = () => new Date().toISOString();

// ------------------------------------------------------------------ apps and keys

/** Creates the app on first use (operator command: issuing its first admin key). */
export async function ensureApp(core: Core, appId: string): Promise<boolean> {
  const seq = await core.log.create(KIND.app, appId, [newEvent(EVT.appCreated, { app_id: appId, created_at: now() })], ctx());
  if (seq) await core.settle(KIND.app, seq);
  return seq !== null;
}

export interface IssuedKey {
  readonly state: KeyState;
  /** The secret, shown once. */
  readonly secret: string;
}

export async function issueKey(core: Core, input: { kind: "admin" | "api"; appId: string; accountId: string | null; label?: string | null }): Promise<IssuedKey> {
  const s = newKeySecret();
  const state: KeyState = {
    key_id: randomUUID(),
    kind: input.kind,
    app_id: input.appId,
    account_id: input.accountId,
    hash: s.hash,
    prefix: s.prefix,
    label: input.label ?? null,
    created_at: now(),
    revoked_at: null,
    sealed_secret: null,
  };
  const seq = await core.log.create(KIND.key, state.key_id, [newEvent(EVT.keyIssued, state)], ctx());
  if (!seq) throw new Error("key id collision");
  await core.settle(KIND.key, seq);
  return { state, secret: s.secret };
}

export interface IssuedAccessKey {
  readonly state: KeyState;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

export async function issueAccessKey(core: Core, master: MasterKey, input: { appId: string; accountId: string }): Promise<IssuedAccessKey> {
  for (;;) {
    const accessKeyId = newAccessKeyId();
    const secret = newAccessSecret();
    const state: KeyState = {
      key_id: accessKeyId,
      kind: "access",
      app_id: input.appId,
      account_id: input.accountId,
      hash: hashSecret(secret),
      prefix: accessKeyId.slice(0, 8),
      label: null,
      created_at: now(),
      revoked_at: null,
      sealed_secret: master.seal(secret, accessKeyId),
    };
    const seq = await core.log.create(KIND.key, accessKeyId, [newEvent(EVT.keyIssued, state)], ctx());
    if (!seq) continue; // id collision: draw another
    await core.settle(KIND.key, seq);
    return { state, accessKeyId, secretAccessKey: secret };
  }
}

export type RevokeResult = { outcome: "revoked" | "already_revoked"; state: KeyState } | { outcome: "not_found" };

/** Revokes a key if it matches `expect` (kind and owner); anything else reads as not found. */
export async function revokeKey(core: Core, keyId: string, expect: { kind: KeyKind; appId?: string; accountId?: string }): Promise<RevokeResult> {
  let result: RevokeResult = { outcome: "not_found" };
  const r = await core.log.decide(
    KIND.key,
    keyId,
    (last) => {
      const st = keyState(last);
      if (!st || st.kind !== expect.kind || (expect.appId && st.app_id !== expect.appId) || (expect.accountId && st.account_id !== expect.accountId)) {
        result = { outcome: "not_found" };
        return [];
      }
      if (st.revoked_at) {
        result = { outcome: "already_revoked", state: st };
        return [];
      }
      const next: KeyState = { ...st, revoked_at: now() };
      result = { outcome: "revoked", state: next };
      return [newEvent(EVT.keyRevoked, next)];
    },
    ctx(),
  );
  if (r) await core.settle(KIND.key, r.seq);
  return result;
}

export function keyState(last: Last | null): KeyState | null {
  if (!last) return null;
  const e = last.event;
  return e.type === EVT.keyIssued || e.type === EVT.keyRevoked ? e.data : null;
}

// ------------------------------------------------------------------ accounts

export async function createAccount(core: Core, appId: string, name: string | null): Promise<{ account: AccountState; key: IssuedKey }> {
  const account: AccountState = { account_id: randomUUID(), app_id: appId, name, created_at: now() };
  const seq = await core.log.create(KIND.account, account.account_id, [newEvent(EVT.accountCreated, account)], ctx());
  if (!seq) throw new Error("account id collision");
  await core.settle(KIND.account, seq);
  const key = await issueKey(core, { kind: "api", appId, accountId: account.account_id });
  return { account, key };
}

// ------------------------------------------------------------------ buckets

export function liveBucket(last: Last | null): BucketState | null {
  if (!last) return null;
  const e = last.event;
  return e.type === EVT.bucketCreated || e.type === EVT.bucketUpdated ? e.data : null;
}

export async function createBucket(core: Core, accountId: string, name: string, description: string, metadata: Record<string, string>): Promise<BucketState> {
  let created: BucketState | undefined;
  const r = await core.log.decide(
    KIND.bucket,
    name,
    (last) => {
      const live = liveBucket(last);
      if (live) throw new HttpError(409, live.account_id === accountId ? `bucket ${name} already exists` : `bucket name ${name} is taken`);
      const t = now();
      created = { name, bucket_id: randomUUID(), account_id: accountId, description, metadata, created_at: t, updated_at: t };
      return [newEvent(EVT.bucketCreated, created)];
    },
    ctx(),
  );
  await core.settle(KIND.bucket, r!.seq);
  return created!;
}

export async function updateBucket(core: Core, accountId: string, name: string, patch: { description?: string; metadata?: Record<string, string> }): Promise<BucketState> {
  let updated: BucketState | undefined;
  const r = await core.log.decide(
    KIND.bucket,
    name,
    (last) => {
      const live = liveBucket(last);
      if (!live || live.account_id !== accountId) throw new HttpError(404, `bucket ${name} not found`);
      updated = { ...live, description: patch.description ?? live.description, metadata: patch.metadata ?? live.metadata, updated_at: now() };
      return [newEvent(EVT.bucketUpdated, updated)];
    },
    ctx(),
  );
  await core.settle(KIND.bucket, r!.seq);
  return updated!;
}

/**
 * Deletes a bucket. Without `force` it must be empty (409 otherwise); with `force` its blobs are deleted first.
 * After the bucket is gone, any object a concurrent writer added to it is deleted too (the writer checks the bucket
 * again after its own append, so between them no object of a deleted bucket survives).
 */
export async function deleteBucket(core: Core, accountId: string, name: string, force: boolean, countObjects: (bucketId: string) => Promise<number>): Promise<{ deletedBlobs: number }> {
  const pre = liveBucket(await core.log.last(KIND.bucket, name));
  if (!pre || pre.account_id !== accountId) throw new HttpError(404, `bucket ${name} not found`);
  await settleAll(core, KIND.blob);
  const n = await countObjects(pre.bucket_id);
  if (n > 0 && !force) throw new HttpError(409, `bucket ${name} is not empty (${n} blobs); delete its blobs first or pass ?force=true`);
  const r = await core.log.decide(
    KIND.bucket,
    name,
    (last) => {
      const live = liveBucket(last);
      if (!live || live.account_id !== accountId || live.bucket_id !== pre.bucket_id) throw new HttpError(404, `bucket ${name} not found`);
      return [newEvent(EVT.bucketDeleted, { name, bucket_id: live.bucket_id, account_id: accountId, deleted_at: now() })];
    },
    ctx(),
  );
  await core.settle(KIND.bucket, r!.seq);
  const deletedBlobs = await sweepBucketObjects(core, pre);
  return { deletedBlobs };
}

/**
 * Deletes objects left in bucket generations that no longer exist (a process that died between appending a write
 * and undoing it when its bucket had gone). Reads them invisible already; this releases their references.
 */
export async function purgeOrphanObjects(core: Core): Promise<number> {
  await settleAll(core, KIND.bucket);
  await settleAll(core, KIND.blob);
  const rows = await core.db.query<{ bucket: string; bucket_id: string; account_id: string }>(
    `SELECT DISTINCT o.bucket, o.bucket_id, o.account_id FROM bs_objects o
     WHERE NOT EXISTS (SELECT 1 FROM bs_buckets b WHERE b.bucket_id = o.bucket_id) LIMIT 100`,
  );
  let purged = 0;
  for (const r of rows.rows) {
    if (liveBucket(await core.log.last(KIND.bucket, r.bucket))?.bucket_id === r.bucket_id) continue;
    const t = now();
    purged += await sweepBucketObjects(core, { name: r.bucket, bucket_id: r.bucket_id, account_id: r.account_id, description: "", metadata: {}, created_at: t, updated_at: t });
  }
  return purged;
}

/** Deletes every object still recorded for a deleted bucket generation. */
async function sweepBucketObjects(core: Core, bucket: BucketState): Promise<number> {
  await settleAll(core, KIND.blob);
  let deleted = 0;
  for (;;) {
    const rows = await core.db.query<{ key: string }>("SELECT key FROM bs_objects WHERE bucket_id = $1 ORDER BY key LIMIT 500", [bucket.bucket_id]);
    if (!rows.rows.length) return deleted;
    let lastSeq = 0;
    for (const { key } of rows.rows) {
      const r = await removeObject(core, bucket, key, "bucket_deleted");
      if (r) {
        deleted++;
        lastSeq = Math.max(lastSeq, r.seq);
      }
    }
    if (lastSeq) await core.settle(KIND.blob, lastSeq);
    else return deleted;
  }
}

async function settleAll(core: Core, kind: Kind): Promise<void> {
  const seq = await core.log.lastSeq(filterOf(kind));
  if (seq) await core.settle(kind, seq);
}

// ------------------------------------------------------------------ blobs

export function liveObject(last: Last | null): ObjectState | null {
  if (!last) return null;
  return last.event.type === EVT.blobWritten ? last.event.data : null;
}

export interface Preconditions {
  /** If-None-Match: * */
  readonly ifNoneMatchAny: boolean;
  /** If-Match: list of ETags (md5 hex, unquoted) or "*" */
  readonly ifMatch: readonly string[] | null;
}

export function checkPreconditions(current: ObjectState | null, p: Preconditions): void {
  if (p.ifNoneMatchAny && current) throw new HttpError(412, "precondition failed: the key already exists (If-None-Match: *)");
  if (p.ifMatch) {
    if (!current) throw new HttpError(412, "precondition failed: the key does not exist (If-Match)");
    if (!p.ifMatch.includes("*") && !p.ifMatch.includes(current.md5)) throw new HttpError(412, "precondition failed: the current ETag does not match (If-Match)");
  }
}

/**
 * Records an object write whose bytes are already stored. A conditional write decides against the object's current
 * state and appends expecting it; an unconditional one is last-writer-wins and appends without reading it.
 */
export async function recordObject(
  core: Core,
  bucket: BucketState,
  key: string,
  blob: { blobId: string; size: number; md5: string; contentType: string },
  pre: Preconditions,
): Promise<{ state: ObjectState; seq: number }> {
  const objectId = objectAggregateId(bucket.bucket_id, key);
  const make = (): ObjectState => {
    const t = now();
    return {
      object_id: objectId,
      bucket: bucket.name,
      bucket_id: bucket.bucket_id,
      account_id: bucket.account_id,
      key,
      blob_id: blob.blobId,
      size: blob.size,
      md5: blob.md5,
      content_type: blob.contentType,
      created_at: t,
      updated_at: t,
    };
  };
  let state: ObjectState | undefined;
  let seq: number;
  if (pre.ifNoneMatchAny || pre.ifMatch) {
    const r = await core.log.decide(
      KIND.blob,
      objectId,
      (last) => {
        checkPreconditions(liveObject(last), pre);
        state = make();
        return [newEvent(EVT.blobWritten, state)];
      },
      ctx(),
    );
    seq = r!.seq;
  } else {
    state = make();
    seq = await core.log.appendAny(KIND.blob, objectId, [newEvent(EVT.blobWritten, state)], ctx());
  }
  // The bucket may have been deleted while the body streamed in: check after the append, undo if it is gone.
  const [latest] = await Promise.all([core.log.last(KIND.bucket, bucket.name), core.settle(KIND.blob, seq)]);
  const still = liveBucket(latest);
  if (!still || still.bucket_id !== bucket.bucket_id) {
    await removeObject(core, bucket, key, "bucket_deleted");
    throw new HttpError(404, `bucket ${bucket.name} not found`);
  }
  return { state: state!, seq };
}

async function removeObject(core: Core, bucket: BucketState, key: string, reason: "deleted" | "bucket_deleted", pre?: Preconditions): Promise<{ seq: number; state: ObjectState } | null> {
  const objectId = objectAggregateId(bucket.bucket_id, key);
  let removed: ObjectState | null = null;
  const r = await core.log.decide(
    KIND.blob,
    objectId,
    (last) => {
      const current = liveObject(last);
      if (pre) checkPreconditions(current, pre);
      removed = current;
      if (!current) return [];
      return [
        newEvent(EVT.blobDeleted, {
          object_id: objectId,
          bucket: current.bucket,
          bucket_id: current.bucket_id,
          account_id: current.account_id,
          key,
          blob_id: current.blob_id,
          deleted_at: now(),
          reason,
        }),
      ];
    },
    ctx(),
  );
  return r && removed ? { seq: r.seq, state: removed } : null;
}

export async function deleteObject(core: Core, bucket: BucketState, key: string, pre: Preconditions): Promise<ObjectState> {
  const r = await removeObject(core, bucket, key, "deleted", pre);
  if (!r) throw new HttpError(404, `blob ${key} not found in bucket ${bucket.name}`);
  await core.settle(KIND.blob, r.seq);
  return r.state;
}

// ------------------------------------------------------------------ Walrus blob objects

export const newSuiObjectId = () => "0x" + randomBytes(32).toString("hex");

export async function registerWalrusBlob(core: Core, input: Omit<WalrusObjectState, "object_id" | "storage_id" | "created_at">): Promise<WalrusObjectState> {
  const state: WalrusObjectState = { ...input, object_id: newSuiObjectId(), storage_id: newSuiObjectId(), created_at: now() };
  const seq = await core.log.create(KIND.blob, walrusAggregateId(state.object_id), [newEvent(EVT.walrusBlobRegistered, state)], ctx());
  if (!seq) throw new Error("object id collision");
  await core.settle(KIND.blob, seq);
  return state;
}
