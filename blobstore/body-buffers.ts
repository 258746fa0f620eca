// Recycled receive buffers for streamed bodies. uWS reuses its receive buffer after each data callback, so every
// chunk is copied out; a fresh buffer per chunk is ~1 MiB of external memory per MiB received, and V8 answers every
// ~64 MiB of it with a full collection (~1 ms of the event loop per MiB written, measured). Large chunks are copied
// into slabs that the backend hands back once their bytes are written (`release`), so a steady stream of uploads
// allocates nothing. A slab that never comes back (an aborted request, a backend that keeps chunks) is collected as
// usual: the pool cannot leak, it only keeps up to MAX_FREE slabs for reuse.
const SLAB = 512 * 1024; // uWS delivers at most its 512 KiB receive buffer per callback
const MIN_POOLED = 64 * 1024;
const MAX_FREE = 32;

export class BodyBuffers {
  private readonly free: ArrayBuffer[] = [];
  /** Slabs currently lent out: a release of anything else (or a second release) is ignored. */
  private readonly lent = new WeakSet<ArrayBufferLike>();

  /** The `bodyChunk` of a stream-mode route. */
  readonly copy = (chunk: ArrayBuffer): Buffer => {
    const n = chunk.byteLength;
    if (n < MIN_POOLED || n > SLAB) return Buffer.from(chunk.slice(0));
    const slab = this.free.pop() ?? new ArrayBuffer(SLAB);
    new Uint8Array(slab).set(new Uint8Array(chunk));
    this.lent.add(slab);
    return Buffer.from(slab, 0, n);
  };

  /** Takes a chunk back once nothing reads it any more (its bytes are written). */
  readonly release = (chunk: Uint8Array): void => {
    const slab = chunk.buffer;
    if (!this.lent.delete(slab)) return;
    if (this.free.length < MAX_FREE) this.free.push(slab as ArrayBuffer);
  };
}
