// The blob port over the Walrus HTTP API (publisher `PUT /v1/blobs`, aggregator `GET /v1/blobs/{id}`), real Walrus
// or our blob storage service. Reads go through a ciphertext cache: blobs are immutable, so caching by id is safe.
// A cold read asks the aggregators in order (BLOBSTORE_AGGREGATOR_URL, then BLOBSTORE_AGGREGATOR_URLS), racing the
// next one when the previous has not answered within BLOBSTORE_AGGREGATOR_RACE_AFTER_MS (0 races all at once) or has
// failed; the first good answer wins and the others are cancelled. Unless skipped, an answer must hash to its blob id.
// A quilt patch id (quilt-codec.ts) reads through the same port: from `by-quilt-patch-id` when aggregators are
// trusted; under the consistency check, the whole quilt is read and checked against its blob id, then the patch cut
// out of it (a patch alone cannot be checked). `storeQuilt` stores several blobs as one quilt (PUT /v1/quilts).
import { Agent, FormData, request } from "undici";
import { PortError, type BlobPort, type StoredBlob, type StoredQuilt } from "../ports.ts";
import { CiphertextCache } from "./ciphertext-cache.ts";
import type { BlobIdCheck } from "./blob-ids.ts";
import { settlesWithin } from "../../config/time-bounds.ts";
import { QuiltFormatError, parseQuiltPatchId, readQuiltPatch, type QuiltPatchRef } from "./quilt-codec.ts";

export interface WalrusHttpOptions {
  readonly publisherUrl: string;
  readonly aggregatorUrl: string;
  /** Further aggregators for cold reads, asked after `aggregatorUrl`. */
  readonly extraAggregatorUrls?: readonly string[];
  /** Delay before racing the next aggregator (default 150 ms); 0 races all at once. */
  readonly raceAfterMs?: number;
  readonly epochs?: number;
  /** A read's limit (default 30 s). */
  readonly timeoutMs?: number;
  /**
   * A store's limit (default 10 min). A publisher stores a few blobs at a time (its sub-wallets) and queues the rest
   * without a word, so a store's answer may come minutes late under load: a short limit gave up stores that were only
   * queued and sent them again, to the back of the same queue, until none finished (issue 31).
   */
  readonly storeTimeoutMs?: number;
  readonly cacheTtlSecs: number;
  readonly cacheMaxBytes: number;
  readonly cacheTotalBytes?: number;
  /** The consistency check of cold reads (blob-ids.ts); absent: the aggregators are trusted (BLOBSTORE_SKIP_CONSISTENCY_CHECK). */
  readonly verify?: BlobIdCheck;
  /** Shards of the committee whose layout quilts take (WALRUS_N_SHARDS): needed to cut a patch out of a checked quilt. */
  readonly quiltShards?: number;
}

interface NewlyCreated { newlyCreated: { blobObject: { id: string; blobId: string; size: number } } }
interface AlreadyCertified { alreadyCertified: { blobId: string; object?: string; event?: unknown; endEpoch: number } }
interface QuiltStored { blobStoreResult: NewlyCreated | AlreadyCertified; storedQuiltBlobs: { identifier: string; quiltPatchId: string }[] }

/** How long a close lets requests in flight finish before it aborts them. */
const CLOSE_GRACE_MS = 1_000;
const READ_TIMEOUT_MS = 30_000;
const STORE_TIMEOUT_MS = 600_000;

export class WalrusHttpBlobs implements BlobPort {
  private readonly agent = new Agent({ connections: 128, pipelining: 1, keepAliveTimeout: 30_000 });
  private readonly cache: CiphertextCache;

  constructor(private readonly opts: WalrusHttpOptions) {
    this.cache = new CiphertextCache(opts.cacheTtlSecs, opts.cacheMaxBytes, opts.cacheTotalBytes ?? 256 * 1024 * 1024);
  }

  async store(bytes: Uint8Array, o: { epochs?: number; sendObjectTo?: string; deletable?: boolean } = {}): Promise<StoredBlob> {
    const q = new URLSearchParams({ epochs: String(o.epochs ?? this.opts.epochs ?? 2) });
    if (o.deletable) q.set("deletable", "true");
    if (o.sendObjectTo) q.set("send_object_to", o.sendObjectTo);
    const res = await this.call(`${this.opts.publisherUrl}/v1/blobs?${q}`, { method: "PUT", body: bytes, timeoutMs: this.opts.storeTimeoutMs ?? STORE_TIMEOUT_MS });
    const body = (await res.body.json()) as NewlyCreated | AlreadyCertified;
    if ("newlyCreated" in body) {
      const b = body.newlyCreated.blobObject;
      this.cache.put(b.blobId, bytes);
      return { blobId: b.blobId, size: Number(b.size), objectId: b.id, alreadyCertified: false };
    }
    if ("alreadyCertified" in body) {
      this.cache.put(body.alreadyCertified.blobId, bytes);
      return { blobId: body.alreadyCertified.blobId, size: bytes.byteLength, objectId: body.alreadyCertified.object, alreadyCertified: true };
    }
    throw new PortError("blobs", "invalid", "publisher answered neither newlyCreated nor alreadyCertified");
  }

  /** Stores the patches as one quilt (identifiers unique, not starting with _). */
  async storeQuilt(patches: readonly { identifier: string; contents: Uint8Array }[], o: { epochs?: number; sendObjectTo?: string } = {}): Promise<StoredQuilt> {
    const q = new URLSearchParams({ epochs: String(o.epochs ?? this.opts.epochs ?? 2) });
    if (o.sendObjectTo) q.set("send_object_to", o.sendObjectTo);
    const form = new FormData();
    for (const p of patches) form.append(p.identifier, new Blob([p.contents]), p.identifier);
    const res = await this.call(`${this.opts.publisherUrl}/v1/quilts?${q}`, { method: "PUT", body: form, timeoutMs: this.opts.storeTimeoutMs ?? STORE_TIMEOUT_MS });
    const body = (await res.body.json()) as QuiltStored;
    const r = body.blobStoreResult;
    const quiltId = r && "newlyCreated" in r ? r.newlyCreated.blobObject.blobId : r && "alreadyCertified" in r ? r.alreadyCertified.blobId : undefined;
    if (!quiltId || !Array.isArray(body.storedQuiltBlobs)) throw new PortError("blobs", "invalid", "publisher answered no quilt (blobStoreResult and storedQuiltBlobs)");
    const patchIds = new Map(body.storedQuiltBlobs.map((b) => [b.identifier, b.quiltPatchId]));
    for (const p of patches) {
      const id = patchIds.get(p.identifier);
      if (id) this.cache.put(id, p.contents);
    }
    return { quiltId, patchIds };
  }

  async read(blobId: string): Promise<Uint8Array> {
    const hit = this.cache.get(blobId);
    if (hit) return hit;
    const patch = parseQuiltPatchId(blobId);
    const bytes = !patch
      ? await this.fetchBlob(blobId)
      : this.opts.verify
        ? await this.cutPatch(patch, await this.fetchBlob(patch.quiltId))
        : await this.fetchFromAggregators(`/v1/blobs/by-quilt-patch-id/${blobId}`);
    this.cache.put(blobId, bytes);
    return bytes;
  }

  /** The patch out of its checked quilt; a quilt laid out for another committee is refused, not misread. */
  private cutPatch(patch: QuiltPatchRef, quilt: Uint8Array): Uint8Array {
    try {
      return readQuiltPatch(quilt, this.opts.quiltShards ?? 1000, patch).contents;
    } catch (err) {
      if (err instanceof QuiltFormatError) throw new PortError("blobs", "invalid", `quilt ${patch.quiltId}: ${err.message}`);
      throw err;
    }
  }

  private async fetchBlob(blobId: string): Promise<Uint8Array> {
    return this.fetchFromAggregators(`/v1/blobs/${encodeURIComponent(blobId)}`, (got) => {
      // Bytes that are not this blob count as that aggregator failing: the race goes on to the next one.
      if (this.opts.verify && !this.opts.verify(blobId, got)) throw new PortError("blobs", "unavailable", `an aggregator answered bytes that are not blob ${blobId} (consistency check)`);
    });
  }

  private fetchFromAggregators(path: string, check?: (bytes: Uint8Array) => void): Promise<Uint8Array> {
    const urls = [this.opts.aggregatorUrl, ...(this.opts.extraAggregatorUrls ?? [])];
    return raceInOrder(urls, this.opts.raceAfterMs ?? 150, async (base, signal) => {
      const res = await this.call(`${base}${path}`, { method: "GET", signal });
      const got = new Uint8Array(await res.body.arrayBuffer());
      check?.(got);
      return got;
    });
  }

  private async call(url: string, init: { method: string; body?: Uint8Array | FormData; signal?: AbortSignal; timeoutMs?: number }) {
    const timeoutMs = init.timeoutMs ?? this.opts.timeoutMs ?? READ_TIMEOUT_MS;
    let res;
    try {
      res = await request(url, {
        method: init.method as "GET",
        body: init.body,
        signal: init.signal,
        dispatcher: this.agent,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        // a FormData body brings its own multipart content type
        headers: init.body instanceof Uint8Array ? { "content-type": "application/octet-stream" } : undefined,
      });
    } catch (err) {
      throw new PortError("blobs", "unavailable", `${init.method} ${new URL(url).pathname} failed: ${(err as Error).message}`);
    }
    if (res.statusCode >= 200 && res.statusCode < 300) return res;
    const text = await res.body.text().catch(() => "");
    const kind = res.statusCode === 404 ? "not_found" : res.statusCode >= 500 || res.statusCode === 429 ? "unavailable" : "rejected";
    throw new PortError("blobs", kind, `${init.method} ${new URL(url).pathname} answered ${res.statusCode} ${text.slice(0, 200)}`);
  }

  /**
   * Lets requests in flight finish for a moment, then aborts them: a close waits for its requests, and one to a blob
   * store that never answers held a stopping stack for good (issue 28). Their commands are redelivered.
   */
  async close(): Promise<void> {
    if (!(await settlesWithin(CLOSE_GRACE_MS, this.agent.close()))) await this.agent.destroy();
  }
}

/**
 * Runs `attempt` against each target in order, starting the next one `raceAfterMs` after the previous (at once when
 * it fails); resolves with the first success and aborts the others. When all fail: a not_found only if every target
 * said so (a blob missing from one aggregator may be on another), else the last unavailability.
 */
async function raceInOrder<T>(targets: readonly string[], raceAfterMs: number, attempt: (target: string, signal: AbortSignal) => Promise<T>): Promise<T> {
  const controllers = targets.map(() => new AbortController());
  const errors: unknown[] = [];
  return new Promise<T>((resolve, reject) => {
    let next = 0;
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const launch = () => {
      clearTimeout(timer);
      if (settled || next >= targets.length) return;
      const i = next++;
      attempt(targets[i], controllers[i].signal).then(
        (value) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          controllers.forEach((c, j) => j !== i && c.abort());
          resolve(value);
        },
        (err) => {
          if (settled) return;
          errors.push(err);
          if (errors.length === targets.length) {
            settled = true;
            const allMissing = errors.every((e) => e instanceof PortError && e.kind === "not_found");
            reject(allMissing ? errors[errors.length - 1] : errors.find((e) => !(e instanceof PortError && e.kind === "not_found")));
          } else launch();
        },
      );
      if (raceAfterMs > 0 && next < targets.length) timer = setTimeout(launch, raceAfterMs);
    };
    do launch();
    while (raceAfterMs === 0 && next < targets.length);
  });
}
