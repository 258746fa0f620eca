// Restore: re-index an owner's namespace from the blob objects recorded on chain (spec/relayer.md, POST /api/restore),
// for when index rows are missing and the event log cannot bring them back. The restore job's effect
// (restore-job.actor.ts), and the operator's `memrelay restore` (with its dry run and progress bar).
//
//   1. Barrier: wait until the memory index has applied every event appended so far, so a forget or a remember that
//      is still in flight is seen (a restore never races a forget into resurrecting what it deleted).
//   2. Candidates, newest first. Route ("owner" scope): the owner's blob objects across all namespaces, up to the
//      per-owner candidate cap, then those of the namespace — the chain lists objects by owner, not by attribute, so
//      the cap is shared across namespaces and can leave a namespace with no candidate at all (truncated, total 0).
//      Operator command ("namespace" scope): the namespace's own objects, up to the cap.
//   3. Each candidate of the namespace, newest first, is either already indexed (skipped), forgotten (skipped: created
//      at or before the namespace's last forget, unless include_forgotten), or missing. At most `limit` missing blobs
//      are restored per call; one more missing blob beyond that makes the answer truncated.
//   4. Missing blobs are downloaded, decrypted with the caller's credential, re-embedded and appended as
//      `memory.restored` events (vectors, never text); the memory_index projection inserts them where the blob still
//      has no row, so a replay of the log keeps them. Blobs that are gone from the blob store (404, a refusal) or
//      cannot be opened (for example client-encrypted manual memories, which the relayer cannot read) are counted as
//      failed. A blob the store cannot serve for a moment (an outage: 5xx, 429, a timeout, a reset connection) is
//      still there and is never counted failed: it is read again a few times, and if it stays unreadable the restore
//      fails with that outage (the job answers 503, restore-job.actor.ts). The batches appended before it stay in
//      the log, so the next restore finds their rows indexed and goes on from there instead of starting over.
//   total = restored + skipped + failed: the namespace's blob objects this call examined.
import { randomUUID } from "node:crypto";
import type { BlobObject, BlobPort, ChainPort, DecryptCredential, EncryptionPort } from "../../adapters/ports.ts";
import type { DocumentEmbedder } from "../../adapters/embeddings/scheduler.ts";
import type { RestoreCounts, RestoreScope } from "../../schemas/relayer/restore-job.ts";
import type { Db } from "../../db/pool.ts";
import type { IndexLog } from "../../projections/relayer/index-log.ts";
import { forgetHorizon, indexedBlobs } from "../../projections/relayer/restore-candidates.ts";
import { readCiphertexts, type ReadRetry } from "../../projections/relayer/ciphertext-reads.ts";
import type { LexicalKeyring } from "../../adapters/lexical/keys.ts";
import { documentTerms } from "../../adapters/lexical/terms.ts";
import { MEMORY_EVENTS, chunkRows, memoryEvent, memoryIdOf, namespaceAggregate, type MemoryRestored, type RestoredRow } from "../../schemas/relayer/memory-maintenance.ts";

/** Importance of restored rows: the extractor's score is not on chain (REFERENCE.md: remember and restore use 0.5). */
export const RESTORE_IMPORTANCE = 0.5;
/** The barrier was not reached in time: the memory index is behind the event log, so what is missing is unknown yet. */
export class IndexCatchingUp extends Error {
  constructor() {
    super("the memory index is catching up with the event log; retry shortly");
  }
}

/** Default per-owner candidate cap; the local chain port lists at most 10,000 objects per call. */
export const DEFAULT_CANDIDATE_CAP = 10_000;
const BATCH = 32;
/**
 * Reads of a blob the store cannot serve for a moment, at 0, 0.25, 1 and 3.25 s: longer than a recall's second,
 * because a restore's caller waits minutes for the answer and a 503 makes it start a new restore that plans again
 * (the barrier, the chain listing); past a few seconds the outage is no blip and the caller's retry is the better wait.
 */
const RESTORE_READ_RETRY: ReadRetry = { attempts: 4, firstPauseMs: 250, budgetMs: 5_000 };

export interface RestorePorts {
  readonly chain: ChainPort;
  readonly blobs: BlobPort;
  readonly encryption: EncryptionPort;
  /** Embeds each restored memory as a remember job does (windows of a long text pooled; scheduled fairly). */
  readonly embedder: DocumentEmbedder;
  readonly db: Db;
  readonly index: IndexLog;
  /** Keys of the lexical index: restored rows then carry their text's keyed term hashes, like job.indexed does. */
  readonly lexical?: LexicalKeyring;
}

export interface RestoreOptions {
  readonly owner: string;
  readonly namespace: string;
  /** Most missing blobs restored by this call. */
  readonly limit: number;
  readonly includeForgotten: boolean;
  /** The caller's decrypt credential; asked for before each batch that must be decrypted (so it may refresh). */
  readonly credential: () => DecryptCredential | Promise<DecryptCredential>;
  readonly candidateCap: number;
  readonly scope: RestoreScope;
  /** Id of the restore (the job's): commits are keyed by it and their first row, so a re-run appends nothing twice. */
  readonly restoreId?: string;
  readonly correlationId?: string;
  readonly onProgress?: (p: { readonly done: number; readonly total: number; readonly restored: number; readonly failed: number }) => void;
  readonly barrierTimeoutMs?: number;
  readonly applyTimeoutMs?: number;
}

export interface RestorePlan {
  /** The namespace's candidates examined, newest first, with what restore does with each. */
  readonly items: readonly { readonly blob: BlobObject; readonly state: "indexed" | "forgotten" | "missing" }[];
  /** Missing blobs that did not fit in `limit`, or the candidate cap was reached. */
  readonly truncated: boolean;
  readonly capReached: boolean;
}

/** Steps 1 to 3: what a restore would do, without decrypting anything (also the operator's --dry-run). */
export async function planRestore(ports: RestorePorts, o: Pick<RestoreOptions, "owner" | "namespace" | "limit" | "includeForgotten" | "candidateCap" | "scope" | "barrierTimeoutMs">): Promise<RestorePlan> {
  const barrier = await ports.index.lastIndexSeq();
  if (!(await ports.index.waitApplied(barrier, o.barrierTimeoutMs ?? 10_000))) {
    throw new IndexCatchingUp();
  }
  const cap = Math.max(1, o.candidateCap);
  const listed = await ports.chain.listBlobs(o.owner, o.scope === "owner" ? { limit: cap } : { namespace: o.namespace, limit: cap });
  const capReached = listed.length >= cap;
  const candidates = listed.filter((b) => b.namespace === o.namespace && b.packageId === ports.chain.packageId);
  const [indexed, horizon] = await Promise.all([indexedBlobs(ports.db, o.owner, candidates.map((b) => b.blobId)), forgetHorizon(ports.db, o.owner, o.namespace)]);
  const items: RestorePlan["items"][number][] = [];
  let missing = 0;
  let truncated = capReached;
  for (const blob of candidates) {
    if (indexed.has(blob.blobId)) items.push({ blob, state: "indexed" });
    else if (!o.includeForgotten && horizon !== null && blob.createdAtMs <= horizon) items.push({ blob, state: "forgotten" });
    else if (missing >= o.limit) {
      truncated = true;
      break;
    } else {
      missing++;
      items.push({ blob, state: "missing" });
    }
  }
  return { items, truncated, capReached };
}

/** Steps 1 to 4. */
export async function restoreNamespace(ports: RestorePorts, o: RestoreOptions): Promise<RestoreCounts & { readonly applied: boolean }> {
  const plan = await planRestore(ports, o);
  const work = plan.items.filter((i) => i.state === "missing").map((i) => i.blob);
  const skipped = plan.items.length - work.length;
  const forgotten = plan.items.filter((i) => i.state === "forgotten").length;
  const restoreId = o.restoreId ?? randomUUID();
  const aggregate = namespaceAggregate(o.owner, o.namespace);
  let restored = 0, failed = 0, lastSeq = 0;
  o.onProgress?.({ done: 0, total: work.length, restored, failed });
  for (let start = 0; start < work.length; start += BATCH) {
    const batch = work.slice(start, start + BATCH);
    const rows = await reindex(ports, o.owner, batch, await o.credential());
    failed += batch.length - rows.length;
    for (const chunk of chunkRows(rows)) {
      const data: MemoryRestored = { owner: o.owner, namespace: o.namespace, restore_id: restoreId, include_forgotten: o.includeForgotten, rows: chunk };
      const r = await ports.index.append(aggregate, [memoryEvent(MEMORY_EVENTS.restored, data)], {
        causationId: restoreId,
        correlationId: o.correlationId ?? restoreId,
        commitId: `${restoreId}:${chunk[0].blob_id}:${chunk.length}`,
      });
      lastSeq = r.seq;
      restored += chunk.length;
    }
    o.onProgress?.({ done: Math.min(work.length, start + batch.length), total: work.length, restored, failed });
  }
  const applied = lastSeq ? await ports.index.waitApplied(lastSeq, o.applyTimeoutMs ?? 15_000) : true;
  return { restored, skipped, failed, forgotten, total: restored + skipped + failed, truncated: plan.truncated, applied };
}

/**
 * Downloads, decrypts and re-embeds one batch; a blob that is gone or cannot be opened is left out (counted failed),
 * a blob store outage that outlasts the read retries rejects. Plaintext lives only in this scope.
 */
async function reindex(ports: RestorePorts, owner: string, batch: readonly BlobObject[], credential: DecryptCredential): Promise<RestoredRow[]> {
  const bytes = await readCiphertexts(ports.blobs, batch.map((b) => b.blobId), RESTORE_READ_RETRY);
  const present = batch.flatMap((b, i) => (bytes[i] ? [{ blob: b, bytes: bytes[i]! }] : []));
  if (!present.length) return [];
  const opened = await ports.encryption.decryptMany(owner, present.map((p) => p.bytes), credential);
  const readable = present.flatMap((p, i) => (opened[i] ? [{ blob: p.blob, text: new TextDecoder().decode(opened[i]!) }] : []));
  if (!readable.length) return [];
  const vectors = await Promise.all(readable.map((r) => ports.embedder.embedDocument(`restore:${memoryIdOf(owner, r.blob.blobId)}`, r.text)));
  const key = ports.lexical?.forOwner(owner);
  return readable.map((r, i) => ({
    id: memoryIdOf(owner, r.blob.blobId),
    blob_id: r.blob.blobId,
    object_id: r.blob.objectId,
    vector: Array.from(vectors[i]),
    importance: RESTORE_IMPORTANCE,
    size: r.blob.size,
    // The time the blob was first recorded, so recency ranking survives a restore.
    created_at: new Date(r.blob.createdAtMs).toISOString(),
    ...(key ? { lexical: documentTerms(key, r.text) } : {}),
  }));
}
