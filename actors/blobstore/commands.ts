// The write side of the blob storage service: each command reads its aggregate's current state from the log,
// decides with a pure decider (deciders.ts), appends with optimistic concurrency through the aggregate store, and
// waits until the read model reflects the append (so the next request, on this or any process sharing the
// database, sees it). What a command is refused for comes back as a BlobstoreError for the caller to present: the
// gateway as HTTP, the operator CLI as text. Shared by the HTTP service and the operator CLI.
import { randomBytes, randomUUID } from "node:crypto";
import type { Db } from "../../db/pool.ts";
import type { Decision, Fold, HandleOptions, Outcome, Result } from "../../eventlog/aggregate-store.ts";
import { KIND, aggregateOf, filterOf, objectAggregateId, walrusAggregateId, type AccountState, type BlobstoreEvent, type BucketState, type Kind, type KeyState, type ObjectState, type WalrusObjectState } from "../../schemas/blobstore/events.ts";
import { newAccessKeyId, newAccessSecret, newKeySecret, hashSecret, type MasterKey } from "./keys.ts";
import type { BlobstoreLog } from "./log.ts";
import type { BlobstoreError } from "./errors.ts";
import * as decide from "./deciders.ts";
import { BUCKET, EXISTS, KEY, OBJECT, UNCONDITIONAL, isConditional, type Preconditions, type RevokeKey, type Revoked } from "./deciders.ts";

export interface Core {
  readonly log: BlobstoreLog;
  readonly db: Db;
  /** Resolves once the read model of `kind` reflects stream sequence `seq`. */
  settle(kind: Kind, seq: number): Promise<void>;
}

type Answer<R> = Promise<Result<R, BlobstoreError>>;

/** The time a command decides at: the service's clock (actors/clock.ts), never read inside a decider. */
const now = (core: Pick<Core, "log">) => core.log.clock.now();

/** Runs a decider on one aggregate through the aggregate store. */
function run<S, R>(core: Core, kind: Kind, id: string, fold: Fold<S, BlobstoreEvent>, decider: (state: S) => Decision<R, BlobstoreError>, opts?: HandleOptions): Promise<Outcome<R, BlobstoreError>> {
  return core.log.store.handle(aggregateOf(kind, id), fold, decider, opts);
}

/** Runs a decider and waits until the read model of `kind` reflects what it appended. */
async function runSettled<S, R>(core: Core, kind: Kind, id: string, fold: Fold<S, BlobstoreEvent>, decider: (state: S) => Decision<R, BlobstoreError>, opts?: HandleOptions): Promise<Outcome<R, BlobstoreError>> {
  const o = await run(core, kind, id, fold, decider, opts);
  if (o.ok && o.seq) await core.settle(kind, o.seq);
  return o;
}

/** Creates are appended as if the aggregate were new (one round trip); one that exists is read and refused. */
const NEW = { assumeNew: true } as const;

/** The result of a create whose id was freshly drawn: a collision is a fault, not an answer. */
function created<R>(o: Outcome<R, BlobstoreError>): R {
  if (!o.ok) throw new Error(`${o.error.code === "already_exists" ? o.error.aggregate : o.error.code}: id collision`);
  return o.result;
}

// ------------------------------------------------------------------ apps and keys

/** Creates the app on first use (operator command: issuing its first admin key); false when it existed. */
export async function ensureApp(core: Core, appId: string): Promise<boolean> {
  const o = await runSettled(core, KIND.app, appId, EXISTS, decide.createApp({ app_id: appId, created_at: now(core) }), NEW);
  return o.ok;
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
    created_at: now(core),
    revoked_at: null,
    sealed_secret: null,
  };
  created(await runSettled(core, KIND.key, state.key_id, EXISTS, decide.issueKey(state), NEW));
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
      created_at: now(core),
      revoked_at: null,
      sealed_secret: master.seal(secret, accessKeyId),
    };
    const o = await runSettled(core, KIND.key, accessKeyId, EXISTS, decide.issueKey(state), NEW);
    if (o.ok) return { state, accessKeyId, secretAccessKey: secret };
    // an access key id is short enough to collide: draw another
  }
}

/** Revokes a key if it matches `expect` (kind and owner); anything else is key_not_found. */
export async function revokeKey(core: Core, keyId: string, expect: RevokeKey["expect"]): Answer<Revoked> {
  return runSettled(core, KIND.key, keyId, KEY, decide.revokeKey({ keyId, expect, at: now(core) }));
}

// ------------------------------------------------------------------ accounts

export async function createAccount(core: Core, appId: string, name: string | null): Promise<{ account: AccountState; key: IssuedKey }> {
  const account: AccountState = { account_id: randomUUID(), app_id: appId, name, created_at: now(core) };
  created(await runSettled(core, KIND.account, account.account_id, EXISTS, decide.createAccount(account), NEW));
  const key = await issueKey(core, { kind: "api", appId, accountId: account.account_id });
  return { account, key };
}

// ------------------------------------------------------------------ buckets

/** A bucket's live generation as the log has it now, null when there is none. */
export const liveBucket = (core: Pick<Core, "log">, name: string): Promise<BucketState | null> => core.log.state(KIND.bucket, name, BUCKET);

export async function createBucket(core: Core, c: Omit<decide.CreateBucket, "bucketId" | "at">): Answer<BucketState> {
  return runSettled(core, KIND.bucket, c.name, BUCKET, decide.createBucket({ ...c, bucketId: randomUUID(), at: now(core) }));
}

export async function updateBucket(core: Core, c: Omit<decide.UpdateBucket, "at">): Answer<BucketState> {
  return runSettled(core, KIND.bucket, c.name, BUCKET, decide.updateBucket({ ...c, at: now(core) }));
}

/**
 * Deletes a bucket. Without `force` it must be empty (bucket_not_empty otherwise); with `force` its blobs are
 * deleted first. After the bucket is gone, any object a concurrent writer added to it is deleted too (the writer
 * checks the bucket again after its own append, so between them no object of a deleted bucket survives).
 */
export async function deleteBucket(core: Core, accountId: string, name: string, force: boolean, countObjects: (bucketId: string) => Promise<number>): Answer<{ deletedBlobs: number }> {
  const pre = await liveBucket(core, name);
  if (!pre || pre.account_id !== accountId) return { ok: false, error: { code: "bucket_not_found", name } };
  await settleAll(core, KIND.blob);
  const n = await countObjects(pre.bucket_id);
  if (n > 0 && !force) return { ok: false, error: { code: "bucket_not_empty", name, blobs: n } };
  const o = await runSettled(core, KIND.bucket, name, BUCKET, decide.deleteBucket({ accountId, name, bucketId: pre.bucket_id, at: now(core) }));
  if (!o.ok) return o;
  return { ok: true, result: { deletedBlobs: await sweepBucketObjects(core, pre.bucket_id) } };
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
    if ((await liveBucket(core, r.bucket))?.bucket_id === r.bucket_id) continue;
    purged += await sweepBucketObjects(core, r.bucket_id);
  }
  return purged;
}

/** Deletes every object still recorded for a deleted bucket generation. */
async function sweepBucketObjects(core: Core, bucketId: string): Promise<number> {
  await settleAll(core, KIND.blob);
  let deleted = 0;
  for (;;) {
    const rows = await core.db.query<{ key: string }>("SELECT key FROM bs_objects WHERE bucket_id = $1 ORDER BY key LIMIT 500", [bucketId]);
    if (!rows.rows.length) return deleted;
    let lastSeq = 0;
    for (const { key } of rows.rows) {
      const o = await removeObject(core, bucketId, key, "bucket_deleted", UNCONDITIONAL);
      if (o.ok && o.result && o.seq) {
        deleted++;
        lastSeq = Math.max(lastSeq, o.seq);
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

/** The object at (bucket generation, key) as the log has it now, null when there is none. */
export const currentObject = (core: Pick<Core, "log">, bucketId: string, key: string): Promise<ObjectState | null> =>
  core.log.state(KIND.blob, objectAggregateId(bucketId, key), OBJECT);

/**
 * Records an object write whose bytes are already stored. A conditional write decides against the object's current
 * state and appends expecting it; an unconditional one is last-writer-wins and appends without reading it.
 */
export async function recordObject(
  core: Core,
  bucket: BucketState,
  key: string,
  blob: decide.WriteObject["blob"],
  pre: Preconditions,
): Answer<{ state: ObjectState; seq: number }> {
  const objectId = objectAggregateId(bucket.bucket_id, key);
  const o = await run(core, KIND.blob, objectId, OBJECT, decide.writeObject({ bucket, key, objectId, blob, pre, at: now(core) }), { blind: !isConditional(pre) });
  if (!o.ok) return o;
  const seq = o.seq!;
  // The bucket may have been deleted while the body streamed in: check after the append, undo if it is gone.
  const [still] = await Promise.all([liveBucket(core, bucket.name), core.settle(KIND.blob, seq)]);
  if (!still || still.bucket_id !== bucket.bucket_id) {
    await removeObject(core, bucket.bucket_id, key, "bucket_deleted", UNCONDITIONAL);
    return { ok: false, error: { code: "bucket_not_found", name: bucket.name } };
  }
  return { ok: true, result: { state: o.result, seq } };
}

function removeObject(core: Core, bucketId: string, key: string, reason: "deleted" | "bucket_deleted", pre: Preconditions): Promise<Outcome<ObjectState | null, BlobstoreError>> {
  const objectId = objectAggregateId(bucketId, key);
  return run(core, KIND.blob, objectId, OBJECT, decide.removeObject({ objectId, key, reason, pre, at: now(core) }));
}

export async function deleteObject(core: Core, bucket: BucketState, key: string, pre: Preconditions): Answer<ObjectState> {
  const o = await removeObject(core, bucket.bucket_id, key, "deleted", pre);
  if (!o.ok) return o;
  if (!o.result || !o.seq) return { ok: false, error: { code: "blob_not_found", bucket: bucket.name, key } };
  await core.settle(KIND.blob, o.seq);
  return { ok: true, result: o.result };
}

// ------------------------------------------------------------------ Walrus blob objects

export const newSuiObjectId = () => "0x" + randomBytes(32).toString("hex");

export async function registerWalrusBlob(core: Core, input: Omit<WalrusObjectState, "object_id" | "storage_id" | "created_at">): Promise<WalrusObjectState> {
  const state: WalrusObjectState = { ...input, object_id: newSuiObjectId(), storage_id: newSuiObjectId(), created_at: now(core) };
  return created(await runSettled(core, KIND.blob, walrusAggregateId(state.object_id), EXISTS, decide.registerWalrusBlob(state), NEW));
}

// ------------------------------------------------------------------ the service's command set

/**
 * The blob store's commands bound to one service: what the gateway's routes dispatch to once they have parsed and
 * authorized a request. Every decision is a decider's (deciders.ts), made through the aggregate store; refusals come
 * back as BlobstoreError for the gateway to map (gateway/blobstore/domain-errors.ts). Composed in runtime/blobstore.ts.
 */
export function blobstoreCommands(core: Core, master: MasterKey, countObjects: (bucketId: string) => Promise<number>) {
  return {
    createAccount: (appId: string, name: string | null) => createAccount(core, appId, name),
    issueApiKey: (input: { appId: string; accountId: string; label: string | null }) => issueKey(core, { kind: "api", ...input }),
    issueAccessKey: (input: { appId: string; accountId: string }) => issueAccessKey(core, master, input),
    revokeKey: (keyId: string, expect: RevokeKey["expect"]) => revokeKey(core, keyId, expect),
    createBucket: (c: Omit<decide.CreateBucket, "bucketId" | "at">) => createBucket(core, c),
    updateBucket: (c: Omit<decide.UpdateBucket, "at">) => updateBucket(core, c),
    deleteBucket: (accountId: string, name: string, force: boolean) => deleteBucket(core, accountId, name, force, countObjects),
    liveBucket: (name: string) => liveBucket(core, name),
    currentObject: (bucketId: string, key: string) => currentObject(core, bucketId, key),
    /** A conditional write's preconditions against the object as it is now: checked before the body is read (the append checks again). */
    precheckWrite: async (bucket: BucketState, key: string, pre: Preconditions): Answer<null> => {
      const failed = isConditional(pre) ? decide.preconditionFailure(await currentObject(core, bucket.bucket_id, key), pre) : null;
      return failed ? { ok: false, error: { code: "precondition_failed", reason: failed } } : { ok: true, result: null };
    },
    recordObject: (bucket: BucketState, key: string, blob: decide.WriteObject["blob"], pre: Preconditions) => recordObject(core, bucket, key, blob, pre),
    deleteObject: (bucket: BucketState, key: string, pre: Preconditions) => deleteObject(core, bucket, key, pre),
    registerWalrusBlob: (input: Omit<WalrusObjectState, "object_id" | "storage_id" | "created_at">) => registerWalrusBlob(core, input),
  };
}
export type BlobstoreCommands = ReturnType<typeof blobstoreCommands>;
