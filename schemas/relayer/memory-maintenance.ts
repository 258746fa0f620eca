// Events that maintain the memory index outside the remember-job lifecycle (spec/relayer.md: manual mode, forget,
// restore). Pure types and helpers, no I/O. Like every event they carry ids, vectors, sizes and times — never memory
// text.
//
// Subjects. The memory index projection follows one subject filter, `evt.job.>` (nats-server 2.9 consumers take a
// single filter, and one ordered consumer is what makes a forget delete exactly the rows indexed before it, on every
// replay). So these events live in the same subject family:
//   - a manual memory:          `evt.job.<memory id>`          (a UUID derived from owner and blob id)
//   - namespace maintenance:    `evt.job.ns-<32 hex>`          (hash of owner and namespace; forget and restore)
// The remember-job actor host only consumes `cmd.job.>`, and the job-status projection ignores these event types.
import { createHash } from "node:crypto";
import { eventsOf, type EventOf, type NewEventOf } from "../envelope.ts";
import type { LexicalTerms } from "./lexical.ts";
import type { JobEvent } from "./remember-job.ts";

export const MEMORY_EVENTS = {
  /** A client-encrypted memory registered by POST /api/remember/manual (blob uploaded and recorded on chain). */
  registered: "memory.registered",
  /** Every index row of (owner, namespace) indexed before this event is deleted; records the forget horizon. */
  forgotten: "memory.forgotten",
  /** Rows re-indexed from chain blob objects by a restore (inserted only where the blob has no row). */
  restored: "memory.restored",
} as const;

export type MemoryEventType = (typeof MEMORY_EVENTS)[keyof typeof MEMORY_EVENTS];

/** Aggregate type shared with remember jobs (see the header): the memory index's subject family. */
export const INDEX_AGGREGATE = "job";

/** One index row as events carry it (the memory index's columns, minus owner and namespace). */
export interface IndexRow {
  /** Row id: a UUID derived from (owner, blob id), so a re-registered or re-restored blob names the same row. */
  readonly id: string;
  readonly blob_id: string;
  readonly object_id: string;
  readonly vector: readonly number[];
  readonly importance: number;
  readonly size: number;
  /** RFC 3339. */
  readonly created_at: string;
}

export interface MemoryRegistered extends IndexRow {
  readonly owner: string;
  readonly namespace: string;
}

export interface MemoryForgotten {
  readonly owner: string;
  readonly namespace: string;
  /**
   * RFC 3339 time of the forget: chain blob objects of the namespace created at or before it are "forgotten", and a
   * default restore leaves them out (see actors/relayer/restore-namespace.ts).
   */
  readonly forgotten_at: string;
}

/** A restored row; with a lexical keyring, also the keyed term hashes of its text (schemas/relayer/lexical.ts, never tokens). */
export interface RestoredRow extends IndexRow {
  readonly lexical?: LexicalTerms;
}

export interface MemoryRestored {
  readonly owner: string;
  readonly namespace: string;
  /** Correlates the chunks of one restore call. */
  readonly restore_id: string;
  /** True when the caller asked to bring back blobs older than the namespace's forget horizon. */
  readonly include_forgotten: boolean;
  readonly rows: readonly RestoredRow[];
}

export const MEMORY_EVENT_VERSION = 1;

/** The memory index maintenance catalogue (manual memories, forget, restore). */
export interface MemoryEventData {
  [MEMORY_EVENTS.registered]: MemoryRegistered;
  [MEMORY_EVENTS.forgotten]: MemoryForgotten;
  [MEMORY_EVENTS.restored]: MemoryRestored;
}
export type MemoryEvent = EventOf<MemoryEventData>;
export type NewMemoryEvent = NewEventOf<MemoryEventData>;

/** What the subject family `evt.job.>` carries: remember jobs and index maintenance (see the header). */
export type IndexLogEvent = JobEvent | MemoryEvent;

/** A maintenance event at its type's current version. */
export const memoryEvent = eventsOf<MemoryEventData>({
  [MEMORY_EVENTS.registered]: MEMORY_EVENT_VERSION,
  [MEMORY_EVENTS.forgotten]: MEMORY_EVENT_VERSION,
  [MEMORY_EVENTS.restored]: MEMORY_EVENT_VERSION,
});

/** Aggregate (subject suffix after `evt.`) of a manual memory. */
export const memoryAggregate = (memoryId: string) => `${INDEX_AGGREGATE}.${memoryId}`;

/** Aggregate of an owner's namespace (forget and restore events): a hash, since namespaces may hold any character. */
export function namespaceAggregate(owner: string, namespace: string): string {
  const h = createHash("sha256").update(owner).update("\u0000").update(namespace, "utf8").digest("hex").slice(0, 32);
  return `${INDEX_AGGREGATE}.ns-${h}`;
}

/**
 * Index row id of a blob of an owner: a name-based UUID (RFC 9562 version 8 layout) from SHA-256 over a fixed label,
 * the owner and the blob id. Deterministic, so registering the same ciphertext twice, or restoring a blob twice
 * concurrently, names one row.
 */
export function memoryIdOf(owner: string, blobId: string): string {
  const b = createHash("sha256").update("memrelay/memory-id/v1\u0000").update(owner.toLowerCase()).update("\u0000").update(blobId).digest();
  b[6] = (b[6] & 0x0f) | 0x80;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = b.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * Splits restored rows into event payloads that stay well under the NATS message limit (1 MiB by default): a vector of
 * 1,024 numbers is about 12 KB of JSON.
 */
export function chunkRows<R extends IndexRow>(rows: readonly R[], maxBytes = 512 * 1024): R[][] {
  const out: R[][] = [];
  let cur: R[] = [];
  let bytes = 0;
  for (const r of rows) {
    const size = JSON.stringify(r).length;
    if (cur.length && bytes + size > maxBytes) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(r);
    bytes += size;
  }
  if (cur.length) out.push(cur);
  return out;
}
