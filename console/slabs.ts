// Recycled receive buffers for upload bodies (the `bodyChunk` of the upload route). uWS reuses its receive buffer
// after each data callback, so every chunk is copied out; a fresh buffer per chunk is ~1 MiB of external memory per
// MiB relayed, which V8 answers with full collections — the largest single cost of the console's listener per
// upload after the bytes themselves. Large chunks are copied into 512 KiB slabs that come back once nothing reads
// them: a slab counts its holders (the multipart parser while it parses the chunk, the storage write for the file
// data handed to it), and returns to the pool when the last one lets go. A slab whose holder never lets go (an
// aborted upload) is garbage-collected as usual: the pool cannot leak, it only keeps up to MAX_FREE slabs.

const SLAB = 512 * 1024; // uWS delivers at most its 512 KiB receive buffer per callback
const MIN_POOLED = 64 * 1024;
const MAX_FREE = 32;

export interface ChunkHolds {
  /** One more holder of the slab under `view` (no-op for buffers not from the pool). */
  retain(view: Uint8Array): void;
  /** A holder lets go; the slab is reused once none is left. */
  release(view: Uint8Array): void;
}

export class RecycledChunks implements ChunkHolds {
  private readonly free: ArrayBuffer[] = [];
  private readonly holders = new WeakMap<ArrayBufferLike, number>();

  /** Copies a uWS chunk; the caller holds the copy until it releases it. */
  readonly copy = (chunk: ArrayBuffer): Buffer => {
    const n = chunk.byteLength;
    if (n < MIN_POOLED || n > SLAB) return Buffer.from(chunk.slice(0));
    const slab = this.free.pop() ?? new ArrayBuffer(SLAB);
    new Uint8Array(slab).set(new Uint8Array(chunk));
    this.holders.set(slab, 1);
    return Buffer.from(slab, 0, n);
  };

  retain(view: Uint8Array): void {
    const n = this.holders.get(view.buffer);
    if (n !== undefined) this.holders.set(view.buffer, n + 1);
  }

  release(view: Uint8Array): void {
    const n = this.holders.get(view.buffer);
    if (n === undefined) return;
    if (n > 1) return void this.holders.set(view.buffer, n - 1);
    this.holders.delete(view.buffer);
    if (this.free.length < MAX_FREE) this.free.push(view.buffer as ArrayBuffer);
  }
}
