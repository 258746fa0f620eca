// Commands and events of the developer console (spec/console.md). Pure types and constants, no I/O.
//
// Subjects: `evt.console.<type>.<id>` and `cmd.console.<type>.<id>`, so one projection follows the whole console
// with the single filter `evt.console.>` (nats-server 2.9 allows one filter per consumer). Aggregates:
//   console.user    users (sign-up creates the personal space)          state-carrying events, written directly
//   console.space   spaces with members and roles                       state-carrying events, written directly
//   console.claim   unique names (bucket names per space, file names per bucket), held and released
//   console.key     API key lifecycle: registering → active → revoking → revoked        (actor)
//   console.bucket  bucket lifecycle, public and private (reserve/sign/finalize)        (actor)
//   console.upload  upload job: queued → active → completed | failed                    (actor)
//   console.file    file lifecycle from DELETE: completed → deleting → deleted          (actor)
//   console.sponsor sponsored access-policy transaction: reserved → executed | failed   (actor)
// Events carry ids, names, sizes, hashes, addresses and states. Never secrets: API keys appear only as BLAKE2s-256
// hashes, service keys only as addresses.
import type { StoredObject } from "../chain.ts";
import type { AccessScope } from "../chain.ts";
import { eventsOf, isEventOf, type EventOf, type MachineEventOf, type NewEventOf } from "../envelope.ts";

export const AGG = {
  user: "console.user",
  space: "console.space",
  claim: "console.claim",
  key: "console.key",
  bucket: "console.bucket",
  upload: "console.upload",
  file: "console.file",
  sponsor: "console.sponsor",
} as const;
export type AggregateType = (typeof AGG)[keyof typeof AGG];

export const CONSOLE_EVENTS_FILTER = "evt.console.>";

export const EV = {
  userSignedUp: "console.user.signed_up",
  spaceCreated: "console.space.created",
  spaceMemberAdded: "console.space.member_added",
  spaceMemberRemoved: "console.space.member_removed",
  claimHeld: "console.claim.held",
  claimReleased: "console.claim.released",
  keyMinted: "console.key.minted",
  keyActivated: "console.key.activated",
  keyRejected: "console.key.rejected",
  keyRevokeRequested: "console.key.revoke_requested",
  keyRevoked: "console.key.revoked",
  bucketCreated: "console.bucket.created",
  bucketReserved: "console.bucket.reserved",
  bucketFinalizeRequested: "console.bucket.finalize_requested",
  bucketFinalizeFailed: "console.bucket.finalize_failed",
  bucketPolicyCreated: "console.bucket.policy_created",
  bucketActivated: "console.bucket.activated",
  bucketUpdated: "console.bucket.updated",
  bucketDeleteRequested: "console.bucket.delete_requested",
  bucketDeleted: "console.bucket.deleted",
  uploadQueued: "console.upload.queued",
  uploadStarted: "console.upload.started",
  uploadCompleted: "console.upload.completed",
  uploadFailed: "console.upload.failed",
  uploadCleaned: "console.upload.cleaned",
  uploadChecksSeen: "console.upload.checks_seen",
  fileDeleteRequested: "console.file.delete_requested",
  fileDeleted: "console.file.deleted",
  sponsorReserved: "console.sponsor.reserved",
  sponsorExecuteRequested: "console.sponsor.execute_requested",
  sponsorExecuted: "console.sponsor.executed",
  sponsorFailed: "console.sponsor.failed",
  sponsorExpired: "console.sponsor.expired",
} as const;

export const CMD = {
  keyMint: "console.key.mint",
  keyRevoke: "console.key.revoke",
  bucketCreate: "console.bucket.create",
  bucketReserve: "console.bucket.reserve",
  bucketFinalize: "console.bucket.finalize",
  bucketUpdate: "console.bucket.update",
  bucketDelete: "console.bucket.delete",
  uploadStart: "console.upload.start",
  fileDelete: "console.file.delete",
  sponsorReserve: "console.sponsor.reserve",
  sponsorExecute: "console.sponsor.execute",
} as const;

// ------------------------------------------------------------------ directory: users, spaces, claims

export type SpaceType = "personal" | "team";
export type SpaceRole = "owner" | "admin" | "member";

export interface UserState {
  readonly user_id: string;
  readonly email: string;
  readonly name: string;
  readonly personal_space_id: string;
  readonly created_at: string;
}

export interface SpaceMember {
  readonly user_id: string;
  readonly role: SpaceRole;
  readonly added_at: string;
}

/** Space events carry the whole space after the change. */
export interface SpaceState {
  readonly space_id: string;
  readonly type: SpaceType;
  readonly name: string;
  readonly tier: string;
  /** bytes */
  readonly storage_cap: number;
  readonly members: readonly SpaceMember[];
  readonly created_at: string;
}

export interface ClaimHeld {
  readonly owner_id: string;
  readonly name: string;
}
export interface ClaimReleased {
  readonly owner_id: string;
}

// ------------------------------------------------------------------ keys

export type KeyRole = "read_write" | "read_only";
export type KeyState = "registering" | "active" | "revoking" | "revoked";

export interface KeyMinted {
  readonly key_id: string;
  readonly user_id: string;
  readonly role: KeyRole;
  /** lowercase hex BLAKE2s-256 of the key */
  readonly hash: string;
  readonly prefix: string;
  readonly label: string | null;
  /** restricts the key to one space; null: every space of the user */
  readonly space_id: string | null;
  /** Sui address of the service key issued with a read_write key */
  readonly service_address: string | null;
  readonly created_at: string;
}

export type KeyMintCommandData = KeyMinted;
export interface KeyRevokeCommandData {
  readonly requested_at: string;
}

// ------------------------------------------------------------------ buckets

export type Visibility = "public" | "private";
export type BucketState = "provisioning" | "pending_policy" | "finalizing" | "active" | "deleting" | "deleted";

export interface BucketCreated {
  readonly bucket_id: string;
  readonly space_id: string;
  readonly name: string;
  readonly visibility: Visibility;
  readonly storage_bucket_name: string;
  /** the claim on the bucket's name within its space */
  readonly name_claim: string;
  readonly created_by: string;
  readonly created_at: string;
}

export interface BucketReserved extends BucketCreated {
  /** base64 of the transaction the client signs with its service key */
  readonly tx_bytes: string;
  readonly digest: string;
  /** the service key address that must sign */
  readonly sender: string;
}

export interface BucketPolicyCreated {
  readonly policy_id: string;
  readonly chain_digest: string;
  /** the policy object after the transaction (its admins are the first grants) */
  readonly policy: StoredObject;
}

export interface BucketFinalizeFailed {
  readonly code: string;
  readonly error: string;
}

export interface BucketUpdated {
  readonly name?: string;
  readonly name_claim?: string;
  /** undefined: unchanged; null: cleared */
  readonly encryption_policy_id?: string | null;
  readonly updated_at: string;
}

export interface BucketCreateCommandData extends BucketCreated {}
export interface BucketReserveCommandData extends BucketReserved {}
export interface BucketFinalizeCommandData {
  /** Sui serialized signature (base64) of the reserved bytes by the service key */
  readonly signature: string;
  readonly requested_by: string;
}
export interface BucketUpdateCommandData extends BucketUpdated {}
export interface BucketDeleteCommandData {
  readonly requested_by: string;
  readonly requested_at: string;
}

// ------------------------------------------------------------------ uploads and files

export type UploadState = "queued" | "active" | "completed" | "failed";
export type FileStatus = "uploading" | "completed" | "failed" | "deleting" | "deleted";

export interface UploadQueued {
  readonly file_id: string;
  readonly bucket_id: string;
  readonly space_id: string;
  readonly name: string;
  readonly size: number;
  readonly mime_type: string;
  readonly blob_id: string;
  readonly md5: string;
  readonly is_private: boolean;
  readonly metadata: Record<string, unknown>;
  readonly storage_bucket_name: string;
  /** key of the bytes in the storage bucket */
  readonly storage_key: string;
  readonly uploader_user_id: string;
  readonly uploader_key_id: string;
  /** owner of the on-chain blob object */
  readonly owner_address: string;
  readonly name_claim: string;
  readonly created_at: string;
}

export interface UploadCompleted {
  /** the blob store object holding the file: `<storage bucket>/<key>` */
  readonly storage_object_id: string;
  readonly completed_at: string;
  readonly bucket_id: string;
  readonly space_id: string;
  readonly size: number;
}

export interface FileDeleted {
  readonly deleted_at: string;
  readonly bucket_id: string;
  readonly space_id: string;
  /** bytes released (0 for a failed upload discarded) */
  readonly size: number;
}

export interface UploadFailed {
  readonly code: string;
  readonly message: string;
  readonly failed_at: string;
}

/** What the upload's `commit` effect found (a fact; the upload machine's guards decide what follows from it). */
export interface UploadChecksSeen {
  /** The file's bucket as the read model has it (`deleting` or `deleted`: gone). */
  readonly bucket_state: BucketState;
  /** The space's bytes stored and its cap, before this file. */
  readonly storage_used: number;
  readonly storage_cap: number;
  readonly seen_at: string;
}

export type UploadStartCommandData = UploadQueued;

/** DELETE of a file: what the worker needs to release its stored object (the file's own aggregate starts here). */
export interface FileDeleteCommandData {
  readonly requested_by: string;
  readonly requested_at: string;
  readonly bucket_id: string;
  readonly space_id: string;
  readonly storage_bucket_name: string;
  readonly storage_key: string;
  readonly name_claim: string;
  /** bytes the deletion releases */
  readonly size: number;
  /** the upload failed: nothing is stored, the file is discarded at once */
  readonly upload_failed?: boolean;
}

export type FileDeleteRequested = FileDeleteCommandData;

// ------------------------------------------------------------------ sponsorship

export type SponsorKind = "bucket_group_create" | "grant_bucket_access" | "share_admin" | "unshare" | "unshare_bucket_access";

export interface SponsorReserved {
  readonly digest: string;
  readonly kind: SponsorKind;
  readonly tx_bytes: string;
  readonly sender: string;
  readonly key_id: string;
  readonly user_id: string;
  /** console buckets the transaction touches (access index and scope checks) */
  readonly bucket_ids: readonly string[];
  readonly reserved_at: string;
  readonly expires_at: string;
}

export interface SponsorExecuted {
  readonly chain_digest: string;
  readonly kind: SponsorKind;
  readonly bucket_ids: readonly string[];
  /** objects written by the transaction, after it */
  readonly objects: readonly StoredObject[];
  readonly executed_at: string;
}

export interface SponsorFailed {
  readonly code: string;
  readonly error: string;
  /** How the chain refused (adapters/ports.ts PortErrorKind): the execute route maps it to its status. */
  readonly kind?: string;
}

export type SponsorReserveCommandData = SponsorReserved;
export interface SponsorExecuteCommandData {
  readonly signature: string;
  readonly requested_at: string;
}

export type { AccessScope };

// ------------------------------------------------------------------ the catalogue

/** The console's event catalogue: the data of each event type (one subject family, `evt.console.>`). */
export interface ConsoleEventData {
  [EV.userSignedUp]: UserState;
  [EV.spaceCreated]: SpaceState;
  [EV.spaceMemberAdded]: SpaceState;
  [EV.spaceMemberRemoved]: SpaceState;
  [EV.claimHeld]: ClaimHeld;
  [EV.claimReleased]: ClaimReleased;
  [EV.keyMinted]: KeyMinted;
  [EV.keyActivated]: { readonly activated_at: string };
  [EV.keyRejected]: { readonly reason: string };
  [EV.keyRevokeRequested]: KeyRevokeCommandData;
  [EV.keyRevoked]: { readonly revoked_at: string };
  [EV.bucketCreated]: BucketCreated;
  [EV.bucketReserved]: BucketReserved;
  [EV.bucketFinalizeRequested]: { readonly requested_by: string };
  [EV.bucketFinalizeFailed]: BucketFinalizeFailed;
  [EV.bucketPolicyCreated]: BucketPolicyCreated;
  [EV.bucketActivated]: { readonly activated_at: string };
  [EV.bucketUpdated]: BucketUpdated;
  [EV.bucketDeleteRequested]: BucketDeleteCommandData;
  [EV.bucketDeleted]: { readonly deleted_at: string; readonly space_id: string };
  [EV.uploadQueued]: UploadQueued;
  [EV.uploadStarted]: { readonly started_at: string };
  [EV.uploadCompleted]: UploadCompleted;
  [EV.uploadFailed]: UploadFailed;
  [EV.uploadCleaned]: { readonly cleaned_at: string };
  [EV.uploadChecksSeen]: UploadChecksSeen;
  [EV.fileDeleteRequested]: FileDeleteRequested;
  [EV.fileDeleted]: FileDeleted;
  [EV.sponsorReserved]: SponsorReserved;
  [EV.sponsorExecuteRequested]: { readonly requested_at: string };
  [EV.sponsorExecuted]: SponsorExecuted;
  [EV.sponsorFailed]: SponsorFailed;
  [EV.sponsorExpired]: { readonly expired_at: string };
}
export type ConsoleEventType = keyof ConsoleEventData;
export type ConsoleEvent = EventOf<ConsoleEventData>;
export type NewConsoleEvent = NewEventOf<ConsoleEventData>;
/** The console's events as its actors' machines receive them. */
export type ConsoleMachineEvent = MachineEventOf<ConsoleEventData>;

/** Current version of every console event type (all 1 so far: bump one and add an upcaster when its shape changes). */
const CONSOLE_EVENT_VERSIONS = Object.fromEntries(Object.values(EV).map((type) => [type, 1])) as Record<ConsoleEventType, number>;

/** A console event at its type's current version. */
export const consoleEvent = eventsOf<ConsoleEventData>(CONSOLE_EVENT_VERSIONS);

/** An event of the console's catalogue: its type names it, and the type says what its data is. */
export const isConsoleEvent = isEventOf<ConsoleEventData>(CONSOLE_EVENT_VERSIONS);
