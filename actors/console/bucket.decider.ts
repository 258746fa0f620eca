// A bucket request's decisions, pure, in the shape of the directory's deciders (deciders.ts): what is known of the
// bucket and the facts the request brings in (the space's plan and usage, the bucket's contents, the reservation, the
// clock), and the verdict out, or a ConsoleError the gateway answers with. The gateway judges the bucket as its read
// model shows it (the row the scope check loaded); test/console-request-deciders.test.ts judges the same bucket folded
// from its events by its machine, so the rules are specified as given events / when / then.
import { accept, reject, type Decision, type Fold } from "../../eventlog/aggregate-store.ts";
import type { BucketReserved, ConsoleMachineEvent, Visibility } from "../../schemas/console/events.ts";
import type { PlanTier } from "../../schemas/console/http.ts";
import { verifySenderSignature } from "../../adapters/chain/sui/signatures.ts";
import { initialSnapshot, step, type SnapshotOf } from "../machine-steps.ts";
import { txValidUntil } from "./chain.ts";
import { bucketMachine } from "./bucket.machine.ts";
import type { ConsoleError } from "./errors.ts";

type Decided<R> = Decision<R, ConsoleError>;

/** What a bucket's decisions read of it (a read-model row has these fields). */
export interface BucketFacts {
  readonly bucket_id: string;
  readonly state: string;
  readonly visibility: Visibility;
  readonly name: string;
  readonly encryption_policy_id: string | null;
}

export type BucketSnapshot = SnapshotOf<typeof bucketMachine>;

/** A bucket's state: its machine after its events. */
export const BUCKET: Fold<BucketSnapshot, ConsoleMachineEvent> = { initial: initialSnapshot(bucketMachine), evolve: (s, e) => step(bucketMachine, s, e) };

/** The facts of a bucket's machine; null before it was created or reserved. */
export function bucketFacts(s: BucketSnapshot): BucketFacts | null {
  const b = s.context.bucket;
  if (!b) return null;
  return { bucket_id: b.bucket_id, state: String(s.value), visibility: b.visibility, name: s.context.name ?? b.name, encryption_policy_id: s.context.policy_id ?? null };
}

/** A bucket decider applied to bucket `bucketId`'s machine (what the given/when/then specs fold): no bucket, not found. */
export const onMachine =
  <R>(bucketId: string, decide: (b: BucketFacts) => Decided<R>) =>
  (s: BucketSnapshot): Decided<R> => {
    const b = bucketFacts(s);
    return b ? decide(b) : reject({ code: "bucket_not_found", bucketId });
  };

/** Why a bucket cannot take files, renames or sponsorships, if it cannot: only an active bucket can. */
export function inactive(b: BucketFacts): ConsoleError | undefined {
  if (b.state === "pending_policy" || b.state === "finalizing") return { code: "bucket_not_finalized" };
  if (b.state === "provisioning") return { code: "bucket_provisioning" };
  if (b.state !== "active") return { code: "bucket_not_found", bucketId: b.bucket_id };
  return undefined;
}

// ------------------------------------------------------------------ reserve

/** The space a bucket is reserved in, as the read model shows it when the request arrives. */
export interface SpaceFacts {
  readonly tier: string;
  readonly plan: PlanTier;
  readonly liveBuckets: number;
  readonly storageUsed: number;
  readonly storageCap: number;
}

/** A new bucket fits the space's plan (bucket count) and a space that has used its storage gets no new buckets. */
export function reserveBucket(space: SpaceFacts): Decided<null> {
  if (space.liveBuckets >= space.plan.buckets) return reject({ code: "plan_limit", limit: "buckets", tier: space.tier, allowed: space.plan.buckets });
  if (space.storageUsed >= space.storageCap) return reject({ code: "storage_full", tier: space.tier, cap: space.storageCap });
  return accept(null);
}

// ------------------------------------------------------------------ update

export interface UpdateBucket {
  readonly name: string;
  readonly visibility?: Visibility;
  /** null removes the bucket's policy */
  readonly encryptionPolicyId?: string | null;
  /** Whether `encryptionPolicyId` is a bucket policy on chain (read by the gateway when one is given). */
  readonly policyOnChain?: boolean;
}

/** What an update changes; nothing to change answers the bucket as it is. */
export interface BucketChange {
  readonly renamed: boolean;
  readonly policyChange: boolean;
}

/** Visibility never changes; an active bucket is renamed or gets another on-chain policy. */
export const updateBucket =
  (c: UpdateBucket) =>
  (b: BucketFacts): Decided<BucketChange> => {
    if (c.visibility !== undefined && c.visibility !== b.visibility) return reject({ code: "visibility_immutable" });
    const notActive = inactive(b);
    if (notActive) return reject(notActive);
    const policyChange = c.encryptionPolicyId !== undefined && c.encryptionPolicyId !== b.encryption_policy_id;
    if (c.encryptionPolicyId && policyChange && !c.policyOnChain) return reject({ code: "unknown_policy", policyId: c.encryptionPolicyId });
    return accept({ renamed: c.name !== b.name, policyChange });
  };

// ------------------------------------------------------------------ delete

/** `already`: a delete under way answers as done. */
export type BucketDeletion = { readonly already: boolean };

/** A bucket being set up cannot be deleted yet, nor one holding files; deleting twice is deleting once. */
export const deleteBucket =
  (c: { readonly files: number }) =>
  (b: BucketFacts): Decided<BucketDeletion> => {
    if (b.state === "deleting") return accept({ already: true });
    if (b.state === "finalizing" || b.state === "provisioning") return reject({ code: "bucket_setting_up" });
    if (c.files > 0) return reject({ code: "bucket_not_empty", files: c.files });
    return accept({ already: false });
  };

// ------------------------------------------------------------------ finalize

export interface FinalizeBucket {
  readonly signature: string;
  /** The bucket's reservation (its first event), null when it has none. */
  readonly reservation: BucketReserved | null;
  /** Milliseconds since the epoch, the request's clock. */
  readonly now: number;
}

/** `already`: the bucket is active, finalize answered as done. */
export type BucketFinalization = { readonly already: boolean };

/**
 * A private bucket waiting for its policy is finalized with the service key's signature of the reserved bytes, while
 * the reservation is valid; an active one answers as finalized.
 */
export const finalizeBucket =
  (c: FinalizeBucket) =>
  (b: BucketFacts): Decided<BucketFinalization> => {
    if (b.visibility !== "private") return reject({ code: "not_private" });
    if (b.state === "active") return accept({ already: true });
    if (b.state !== "pending_policy") return reject({ code: "bucket_in_state", state: b.state });
    if (!c.reservation) return reject({ code: "no_reservation" });
    if (!verifySenderSignature(c.reservation.tx_bytes, c.signature, c.reservation.sender)) return reject({ code: "signature_mismatch", sender: c.reservation.sender });
    if (txValidUntil(c.reservation.tx_bytes) < c.now) return reject({ code: "reservation_expired" });
    return accept({ already: false });
  };
