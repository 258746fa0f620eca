// SHA-256 (the blob id) and MD5 (the `md5` field and ETag that the console stores) of a body, computed on worker
// threads. Both digests of a MiB cost ~3 ms of CPU (MD5 alone ~2 ms): on the event loop that capped the service at
// ~185 MiB/s of writes while the second core idled. Bodies up to INLINE_BYTES are hashed in place: a message round
// trip costs more than hashing a few KiB. Larger ones are copied into slots of a SharedArrayBuffer that each worker
// owns (no allocation per chunk: fresh MiB-sized buffers made V8 run full collections for their external memory), and
// a slot is reused once its worker has hashed it, so memory is fixed (SLOTS × SLOT_BYTES per worker) whatever the
// bodies, and a writer faster than its worker waits for a slot (backpressure).
import { createHash, type Hash } from "node:crypto";
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";

export interface Digests {
  readonly sha256: Buffer;
  /** lowercase hex */
  readonly md5: string;
}

/** Digests of one body, fed chunk by chunk: `update` resolves when the body may go on (backpressure); chunks must
 * not change afterwards. */
export interface BodyHash {
  update(chunk: Uint8Array): Promise<void> | void;
  digest(): Promise<Digests>;
  /** Drops the job (a failed put). */
  abort(): void;
}

const INLINE_BYTES = 64 * 1024;
const SLOT_BYTES = 256 * 1024;
const SLOTS = 16;

/** Plain CommonJS, so that the worker needs no TypeScript loader. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const shared = new Uint8Array(workerData.sab);
const jobs = new Map();
parentPort.on("message", (m) => {
  let j = jobs.get(m.id);
  if (!j) jobs.set(m.id, (j = { sha: createHash("sha256"), md5: createHash("md5") }));
  if (m.slot !== undefined) {
    const bytes = shared.subarray(m.slot * ${SLOT_BYTES}, m.slot * ${SLOT_BYTES} + m.length);
    j.sha.update(bytes);
    j.md5.update(bytes);
    parentPort.postMessage({ free: m.slot });
  }
  if (m.end || m.abort) jobs.delete(m.id);
  if (m.end) parentPort.postMessage({ id: m.id, sha256: j.sha.digest(), md5: j.md5.digest("hex") });
});`;

interface Job {
  finish?: (d: Digests) => void;
  fail: (err: Error) => void;
}

/** Hashes in place: the path for small bodies and for `threads: 0`. */
class InlineHash implements BodyHash {
  private readonly sha: Hash = createHash("sha256");
  private readonly md5: Hash = createHash("md5");
  update(chunk: Uint8Array): void {
    this.sha.update(chunk);
    this.md5.update(chunk);
  }
  digest(): Promise<Digests> {
    return Promise.resolve({ sha256: this.sha.digest(), md5: this.md5.digest("hex") });
  }
  abort(): void {}
}

class PoolWorker {
  readonly jobs = new Map<number, Job>();
  readonly worker: Worker;
  readonly shared = new Uint8Array(new SharedArrayBuffer(SLOTS * SLOT_BYTES));
  private readonly free = Array.from({ length: SLOTS }, (_, i) => i);
  private readonly waiting: ((slot: number) => void)[] = [];
  gone?: Error;

  constructor(onGone: (w: PoolWorker) => void) {
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { sab: this.shared.buffer } });
    this.worker.unref();
    this.worker.on("message", (m: { free?: number; id?: number; sha256?: Uint8Array; md5?: string }) => {
      if (m.free !== undefined) return this.release(m.free);
      const job = this.jobs.get(m.id!);
      this.jobs.delete(m.id!);
      job?.finish?.({ sha256: Buffer.from(m.sha256!), md5: m.md5! });
    });
    const gone = (err: Error) => {
      if (this.gone) return;
      this.gone = err;
      onGone(this);
      for (const job of this.jobs.values()) job.fail(err);
      this.jobs.clear();
      // writers waiting for a slot wake up and see `gone`
      for (const w of this.waiting.splice(0)) w(0);
    };
    this.worker.on("error", gone);
    this.worker.on("exit", (code) => gone(new Error(`hash worker exited with code ${code}`)));
  }

  /** A free slot, waiting for one while all are being hashed. */
  slot(): number | Promise<number> {
    return this.free.pop() ?? new Promise((r) => this.waiting.push(r));
  }

  release(slot: number): void {
    const next = this.waiting.shift();
    if (next) next(slot);
    else this.free.push(slot);
  }
}

/** Body hashes from `threads` workers (created on first use, never keeping the process alive). */
export class Hasher {
  private readonly workers: PoolWorker[] = [];
  private nextId = 1;

  constructor(readonly threads: number) {}

  /** A hash for one body; it moves to a worker once the body passes INLINE_BYTES. */
  start(): BodyHash {
    if (this.threads <= 0) return new InlineHash();
    let held: Uint8Array[] | null = [];
    let heldBytes = 0;
    let remote: RemoteHash | undefined;
    return {
      update: (chunk) => {
        if (remote) return remote.update(chunk);
        held!.push(chunk);
        heldBytes += chunk.byteLength;
        if (heldBytes <= INLINE_BYTES) return;
        remote = this.remote();
        const first = held!;
        held = null;
        return first.reduce<Promise<void>>((p, c) => p.then(() => remote!.update(c)), Promise.resolve());
      },
      digest: () => {
        if (remote) return remote.digest();
        const h = new InlineHash();
        for (const c of held!) h.update(c);
        return h.digest();
      },
      abort: () => remote?.abort(),
    };
  }

  private remote(): RemoteHash {
    // Least busy worker; a new one while fewer than `threads` exist.
    let w = this.workers.find((x) => x.jobs.size === 0);
    if (!w && this.workers.length < this.threads) {
      w = new PoolWorker((gone) => this.workers.splice(this.workers.indexOf(gone) >>> 0, 1));
      this.workers.push(w);
    }
    w ??= this.workers.reduce((a, b) => (b.jobs.size < a.jobs.size ? b : a));
    return new RemoteHash(w, this.nextId++);
  }
}

class RemoteHash implements BodyHash {
  private failed?: Error;
  constructor(private readonly w: PoolWorker, private readonly id: number) {
    w.jobs.set(id, { fail: (err) => (this.failed = err) });
  }
  async update(chunk: Uint8Array): Promise<void> {
    for (let off = 0; off < chunk.byteLength; ) {
      const slot = await this.w.slot();
      const failed = this.failed ?? this.w.gone;
      if (failed) {
        this.w.release(slot);
        throw failed;
      }
      const length = Math.min(SLOT_BYTES, chunk.byteLength - off);
      this.w.shared.set(chunk.subarray(off, off + length), slot * SLOT_BYTES);
      this.w.worker.postMessage({ id: this.id, slot, length });
      off += length;
    }
  }
  digest(): Promise<Digests> {
    const failed = this.failed ?? this.w.gone;
    if (failed) return Promise.reject(failed);
    return new Promise<Digests>((resolve, reject) => {
      this.w.jobs.set(this.id, { finish: resolve, fail: reject });
      this.w.worker.postMessage({ id: this.id, end: true });
    });
  }
  abort(): void {
    this.failed ??= new Error("hash aborted");
    if (!this.w.jobs.delete(this.id)) return;
    this.w.worker.postMessage({ id: this.id, abort: true });
  }
}

/**
 * BLOBSTORE_HASH_THREADS, else every core but one (the event loop's; none on a single core). Read from the process
 * environment here, so that every FsBlobBackend of a process (the service's, a benchmark's raw one) hashes alike.
 */
export function defaultHashThreads(env: Record<string, string | undefined> = process.env): number {
  const v = env.BLOBSTORE_HASH_THREADS;
  if (v !== undefined && v !== "") {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`BLOBSTORE_HASH_THREADS must be a whole number ≥ 0 (got ${v})`);
    return n;
  }
  return Math.max(0, availableParallelism() - 1);
}

const pools = new Map<number, Hasher>();
/** One pool per size and process: threads are a process resource, shared by every backend in it. */
export function sharedHasher(threads = defaultHashThreads()): Hasher {
  let h = pools.get(threads);
  if (!h) pools.set(threads, (h = new Hasher(threads)));
  return h;
}
