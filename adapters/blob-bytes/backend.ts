// Blob bytes live behind `BlobBackend`: content-addressed (the blob id is the SHA-256 of the bytes, 32 bytes as
// URL-safe base64 without padding, the Walrus id format), so identical bytes are stored once. The service keeps
// references in its read models; the backend only stores, serves and removes bytes.
//
// `FsBlobBackend` is the default: `<root>/blobs/<h0h1>/<sha256 hex>` (256 directories; ext4's hashed directories
// keep lookups flat well past millions of blobs). A put streams the body into a temp
// file while hashing (SHA-256 for the id, MD5 for the S3-style ETag; on worker threads, ./hasher.ts, so the event
// loop only moves bytes) and then renames it into place, so a reader
// never sees a partial blob, a crash leaves only a temp file, and memory stays flat whatever the size. Small bodies
// that arrived whole take the same steps with synchronous calls (see `storeSmall`). Reads are ranged file streams.
// Deletion renames the file aside first and checks its mtime, so a writer that re-created the same content during
// the sweep keeps it (see `delete`).
//
// The JetStream object-store implementation of the same interface is ./object-store-backend.ts (BLOBSTORE_BACKEND=
// jetstream); S3/MinIO would map the same way (PUT with the id as key, GET with Range). Ids, events and read models
// do not depend on the backend.
import { createHash, randomBytes } from "node:crypto";
import { closeSync, createWriteStream, existsSync, openSync, renameSync, utimesSync, writevSync, type WriteStream } from "node:fs";
import { link, mkdir, open, readdir, rename, rm, stat, unlink, utimes } from "node:fs/promises";
import { once } from "node:events";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { HttpError } from "../../schemas/http-error.ts";
import type { ByteRange } from "../../schemas/blobstore/validation.ts";
import { sharedHasher, type Hasher } from "./hasher.ts";

export interface PutResult {
  readonly blobId: string;
  readonly size: number;
  /** lowercase hex MD5 of the bytes (S3 ETag) */
  readonly md5: string;
  /** true when the same bytes were already stored */
  readonly deduplicated: boolean;
}

export interface OpenedBlob {
  readonly size: number;
  /** The whole blob (or range) in memory, for small reads. */
  readonly bytes?: Buffer;
  /** A stream of the blob (or range), for large reads. */
  readonly stream?: Readable;
}

export interface PutOptions {
  readonly maxBytes?: number;
  /** Called with a chunk of the source once the backend no longer reads it (a backend may never call it). */
  readonly release?: (chunk: Uint8Array) => void;
}

export interface OpenOptions {
  /** Reads up to this many bytes come back whole (`bytes`), larger ones as a stream. */
  readonly inlineBelow?: number;
  /** Where a whole read goes (default a fresh buffer); a backend may return other memory. */
  readonly alloc?: (size: number) => Buffer;
  /** The blob's size when the caller knows it (its read model records it): a backend may skip looking it up. */
  readonly size?: number;
}

export interface BlobBackend {
  readonly name: string;
  /** Stores a byte stream; rejects with HttpError(413) past `maxBytes` and leaves nothing behind on failure. */
  put(source: AsyncIterable<Uint8Array> | Uint8Array, opts?: PutOptions): Promise<PutResult>;
  /** Size of a stored blob, null when absent. */
  stat(blobId: string): Promise<{ size: number; mtimeMs: number } | null>;
  /** Opens a blob (or a range of it); small blobs come back as bytes, larger ones as a stream. null when absent. */
  open(blobId: string, range?: ByteRange, opts?: OpenOptions): Promise<OpenedBlob | null>;
  /** Removes a blob unless it was (re)written within `graceMs`; true when removed. */
  delete(blobId: string, opts?: { graceMs?: number }): Promise<boolean>;
  /** Every stored blob id (for garbage-collection scans). */
  list(): AsyncIterable<string>;
}

/**
 * Identical bytes already stored at `path`: only their mtime is refreshed, so a running sweep's grace period sees them
 * (one metadata call, made synchronously). False when absent, or gone since (a sweep). existsSync first: a failed
 * utimes builds an error, ~10x the cost.
 */
function refreshIfStored(path: string): boolean {
  if (!existsSync(path)) return false;
  try {
    const now = Date.now() / 1000;
    utimesSync(path, now, now);
    return true;
  } catch {
    return false;
  }
}

export const blobIdFromDigest = (digest: Buffer) => digest.toString("base64url");
export const hexFromBlobId = (blobId: string) => Buffer.from(blobId, "base64url").toString("hex");

/** The blob id of some bytes, computed the way the backend does. */
export function blobIdOf(bytes: Uint8Array): string {
  return blobIdFromDigest(createHash("sha256").update(bytes).digest());
}

const BUFFER_PUT = 1024 * 1024;
/**
 * Buffered bodies up to this size are stored with synchronous calls when no fsync is asked for: on the page cache
 * each takes a few µs, where the promise API costs a thread-pool round trip apiece (most of a small write's CPU).
 */
const SYNC_PUT = 64 * 1024;

export interface FsBackendOptions {
  /** fsync each blob before it is renamed into place (off by default, like JetStream's own sync interval). */
  readonly fsync?: boolean;
  /** Threads hashing bodies (BLOBSTORE_HASH_THREADS; default every core but one; 0 hashes on the calling thread). */
  readonly hashThreads?: number;
}

export class FsBlobBackend implements BlobBackend {
  readonly name = "filesystem";
  private readonly blobsDir: string;
  private readonly tmpDir: string;
  private readonly trashDir: string;
  private readonly madeDirs = new Set<string>();
  private ready?: Promise<void>;
  private readonly hasher: Hasher;
  /** Temp and trash names: a random prefix per backend and a counter (no entropy drawn per write). */
  private readonly namePrefix = randomBytes(8).toString("hex");
  private named = 0;

  constructor(readonly root: string, private readonly opts: FsBackendOptions = {}) {
    this.hasher = sharedHasher(opts.hashThreads);
    this.blobsDir = join(root, "blobs");
    this.tmpDir = join(root, "tmp");
    this.trashDir = join(root, "trash");
  }

  private init(): Promise<void> {
    this.ready ??= (async () => {
      await mkdir(this.blobsDir, { recursive: true });
      await mkdir(this.tmpDir, { recursive: true });
      await mkdir(this.trashDir, { recursive: true });
      // Leftovers of a crash mid-write or mid-sweep: nothing refers to them.
      for (const dir of [this.tmpDir, this.trashDir]) for (const f of await readdir(dir)) await unlink(join(dir, f)).catch(() => undefined);
    })();
    return this.ready;
  }

  private uniqueName(): string {
    return `${this.namePrefix}-${(this.named++).toString(36)}`;
  }

  pathOf(blobId: string): string {
    const hex = hexFromBlobId(blobId);
    return join(this.blobsDir, hex.slice(0, 2), hex);
  }

  async put(source: AsyncIterable<Uint8Array> | Uint8Array, opts: PutOptions = {}): Promise<PutResult> {
    await this.init();
    const release = opts.release ?? (() => undefined);
    const tmp = join(this.tmpDir, this.uniqueName());
    const hash = this.hasher.start();
    let size = 0;
    const max = opts.maxBytes ?? Number.POSITIVE_INFINITY;
    // Bodies up to BUFFER_PUT stay in memory and are written with one writeFile (fewer trips through the libuv
    // pool than a stream's open/write/close); larger ones stream to the temp file with backpressure, so memory
    // stays flat whatever the size (at most BUFFER_PUT per concurrent write).
    let buffered: Uint8Array[] = [];
    let bufferedBytes = 0;
    let ws: WriteStream | undefined;
    let failed: Error | undefined;
    let drained: (() => void) | undefined;
    try {
      const chunks = source instanceof Uint8Array ? [source] : source;
      for await (const chunk of chunks) {
        if (failed) throw failed;
        size += chunk.byteLength;
        if (size > max) throw new HttpError(413, `body exceeds the limit of ${max} bytes`, { limit: max });
        await hash.update(chunk);
        if (!ws) {
          if (bufferedBytes + chunk.byteLength <= BUFFER_PUT) {
            buffered.push(chunk);
            bufferedBytes += chunk.byteLength;
            continue;
          }
          ws = createWriteStream(tmp, { flags: "wx", highWaterMark: 1 << 20 });
          ws.on("error", (err) => {
            failed ??= err;
            drained?.();
          });
          ws.on("drain", () => drained?.());
          for (const b of buffered) ws.write(b, () => release(b));
          buffered = [];
        }
        if (!ws.write(chunk, () => release(chunk))) await new Promise<void>((r) => (drained = r));
        drained = undefined;
      }
      if (failed) throw failed;
      const { sha256, md5 } = await hash.digest();
      const blobId = blobIdFromDigest(sha256);
      const final = this.pathOf(blobId);
      const dir = final.slice(0, final.lastIndexOf("/"));
      if (!this.madeDirs.has(dir)) {
        await mkdir(dir, { recursive: true });
        this.madeDirs.add(dir);
      }
      if (ws) {
        ws.end();
        await once(ws, "close");
        if (failed) throw failed;
      } else if (bufferedBytes <= SYNC_PUT && !this.opts.fsync) {
        const deduplicated = this.storeSmall(tmp, final, buffered, bufferedBytes);
        buffered.forEach(release);
        return { blobId, size, md5, deduplicated };
      } else {
        if (refreshIfStored(final)) {
          buffered.forEach(release);
          return { blobId, size, md5, deduplicated: true };
        }
        const fh = await open(tmp, "wx");
        try {
          // writev: no concatenated copy of the body (large short-lived buffers are what makes V8 collect)
          let off = 0;
          while (off < bufferedBytes) {
            const { bytesWritten } = await fh.writev(off === 0 ? buffered : [Buffer.concat(buffered).subarray(off)]);
            off += bytesWritten;
          }
          buffered.forEach(release);
        } finally {
          await fh.close();
        }
      }
      if (this.opts.fsync) {
        const fh = await open(tmp, "r");
        await fh.sync().finally(() => fh.close());
      }
      const existed = ws ? await stat(final).then(() => true, () => false) : false;
      // rename gives the content a fresh inode and mtime: a concurrent sweep sees it as recently written.
      await rename(tmp, final);
      return { blobId, size, md5, deduplicated: existed };
    } catch (err) {
      hash.abort();
      ws?.destroy();
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
  }

  /**
   * The buffered path's steps for a small body, synchronously: identical bytes already stored only get their mtime
   * refreshed; otherwise the body goes to `tmp`, renamed into place (`put` removes `tmp` if a step fails). True when
   * deduplicated.
   */
  private storeSmall(tmp: string, final: string, chunks: Uint8Array[], bytes: number): boolean {
    if (refreshIfStored(final)) return true;
    const fd = openSync(tmp, "wx");
    try {
      for (let off = 0; off < bytes; ) off += writevSync(fd, off === 0 ? chunks : [Buffer.concat(chunks).subarray(off)]);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, final);
    return false;
  }

  async stat(blobId: string): Promise<{ size: number; mtimeMs: number } | null> {
    try {
      const s = await stat(this.pathOf(blobId));
      return { size: s.size, mtimeMs: s.mtimeMs };
    } catch {
      return null;
    }
  }

  async open(blobId: string, range?: ByteRange, opts: OpenOptions = {}): Promise<OpenedBlob | null> {
    let fh;
    try {
      fh = await open(this.pathOf(blobId), "r");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
    try {
      // content-addressed: the size recorded for this id is the file's size, so a known one saves an fstat
      const total = opts.size ?? (await fh.stat()).size;
      const start = range?.start ?? 0;
      const end = range ? Math.min(range.end, total - 1) : total - 1;
      const size = Math.max(0, end - start + 1);
      if (size <= (opts.inlineBelow ?? 0)) {
        const bytes = opts.alloc?.(size) ?? Buffer.allocUnsafe(size);
        let off = 0;
        while (off < size) {
          const { bytesRead } = await fh.read(bytes, off, size - off, start + off);
          if (!bytesRead) break;
          off += bytesRead;
        }
        await fh.close();
        return { size: off, bytes: off === size ? bytes : bytes.subarray(0, off) };
      }
      // The stream owns the descriptor from here and closes it when it ends or is destroyed.
      const stream = fh.createReadStream({ start, end, highWaterMark: 256 * 1024, autoClose: true });
      return { size, stream };
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
  }

  /**
   * Renames the blob aside, then looks at its mtime: a writer that stored the same bytes within `graceMs` (its
   * rename happened before ours) gets the file back; one that stores them after our rename creates a new file.
   * Either way a blob that a concurrent writer is about to reference survives.
   */
  async delete(blobId: string, opts: { graceMs?: number } = {}): Promise<boolean> {
    await this.init();
    const final = this.pathOf(blobId);
    const aside = join(this.trashDir, `${hexFromBlobId(blobId)}.${this.uniqueName()}`);
    try {
      await rename(final, aside);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw err;
    }
    const s = await stat(aside);
    if (Date.now() - s.mtimeMs < (opts.graceMs ?? 0)) {
      await link(aside, final).catch(() => undefined);
      await unlink(aside);
      return false;
    }
    await unlink(aside);
    return true;
  }

  /** Refreshes a blob's mtime (keeps it through the grace period of a running sweep). */
  async touch(blobId: string): Promise<void> {
    const now = new Date();
    await utimes(this.pathOf(blobId), now, now).catch(() => undefined);
  }

  async *list(): AsyncIterable<string> {
    await this.init();
    for (const a of await readdir(this.blobsDir).catch(() => [] as string[])) {
      for (const f of await readdir(join(this.blobsDir, a)).catch(() => [] as string[])) {
        if (/^[0-9a-f]{64}$/.test(f)) yield Buffer.from(f, "hex").toString("base64url");
      }
    }
  }

  /** Removes everything (tests). */
  async destroy(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
  }
}
