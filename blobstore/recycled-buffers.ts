// Recycled buffers for the bytes of writes and reads. A fresh buffer per MiB moved is ~1 MiB of external memory,
// and V8 answers every ~64 MiB of it with a full collection (measured: ~0.9 ms of the event loop per MiB written,
// ~0.3 ms per MiB read). Writes: uWS reuses its receive buffer after each data callback, so body chunks are copied
// out — into 512 KiB slabs that the backend hands back once their bytes are written. Reads: a whole-blob read goes
// into a 1 MiB slab that the HTTP layer hands back once uWS has taken the body. A slab that never comes back (an
// aborted request, an error, a backend that keeps chunks) is collected as usual: a pool cannot leak, it only keeps up
// to `maxFree` slabs for reuse, and it lends a slab to one holder at a time.
export class RecycledBuffers {
  private readonly free: ArrayBuffer[] = [];
  /** Slabs lent out: a release of anything else (or a second release) is ignored. */
  private readonly lent = new WeakSet<ArrayBufferLike>();

  /** Slabs of `slabBytes`, for requests of `minBytes` or more (smaller ones get plain buffers). */
  constructor(private readonly slabBytes: number, private readonly minBytes: number, private readonly maxFree: number) {}

  /** `n` bytes (uninitialised), in a slab when the size fits one. */
  readonly take = (n: number): Buffer => {
    if (n < this.minBytes || n > this.slabBytes) return Buffer.allocUnsafe(n);
    const slab = this.free.pop() ?? new ArrayBuffer(this.slabBytes);
    this.lent.add(slab);
    return Buffer.from(slab, 0, n);
  };

  /** A copy of `chunk` (the `bodyChunk` of a stream-mode route). */
  readonly copy = (chunk: ArrayBuffer): Buffer => {
    const b = this.take(chunk.byteLength);
    b.set(new Uint8Array(chunk));
    return b;
  };

  /** Takes a buffer back once nothing reads it any more. */
  readonly release = (b: Uint8Array): void => {
    const slab = b.buffer;
    if (!this.lent.delete(slab)) return;
    if (this.free.length < this.maxFree) this.free.push(slab as ArrayBuffer);
  };
}

const KiB = 1024;
/** Write routes' body chunks: uWS hands at most its 512 KiB receive buffer per callback. */
export const bodyBuffers = () => new RecycledBuffers(512 * KiB, 64 * KiB, 32);
/** Whole-blob reads above the content cache's 64 KiB, up to the 1 MiB read in one piece. */
export const readBuffers = () => new RecycledBuffers(1024 * KiB, 64 * KiB, 16);
