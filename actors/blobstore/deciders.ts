// The blob store's decisions, pure: an aggregate's state and a command in, the events to append (with the result to
// answer) or a domain error out. Ids and the clock come in with the command, so a decision depends on nothing else;
// eventlog/aggregate-store.ts reads the state, appends the events and decides again after a concurrent append.
//
// Events carry the whole state of their aggregate (schemas/blobstore/events.ts), so each fold is "the last event
// says it": a bucket is live after created/updated, an object after written, and gone after anything else.
import { accept, reject, type Decision, type Fold } from "../../eventlog/aggregate-store.ts";
import type { NewEvent } from "../../eventlog/event-store.ts";
import {
  EVT,
  newEvent,
  type AccountState,
  type AppState,
  type BlobstoreEvent,
  type BucketState,
  type KeyKind,
  type KeyState,
  type ObjectState,
  type WalrusObjectState,
} from "../../schemas/blobstore/events.ts";
import type { BlobstoreError, PreconditionFailure } from "./errors.ts";

type Decided<R> = Decision<R, BlobstoreError>;

// ------------------------------------------------------------------ folds

/** Whether an aggregate has any event: what a create decides on (apps, accounts, keys, Walrus objects). */
export const EXISTS: Fold<boolean, BlobstoreEvent> = { initial: false, evolve: () => true };

const keyOf = (e: BlobstoreEvent | null): KeyState | null => (e?.type === EVT.keyIssued || e?.type === EVT.keyRevoked ? e.data : null);
const bucketOf = (e: BlobstoreEvent | null): BucketState | null => (e?.type === EVT.bucketCreated || e?.type === EVT.bucketUpdated ? e.data : null);
const objectOf = (e: BlobstoreEvent | null): ObjectState | null => (e?.type === EVT.blobWritten ? e.data : null);

const lastSays = <S>(of: (e: BlobstoreEvent) => S | null): Fold<S | null, BlobstoreEvent> => ({ initial: null, evolve: (_, e) => of(e) });
export const KEY = lastSays(keyOf);
export const BUCKET = lastSays(bucketOf);
export const OBJECT = lastSays(objectOf);

// ------------------------------------------------------------------ creates

/** Appends `event` to an aggregate that must not exist yet (a fresh id, or an app's first admin key). */
function create<R>(aggregate: string, result: R, event: NewEvent) {
  return (exists: boolean): Decided<R> => (exists ? reject({ code: "already_exists", aggregate }) : accept(result, [event]));
}

export const createApp = (app: AppState) => create(`app ${app.app_id}`, app, newEvent(EVT.appCreated, app));
export const issueKey = (key: KeyState) => create(`key ${key.key_id}`, key, newEvent(EVT.keyIssued, key));
export const createAccount = (account: AccountState) => create(`account ${account.account_id}`, account, newEvent(EVT.accountCreated, account));
export const registerWalrusBlob = (blob: WalrusObjectState) => create(`Walrus blob ${blob.object_id}`, blob, newEvent(EVT.walrusBlobRegistered, blob));

// ------------------------------------------------------------------ keys

export interface RevokeKey {
  readonly keyId: string;
  /** The key must be of this kind and owner; any other key reads as not found. */
  readonly expect: { readonly kind: KeyKind; readonly appId?: string; readonly accountId?: string };
  readonly at: string;
}

export type Revoked = { readonly outcome: "revoked" | "already_revoked"; readonly state: KeyState };

export const revokeKey =
  (c: RevokeKey) =>
  (key: KeyState | null): Decided<Revoked> => {
    if (!key || key.kind !== c.expect.kind || (c.expect.appId && key.app_id !== c.expect.appId) || (c.expect.accountId && key.account_id !== c.expect.accountId)) {
      return reject({ code: "key_not_found", keyId: c.keyId });
    }
    if (key.revoked_at) return accept({ outcome: "already_revoked", state: key });
    const next: KeyState = { ...key, revoked_at: c.at };
    return accept({ outcome: "revoked", state: next }, [newEvent(EVT.keyRevoked, next)]);
  };

// ------------------------------------------------------------------ buckets

export interface CreateBucket {
  readonly accountId: string;
  readonly name: string;
  /** the new generation's id */
  readonly bucketId: string;
  readonly description: string;
  readonly metadata: Record<string, string>;
  readonly at: string;
}

export const createBucket =
  (c: CreateBucket) =>
  (live: BucketState | null): Decided<BucketState> => {
    if (live) return reject({ code: live.account_id === c.accountId ? "bucket_exists" : "bucket_name_taken", name: c.name });
    const created: BucketState = { name: c.name, bucket_id: c.bucketId, account_id: c.accountId, description: c.description, metadata: c.metadata, created_at: c.at, updated_at: c.at };
    return accept(created, [newEvent(EVT.bucketCreated, created)]);
  };

export interface UpdateBucket {
  readonly accountId: string;
  readonly name: string;
  readonly patch: { readonly description?: string; readonly metadata?: Record<string, string> };
  readonly at: string;
}

export const updateBucket =
  (c: UpdateBucket) =>
  (live: BucketState | null): Decided<BucketState> => {
    if (!live || live.account_id !== c.accountId) return reject({ code: "bucket_not_found", name: c.name });
    const updated: BucketState = { ...live, description: c.patch.description ?? live.description, metadata: c.patch.metadata ?? live.metadata, updated_at: c.at };
    return accept(updated, [newEvent(EVT.bucketUpdated, updated)]);
  };

export interface DeleteBucket {
  readonly accountId: string;
  readonly name: string;
  /** the generation the caller checked for emptiness: a bucket recreated meanwhile is another one, not found */
  readonly bucketId: string;
  readonly at: string;
}

export const deleteBucket =
  (c: DeleteBucket) =>
  (live: BucketState | null): Decided<null> => {
    if (!live || live.account_id !== c.accountId || live.bucket_id !== c.bucketId) return reject({ code: "bucket_not_found", name: c.name });
    return accept(null, [newEvent(EVT.bucketDeleted, { name: c.name, bucket_id: live.bucket_id, account_id: c.accountId, deleted_at: c.at })]);
  };

// ------------------------------------------------------------------ objects

export interface Preconditions {
  /** If-None-Match: * */
  readonly ifNoneMatchAny: boolean;
  /** If-Match: list of ETags (md5 hex, unquoted) or "*" */
  readonly ifMatch: readonly string[] | null;
}

export const UNCONDITIONAL: Preconditions = { ifNoneMatchAny: false, ifMatch: null };
export const isConditional = (p: Preconditions) => p.ifNoneMatchAny || p.ifMatch !== null;

/** Why a conditional request fails against the object's current state, null when it may go ahead. */
export function preconditionFailure(current: ObjectState | null, p: Preconditions): PreconditionFailure | null {
  if (p.ifNoneMatchAny && current) return "key_exists";
  if (p.ifMatch) {
    if (!current) return "key_missing";
    if (!p.ifMatch.includes("*") && !p.ifMatch.includes(current.md5)) return "etag_mismatch";
  }
  return null;
}

export interface WriteObject {
  readonly bucket: BucketState;
  readonly key: string;
  /** aggregate id of (bucket generation, key): objectAggregateId */
  readonly objectId: string;
  readonly blob: { readonly blobId: string; readonly size: number; readonly md5: string; readonly contentType: string };
  readonly pre: Preconditions;
  readonly at: string;
}

export const writeObject =
  (c: WriteObject) =>
  (current: ObjectState | null): Decided<ObjectState> => {
    const failed = preconditionFailure(current, c.pre);
    if (failed) return reject({ code: "precondition_failed", reason: failed });
    const state: ObjectState = {
      object_id: c.objectId,
      bucket: c.bucket.name,
      bucket_id: c.bucket.bucket_id,
      account_id: c.bucket.account_id,
      key: c.key,
      blob_id: c.blob.blobId,
      size: c.blob.size,
      md5: c.blob.md5,
      content_type: c.blob.contentType,
      created_at: c.at,
      updated_at: c.at,
    };
    return accept(state, [newEvent(EVT.blobWritten, state)]);
  };

export interface RemoveObject {
  readonly objectId: string;
  readonly key: string;
  readonly reason: "deleted" | "bucket_deleted";
  readonly pre: Preconditions;
  readonly at: string;
}

/** Deletes the object if there is one; the result is the object removed, null when there was none. */
export const removeObject =
  (c: RemoveObject) =>
  (current: ObjectState | null): Decided<ObjectState | null> => {
    const failed = preconditionFailure(current, c.pre);
    if (failed) return reject({ code: "precondition_failed", reason: failed });
    if (!current) return accept(null);
    return accept(current, [
      newEvent(EVT.blobDeleted, {
        object_id: c.objectId,
        bucket: current.bucket,
        bucket_id: current.bucket_id,
        account_id: current.account_id,
        key: c.key,
        blob_id: current.blob_id,
        deleted_at: c.at,
        reason: c.reason,
      }),
    ]);
  };
