// Recycled buffers for request and response bodies. uWS reuses its receive buffer after each data callback, so a
// streamed body's chunks are copied out, and a whole-blob read needs a buffer too; a fresh one per MiB moved is ~1 MiB
// of external memory, which V8 answers every ~64 MiB with a full collection (measured: ~0.9 ms of the event loop per
// MiB written, ~0.3 ms per MiB read, the largest single cost of the console's listener after the bytes themselves).
// A slab counts its holders (say the console's multipart parser while it parses a chunk and the storage write for
// the file data handed to it) and returns to the pool when the last one lets go. A slab that never comes back (an
// aborted request, an error, a holder that keeps it) is collected as usual: a pool cannot leak, it only keeps up to
// `maxFree` slabs for reuse, and never lends a slab that still has a holder.

export interface ChunkHolds {
  /** One more holder of the slab under `view` (no-op for buffers not from the pool). */
  retain(view: Uint8Array): void;
  /** A holder lets go; the slab is reused once none is left (extra releases are ignored). */
  release(view: Uint8Array): void;
}

export class RecycledBuffers implements ChunkHolds {
  private readonly free: ArrayBuffer[] = [];
  private readonly holders = new WeakMap<ArrayBufferLike, number>();

  /** Slabs of `slabBytes`, for requests of `minBytes` or more (smaller ones get plain buffers). */
  constructor(private readonly slabBytes: number, private readonly minBytes: number, private readonly maxFree: number) {}

  /** `n` bytes (uninitialised), in a slab when the size fits one; the caller holds it until it releases it. */
  readonly take = (n: number): Buffer => {
    if (n < this.minBytes || n > this.slabBytes) return Buffer.allocUnsafe(n);
    const slab = this.free.pop() ?? new ArrayBuffer(this.slabBytes);
    this.holders.set(slab, 1);
    return Buffer.from(slab, 0, n);
  };

  /** A copy of `chunk` (the `bodyChunk` of a stream-mode route), held by the caller. */
  readonly copy = (chunk: ArrayBuffer): Buffer => {
    const b = this.take(chunk.byteLength);
    b.set(new Uint8Array(chunk));
    return b;
  };

  readonly retain = (view: Uint8Array): void => {
    const n = this.holders.get(view.buffer);
    if (n !== undefined) this.holders.set(view.buffer, n + 1);
  };

  readonly release = (view: Uint8Array): void => {
    const n = this.holders.get(view.buffer);
    if (n === undefined) return;
    if (n > 1) return void this.holders.set(view.buffer, n - 1);
    this.holders.delete(view.buffer);
    if (this.free.length < this.maxFree) this.free.push(view.buffer as ArrayBuffer);
  };
}

const KiB = 1024;
/** Streamed bodies' chunks: uWS hands at most its 512 KiB receive buffer per callback. */
export const bodyBuffers = () => new RecycledBuffers(512 * KiB, 64 * KiB, 32);
/** Whole-blob reads above the blob store's 64 KiB content cache, up to the 1 MiB read in one piece. */
export const readBuffers = () => new RecycledBuffers(1024 * KiB, 64 * KiB, 16);
