// The blob store's bytes for its routes (./service.ts): a blob served with conditional requests and ranges, through
// an in-memory cache of small contents in front of the backend; and request bodies stored, with the bytes of failed
// writes queued for the sweeper.
import type { Counter } from "prom-client";
import type { Db } from "../../db/pool.ts";
import type { Logger } from "../../config/logger.ts";
import { HttpError, errorReply, type Reply, type Request } from "../http.ts";
import type { BlobBackend, OpenedBlob } from "../../adapters/blob-bytes/backend.ts";
import type { bodyBuffers, readBuffers } from "../recycled-buffers.ts";
import type { Queries } from "../../projections/blobstore/queries.ts";
import { isBlobId, parseRange } from "../../schemas/blobstore/validation.ts";
import { enqueueGc } from "../../actors/blobstore/gc.ts";
import { etagList, type BlobstoreRouteKit, type ServedBlob } from "./route-kit.ts";
import type { ConfirmMiss } from "./miss-check.ts";
import { KIND, filterOf } from "../../schemas/blobstore/events.ts";

/** Blobs up to this size are cached in memory by blob id. */
const SMALL = 64 * 1024;
/**
 * Reads up to this size go out in one piece (one file read, one uWS end: the copy loop stays in C++); larger ones
 * stream with backpressure, so memory per request is bounded by this whatever the blob size.
 */
const READ_INLINE = 1024 * 1024;
export const CACHE_BYTES = 64 * 1024 * 1024;

/**
 * Small immutable blob contents by blob id, least recently used out first, bounded by bytes (content-addressed:
 * safe to cache on any replica; reads check the blob's references in the read model first, so a deleted blob is
 * never served from here).
 */
export class ContentCache {
  private readonly map = new Map<string, Buffer>();
  bytes = 0;
  constructor(private readonly maxBytes: number) {}
  get(id: string): Buffer | undefined {
    const b = this.map.get(id);
    if (b) {
      // most recently used last
      this.map.delete(id);
      this.map.set(id, b);
    }
    return b;
  }
  put(id: string, b: Buffer): void {
    if (this.map.has(id) || b.length > SMALL || b.length > this.maxBytes) return;
    this.map.set(id, b);
    this.bytes += b.length;
    for (const [k, v] of this.map) {
      if (this.bytes <= this.maxBytes) break;
      this.map.delete(k);
      this.bytes -= v.length;
    }
  }
}

export interface BlobServingDeps {
  readonly backend: BlobBackend;
  /** Bytes live on the event log's NATS: while it is away, reads that miss the cache fail fast (503) too. */
  readonly bytesInNats: boolean;
  /** Throws 503 while the event log is unreachable. */
  readonly needLog: () => void;
  readonly confirmMiss: ConfirmMiss;
  readonly cache: ContentCache;
  readonly reads: ReturnType<typeof readBuffers>;
  readonly received: ReturnType<typeof bodyBuffers>;
  readonly bytesRead: Counter;
  readonly bytesWritten: Counter;
  readonly blobPuts: Counter<"deduplicated">;
  readonly q: Queries;
  readonly db: Db;
  readonly maxBlobBytes: number;
  readonly logger: Logger;
}

export function blobServing(deps: BlobServingDeps): Pick<BlobstoreRouteKit, "serve" | "serveByBlobId" | "storeBody" | "referencedSize"> {
  const { backend, bytesInNats, needLog, confirmMiss, cache, reads, received, bytesRead, bytesWritten, blobPuts, q, db, maxBlobBytes, logger } = deps;

  async function serve(req: Request, b: ServedBlob): Promise<Reply> {
    const headers: Record<string, string> = {
      "content-type": b.contentType,
      etag: b.etag,
      "accept-ranges": "bytes",
      "x-blob-id": b.blobId,
      "cache-control": b.immutable ? "public, max-age=3600, immutable" : "no-cache",
    };
    if (b.lastModified) headers["last-modified"] = b.lastModified.toUTCString();
    const inm = etagList(req.headers["if-none-match"]);
    if (inm && (inm.includes("*") || inm.includes(b.etag.replace(/"/g, "")))) return { status: 304, headers };
    const range = parseRange(req.headers["range"], b.size);
    if (range === "unsatisfiable") {
      return errorReply(416, `range not satisfiable for a blob of ${b.size} bytes`, { size: b.size }, { "content-range": `bytes */${b.size}` });
    }
    const status = range ? 206 : 200;
    if (range) headers["content-range"] = `bytes ${range.start}-${range.end}/${b.size}`;
    if (req.method === "HEAD") return { status, headers, headLength: range ? range.end - range.start + 1 : b.size };
    let opened: OpenedBlob | null;
    if (b.size <= SMALL) {
      let whole = cache.get(b.blobId);
      if (!whole) {
        if (bytesInNats) needLog();
        opened = await backend.open(b.blobId, undefined, { inlineBelow: SMALL, size: b.size });
        if (opened?.bytes) cache.put(b.blobId, (whole = opened.bytes));
      }
      if (whole) {
        const body = range ? whole.subarray(range.start, range.end + 1) : whole;
        bytesRead.inc(body.length);
        return { status, headers, body };
      }
      opened = null;
    } else {
      if (bytesInNats) needLog();
      opened = await backend.open(b.blobId, range, { inlineBelow: READ_INLINE, alloc: reads.take, size: b.size });
    }
    if (!opened) {
      logger.error("referenced blob bytes are missing from the backend", { blob_id: b.blobId });
      throw new HttpError(500, "the blob's bytes are missing from storage");
    }
    bytesRead.inc(opened.size);
    const bytes = opened.bytes;
    if (bytes) return { status, headers, body: bytes, sent: () => reads.release(bytes) };
    return { status, headers, stream: opened.stream, length: opened.size };
  }

  /**
   * Size of a blob some object references, null when none does. A miss in the read model is judged against the log
   * (miss-check.ts) unless the backend lacks the bytes: a reference's bytes are stored before its event is appended and
   * swept only once nothing references them, so absent bytes are "not found" for the cost of one stat, whatever the
   * read model's lag (ids that never existed, asked by anyone, never reach the log).
   */
  async function referencedSize(blobId: string): Promise<number | null> {
    const size = await q.content(blobId);
    if (size !== null) return size;
    if (bytesInNats) needLog();
    if ((await backend.stat(blobId)) === null) return null;
    return confirmMiss([{ kind: KIND.blob, subjects: filterOf(KIND.blob) }], () => q.content(blobId));
  }

  async function serveByBlobId(req: Request, raw: string): Promise<Reply> {
    if (!isBlobId(raw)) throw new HttpError(400, "blob id must be 32 bytes as URL-safe base64 without padding (43 characters)");
    const size = await referencedSize(raw);
    if (size === null) throw new HttpError(404, `blob ${raw} not found`);
    return serve(req, { blobId: raw, size, contentType: "application/octet-stream", etag: `"${raw}"`, immutable: true });
  }

  /** Stores a request body; bytes that end up unreferenced (a failed write) are queued for the sweeper. */
  // label children resolved on first use, not per write (prom-client hashes the labels on every `inc({...})`)
  const putsBy = new Map<boolean, Counter.Internal>();
  async function storeBody(req: Request) {
    const put = await backend.put(req.bodyStream!, { maxBytes: maxBlobBytes, release: received.release });
    bytesWritten.inc(put.size);
    let puts = putsBy.get(put.deduplicated);
    if (!puts) putsBy.set(put.deduplicated, (puts = blobPuts.labels(String(put.deduplicated))));
    puts.inc();
    const orphan = async () => {
      if (!put.deduplicated) await enqueueGc(db, put.blobId).catch((err) => logger.warn("could not queue an orphaned blob", { blob_id: put.blobId, error: (err as Error).message }));
    };
    return { put, orphan };
  }

  return { serve, serveByBlobId, storeBody, referencedSize };
}
