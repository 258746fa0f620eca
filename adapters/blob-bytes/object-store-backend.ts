// Blob bytes in a JetStream object store (the `@nats-io/obj` bucket format), behind the same `BlobBackend` interface
// as the filesystem layout. The bytes then live on the infrastructure the event log already runs on: replicated
// with the rest of the log (R3 in a cluster), encrypted at rest with the JetStream store, and shared by every
// blob-store replica on any machine.
//
// Layout: ./object-store-layout.ts (compatible with `nats object` and the @nats-io/obj client).
//
// Writes: the body is hashed while it streams (on worker threads, ./hasher.ts); bodies up to 1 MiB are buffered
// (their id is known before anything is published, so identical bytes are never sent twice), larger ones are
// published chunk by chunk under a fresh
// upload id (the nuid) with a bounded window of unacknowledged chunks (memory stays flat whatever the size), and
// the size limit is enforced as bytes arrive (the chunks sent so far are purged). The object store has no rename
// and needs none: chunks are addressed by the upload id, so "renaming into place" is publishing the metadata record
// under the blob id once the digest is known. That publish expects the record's last sequence (optimistic
// concurrency), which makes it the single point where concurrent writers of the same bytes meet:
//   - no live record: ours is published (expecting "none", or the deletion marker we saw);
//   - a live record: we re-publish it unchanged but for mtime (a "touch", expecting the sequence we read), then purge
//     our own chunks — identical bytes are kept once, as one object per blob id;
//   - the expectation fails (someone touched, wrote or deleted meanwhile): read again and decide again.
// Deletion with a grace period (gc.ts): a record (re)written within `graceMs` — by the server's clock, the record
// message's timestamp — is kept; otherwise a deletion marker is published expecting the sequence that was judged
// old, so a writer that touched the record in between wins and the bytes stay. Only then are the chunks purged.
import { headers, nuid, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, DeliverPolicy, type JetStreamClient, type JetStreamManager, type PubAck, type StoredMsg } from "@nats-io/jetstream";
import { Objm, StorageType } from "@nats-io/obj";
import { HttpError } from "../../schemas/http-error.ts";
import { isWrongLastSequence } from "../../eventlog/jetstream-errors.ts";
import { blobIdFromDigest, type BlobBackend, type OpenedBlob, type PutOptions, type PutResult } from "./backend.ts";
import type { ByteRange } from "../../schemas/blobstore/validation.ts";
import { sharedHasher, type Hasher } from "./hasher.ts";
import { MD5, SEQS, encodeSeqs, toLoaded, type LoadedMeta, type MetaRecord } from "./object-store-layout.ts";
import { chunkStream, openSequential } from "./object-store-reads.ts";

export interface JetStreamBackendOptions {
  /** Object store bucket (stream `OBJ_<bucket>`). Default `memrelay_blobs`. */
  readonly bucket?: string;
  /** Chunk size in bytes (clamped to the server's max_payload). Default 256 KiB. */
  readonly chunkBytes?: number;
  /** Replicas of the bucket's stream; default: those of the event log's `EVT` stream (1 when it is absent). */
  readonly replicas?: number;
  /** Unacknowledged chunks a put keeps in flight (memory per upload ≈ window × chunk size). Default 8. */
  readonly window?: number;
  /** Chunks a streamed read fetches ahead. Default 4. */
  readonly readAhead?: number;
  /** Per-request timeout in ms (default 10 s). */
  readonly timeoutMs?: number;
  /** Threads hashing bodies (see ./hasher.ts; default BLOBSTORE_HASH_THREADS, else every core but one). */
  readonly hashThreads?: number;
}

const BUFFER_PUT = 1024 * 1024;
const META_CACHE_MAX = 20_000;

export class JetStreamBlobBackend implements BlobBackend {
  readonly name = "jetstream";
  readonly bucket: string;
  readonly stream: string;
  private readonly js: JetStreamClient;
  private jsm?: JetStreamManager;
  private chunkBytes: number;
  private readonly window: number;
  private readonly readAhead: number;
  private readonly timeout: number;
  private readonly hasher: Hasher;
  private ready?: Promise<void>;
  /** blob id -> where its chunks are (immutable for one upload; checked on every chunk read) */
  private readonly metaCache = new Map<string, LoadedMeta>();

  constructor(private readonly nc: NatsConnection, private readonly opts: JetStreamBackendOptions = {}) {
    this.bucket = opts.bucket ?? "memrelay_blobs";
    this.stream = `OBJ_${this.bucket}`;
    this.timeout = opts.timeoutMs ?? 10_000;
    this.js = jetstream(nc, { timeout: this.timeout });
    this.chunkBytes = opts.chunkBytes ?? 256 * 1024;
    this.window = Math.max(1, opts.window ?? 8);
    this.readAhead = Math.max(1, opts.readAhead ?? 4);
    this.hasher = sharedHasher(opts.hashThreads);
  }

  /** Creates the bucket (if missing) with the event log's replicas. */
  init(): Promise<void> {
    this.ready ??= (async () => {
      const jsm = await jetstreamManager(this.nc, { timeout: this.timeout });
      let replicas = this.opts.replicas;
      if (replicas === undefined) {
        replicas = await jsm.streams.info("EVT").then((si) => si.config.num_replicas || 1, () => 1);
      }
      await new Objm(this.js).create(this.bucket, { replicas, storage: StorageType.File });
      this.chunkBytes = Math.min(this.chunkBytes, this.nc.info?.max_payload ?? this.chunkBytes);
      this.jsm = jsm;
    })().catch((err) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
  }

  private chunkSubject(id: string) {
    return `$O.${this.bucket}.C.${id}`;
  }
  private metaSubject(name: string) {
    const b = Buffer.from(name).toString("base64url");
    return `$O.${this.bucket}.M.${b}${"=".repeat((4 - (b.length % 4)) % 4)}`;
  }

  /** The object's record; `leader` reads through the stream leader (never stale), else a direct get. */
  private async loadMeta(blobId: string, leader = true): Promise<LoadedMeta | null> {
    await this.init();
    const subj = this.metaSubject(blobId);
    let m: StoredMsg | null = null;
    if (!leader) m = await this.jsm!.direct.getMessage(this.stream, { last_by_subj: subj });
    if (!m) m = await this.jsm!.streams.getMessage(this.stream, { last_by_subj: subj });
    return m ? toLoaded(m) : null;
  }

  /** Publishes a record expecting the subject's last sequence; false when someone else got there first. */
  private async publishMeta(rec: MetaRecord, expect: number): Promise<PubAck | null> {
    const h = headers();
    h.set("Nats-Rollup", "sub");
    try {
      return await this.js.publish(this.metaSubject(rec.name), JSON.stringify(rec), { headers: h, expect: { lastSubjectSequence: expect } });
    } catch (err) {
      if (isWrongLastSequence(err)) return null;
      throw err;
    }
  }

  private async purgeChunks(id: string): Promise<void> {
    await this.jsm!.streams.purge(this.stream, { filter: this.chunkSubject(id) });
  }

  /** Chunks are kept (sliced and published as they are), so `release` is never called. */
  async put(source: AsyncIterable<Uint8Array> | Uint8Array, opts: PutOptions = {}): Promise<PutResult> {
    await this.init();
    const max = opts.maxBytes ?? Number.POSITIVE_INFINITY;
    const hash = this.hasher.start();
    const cs = this.chunkBytes;
    const upload = nuid.next();
    const subj = this.chunkSubject(upload);
    let size = 0;
    // bytes received but not yet published
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let streaming = false;
    const inflight: Promise<PubAck>[] = [];
    const seqs: number[] = [];
    let sent = 0;
    const take = (n: number): Buffer => {
      const all = pending.length === 1 ? pending[0] : Buffer.concat(pending, pendingBytes);
      const out = all.subarray(0, n);
      const rest = all.subarray(n);
      pending = rest.length ? [rest] : [];
      pendingBytes = rest.length;
      return out;
    };
    const send = async (payload: Uint8Array) => {
      const p = this.js.publish(subj, payload);
      p.catch(() => undefined);
      inflight.push(p);
      sent++;
      if (inflight.length >= this.window) seqs.push((await inflight.shift()!).seq);
    };
    const settle = async () => {
      while (inflight.length) seqs.push((await inflight.shift()!).seq);
    };
    /** Publishes whatever is buffered (all of it: the body has ended). */
    const sendRest = async () => {
      while (pendingBytes > 0) await send(take(Math.min(cs, pendingBytes)));
      await settle();
    };
    try {
      const chunks = source instanceof Uint8Array ? [source] : source;
      for await (const c of chunks) {
        size += c.byteLength;
        if (size > max) throw new HttpError(413, `body exceeds the limit of ${max} bytes`, { limit: max });
        await hash.update(c);
        pending.push(Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength));
        pendingBytes += c.byteLength;
        if (!streaming && pendingBytes > BUFFER_PUT) streaming = true;
        if (streaming) while (pendingBytes >= cs) await send(take(cs));
      }
      const digests = await hash.digest();
      const blobId = blobIdFromDigest(digests.sha256);
      const md5hex = digests.md5;
      const nChunks = Math.ceil(size / cs);
      let chunksSent = false;
      const ensureChunks = async () => {
        if (chunksSent) return;
        await sendRest();
        chunksSent = true;
      };
      // Streamed bodies are already (mostly) published; buffered ones are published only if the blob is new.
      if (streaming) await ensureChunks();
      const rec: MetaRecord = {
        name: blobId,
        description: "",
        bucket: this.bucket,
        nuid: upload,
        size,
        chunks: nChunks,
        mtime: "",
        digest: `SHA-256=${blobId}=`,
        deleted: false,
        options: { max_chunk_size: cs },
        metadata: { [MD5]: md5hex },
      };
      for (let attempt = 0; ; attempt++) {
        if (attempt > 20) throw new Error(`could not record blob ${blobId}: too much contention`);
        const cur = await this.loadMeta(blobId);
        if (cur && !cur.rec.deleted) {
          // identical bytes already stored: refresh the record's time (a running sweep's grace period sees it)
          const touched = await this.publishMeta({ ...cur.rec, mtime: new Date().toISOString() }, cur.seq);
          if (!touched) continue;
          this.metaCache.delete(blobId);
          if (sent) await settle().then(() => this.purgeChunks(upload));
          return { blobId, size, md5: md5hex, deduplicated: true };
        }
        await ensureChunks();
        if (nChunks > 1) rec.metadata![SEQS] = encodeSeqs(seqs);
        rec.mtime = new Date().toISOString();
        if (await this.publishMeta(rec, cur?.seq ?? 0)) {
          this.metaCache.delete(blobId);
          return { blobId, size, md5: md5hex, deduplicated: false };
        }
      }
    } catch (err) {
      hash.abort();
      // leave nothing behind: wait for what is in flight, then purge the upload's chunks
      if (sent) {
        await Promise.allSettled(inflight);
        await this.purgeChunks(upload).catch(() => undefined);
      }
      throw err;
    }
  }

  async stat(blobId: string): Promise<{ size: number; mtimeMs: number } | null> {
    const m = await this.loadMeta(blobId);
    return m && !m.rec.deleted ? { size: m.rec.size, mtimeMs: m.timeMs } : null;
  }

  private async cachedMeta(blobId: string): Promise<LoadedMeta | null> {
    const hit = this.metaCache.get(blobId);
    if (hit) return hit;
    const m = await this.loadMeta(blobId, false);
    if (!m || m.rec.deleted) return null;
    if (this.metaCache.size >= META_CACHE_MAX) this.metaCache.delete(this.metaCache.keys().next().value!);
    this.metaCache.set(blobId, m);
    return m;
  }

  /** One chunk by index, or null when it is gone (the object was deleted or re-uploaded). */
  private async chunk(meta: LoadedMeta, i: number): Promise<Uint8Array | null> {
    const subj = this.chunkSubject(meta.rec.nuid);
    let m: StoredMsg | null;
    if (meta.rec.chunks === 1) m = await this.jsm!.direct.getMessage(this.stream, { last_by_subj: subj });
    else if (meta.seqs) m = await this.jsm!.direct.getMessage(this.stream, { seq: meta.seqs[i] });
    else throw new Error("no chunk index");
    if (!m || m.subject !== subj) return null;
    return m.data;
  }

  async open(blobId: string, range?: ByteRange, opts: { inlineBelow?: number } = {}): Promise<OpenedBlob | null> {
    await this.init();
    for (let attempt = 0; ; attempt++) {
      const meta = attempt === 0 ? await this.cachedMeta(blobId) : await this.loadMeta(blobId);
      if (!meta || meta.rec.deleted) return null;
      const total = meta.rec.size;
      const start = range?.start ?? 0;
      const end = range ? Math.min(range.end, total - 1) : total - 1;
      const size = Math.max(0, end - start + 1);
      if (size === 0) return { size: 0, bytes: Buffer.alloc(0) };
      const cs = meta.rec.options?.max_chunk_size ?? 128 * 1024;
      const first = Math.floor(start / cs);
      const last = Math.floor(end / cs);
      const slice = (i: number, data: Uint8Array) => {
        const from = i === first ? start - i * cs : 0;
        const to = i === last ? end - i * cs + 1 : data.length;
        return Buffer.from(data.buffer, data.byteOffset + from, to - from);
      };
      if (meta.rec.chunks > 1 && !meta.seqs) return openSequential(this.jsm!, this.stream, this.chunkSubject(meta.rec.nuid), meta, first, last, slice, size, opts.inlineBelow ?? 0);
      if (size <= (opts.inlineBelow ?? 0)) {
        const parts = await Promise.all(Array.from({ length: last - first + 1 }, (_, k) => this.chunk(meta, first + k)));
        if (parts.some((p) => p === null)) {
          this.metaCache.delete(blobId);
          if (attempt === 0) continue;
          throw new Error(`chunks of blob ${blobId} are missing`);
        }
        const bufs = parts.map((p, k) => slice(first + k, p!));
        return { size, bytes: bufs.length === 1 ? bufs[0] : Buffer.concat(bufs, size) };
      }
      // Streamed: the first chunk is fetched now (a vanished object is then a null, not a broken stream).
      const head = await this.chunk(meta, first);
      if (!head) {
        this.metaCache.delete(blobId);
        if (attempt === 0) continue;
        throw new Error(`chunks of blob ${blobId} are missing`);
      }
      return { size, stream: chunkStream((i) => this.chunk(meta, i), this.readAhead, meta, first, last, slice, slice(first, head)) };
    }
  }

  async delete(blobId: string, opts: { graceMs?: number } = {}): Promise<boolean> {
    const cur = await this.loadMeta(blobId);
    if (!cur || cur.rec.deleted) return false;
    if (Date.now() - cur.timeMs < (opts.graceMs ?? 0)) return false;
    const marker = await this.publishMeta({ ...cur.rec, deleted: true, size: 0, chunks: 0, digest: "", mtime: new Date().toISOString() }, cur.seq);
    // a writer touched or replaced the record after we judged it old: it stays
    if (!marker) return false;
    this.metaCache.delete(blobId);
    await this.purgeChunks(cur.rec.nuid);
    // drop the marker too (anything published after it stays)
    await this.jsm!.streams.purge(this.stream, { filter: this.metaSubject(blobId), seq: marker.seq + 1 }).catch(() => undefined);
    return true;
  }

  async *list(): AsyncIterable<string> {
    await this.init();
    const all = `$O.${this.bucket}.M.>`;
    const any = await this.jsm!.streams.getMessage(this.stream, { last_by_subj: all }).catch(() => null);
    if (!any) return;
    const consumer = await this.js.consumers.get(this.stream, { filter_subjects: all, deliver_policy: DeliverPolicy.LastPerSubject });
    const iter = await consumer.consume();
    try {
      for await (const m of iter) {
        const rec = m.json<MetaRecord>();
        if (!rec.deleted) yield rec.name;
        if (m.info.pending === 0) break;
      }
    } finally {
      await iter.close().catch(() => undefined);
    }
  }

  /** Removes the bucket and everything in it (tests). */
  async destroy(): Promise<void> {
    await this.init();
    await this.jsm!.streams.delete(this.stream).catch(() => undefined);
    this.ready = undefined;
    this.metaCache.clear();
  }
}
