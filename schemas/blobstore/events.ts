// Events of the blob storage service (spec/blobstore.md), typed and versioned. Pure types and constructors, no I/O.
//
// Subjects: `evt.bs_<kind>.<id>`, one aggregate per app, key, account, bucket (by name) and blob object. Every event
// carries the full state of its aggregate after the event ("state-carrying events"), so the last event on an
// aggregate's subject is its current state: writers decide against it without loading a history, and projections
// upsert rows from it. Secrets never appear here: keys are stored as BLAKE2s-256 hashes, S3 secrets sealed.
import { createHash } from "node:crypto";
import { eventsOf, type EventOf } from "../envelope.ts";

export const KIND = {
  app: "bs_app",
  key: "bs_key",
  account: "bs_account",
  bucket: "bs_bucket",
  blob: "bs_blob",
} as const;
export type Kind = (typeof KIND)[keyof typeof KIND];

export const aggregateOf = (kind: Kind, id: string) => `${kind}.${id}`;
export const subjectOf = (kind: Kind, id: string) => `evt.${kind}.${id}`;
export const filterOf = (kind: Kind) => `evt.${kind}.>`;

export const EVT = {
  appCreated: "blobstore.app.created",
  keyIssued: "blobstore.key.issued",
  keyRevoked: "blobstore.key.revoked",
  accountCreated: "blobstore.account.created",
  bucketCreated: "blobstore.bucket.created",
  bucketUpdated: "blobstore.bucket.updated",
  bucketDeleted: "blobstore.bucket.deleted",
  blobWritten: "blobstore.blob.written",
  blobDeleted: "blobstore.blob.deleted",
  walrusBlobRegistered: "blobstore.walrus_blob.registered",
} as const;
export type EventType = (typeof EVT)[keyof typeof EVT];

/** Current version of every event type; bump it and add an upcaster when a shape changes. */
export const EVENT_VERSION = 1;

export interface AppState {
  readonly app_id: string;
  readonly created_at: string;
}

export type KeyKind = "admin" | "api" | "access";

export interface KeyState {
  readonly key_id: string;
  readonly kind: KeyKind;
  readonly app_id: string;
  /** null for admin keys */
  readonly account_id: string | null;
  /** lowercase hex BLAKE2s-256 of the secret (for access keys: of the secret access key) */
  readonly hash: string;
  /** first 8 characters of the secret (admin and API keys) or of the access key id */
  readonly prefix: string;
  readonly label: string | null;
  readonly created_at: string;
  readonly revoked_at: string | null;
  /** S3 access keys only: the secret access key sealed (AES-256-GCM) under the service master key, for SigV4. */
  readonly sealed_secret: string | null;
}

export interface AccountState {
  readonly account_id: string;
  readonly app_id: string;
  readonly name: string | null;
  readonly created_at: string;
}

export interface BucketState {
  readonly name: string;
  /** Generation id: a bucket deleted and created again under the same name is a new bucket. */
  readonly bucket_id: string;
  readonly account_id: string;
  readonly description: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly created_at: string;
  readonly updated_at: string;
}

export interface BucketDeleted {
  readonly name: string;
  readonly bucket_id: string;
  readonly account_id: string;
  readonly deleted_at: string;
}

export interface ObjectState {
  readonly object_id: string;
  readonly bucket: string;
  readonly bucket_id: string;
  readonly account_id: string;
  readonly key: string;
  readonly blob_id: string;
  readonly size: number;
  readonly md5: string;
  readonly content_type: string;
  readonly created_at: string;
  readonly updated_at: string;
}

export interface ObjectDeleted {
  readonly object_id: string;
  readonly bucket: string;
  readonly bucket_id: string;
  readonly account_id: string;
  readonly key: string;
  readonly blob_id: string;
  readonly deleted_at: string;
  /** why: "deleted" by the owner, "bucket_deleted" when its bucket went away */
  readonly reason: "deleted" | "bucket_deleted";
}

export interface WalrusObjectState {
  /** Sui-style object id, 0x + 64 hex */
  readonly object_id: string;
  readonly blob_id: string;
  readonly size: number;
  readonly encoding_type: string;
  readonly registered_epoch: number;
  readonly certified_epoch: number;
  readonly end_epoch: number;
  readonly deletable: boolean;
  readonly owner: string;
  readonly storage_id: string;
  readonly storage_size: number;
  readonly created_at: string;
}

export interface EventDataByType {
  [EVT.appCreated]: AppState;
  [EVT.keyIssued]: KeyState;
  [EVT.keyRevoked]: KeyState;
  [EVT.accountCreated]: AccountState;
  [EVT.bucketCreated]: BucketState;
  [EVT.bucketUpdated]: BucketState;
  [EVT.bucketDeleted]: BucketDeleted;
  [EVT.blobWritten]: ObjectState;
  [EVT.blobDeleted]: ObjectDeleted;
  [EVT.walrusBlobRegistered]: WalrusObjectState;
}

/**
 * A blob store event read from the log. Upcasting happens in one place for the whole project: `decodeCommit` passes
 * every event through `schemas/upcasters.ts`, so events read from the log are at their current version (all are v1
 * so far; bump `EVENT_VERSION` and register an upcaster there when a shape changes).
 */
export type BlobstoreEvent = EventOf<EventDataByType>;

export const newEvent = eventsOf<EventDataByType>(Object.fromEntries(Object.values(EVT).map((t) => [t, EVENT_VERSION])) as Record<EventType, number>);

// ------------------------------------------------------------------ aggregate ids

/** Aggregate id of the object at (bucket generation, key): deterministic, so conditional writes race on one subject. */
export function objectAggregateId(bucketId: string, key: string): string {
  return "o" + createHash("sha256").update(bucketId).update("\n").update(key, "utf8").digest("hex");
}

/** Aggregate id of a Walrus blob object (0x + 64 hex). */
export function walrusAggregateId(objectId: string): string {
  return "w" + objectId.slice(2);
}
