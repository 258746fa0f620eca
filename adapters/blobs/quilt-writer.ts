// Gathers blobs handed to it (any owner's) into Walrus quilts: a quilt goes out when it holds QUILT_MAX_PATCHES
// blobs, when QUILT_MAX_BYTES would be passed, or QUILT_MAX_WAIT_MS after its first blob, whichever comes first. One
// store for the lot (Walrus charges every blob a fixed metadata overhead that dominates small blobs); each caller
// gets its own quilt patch id. A failed quilt fails every caller in it with the reason: nothing is dropped silently.
// A blob over QUILT_MAX_BYTES on its own goes alone, in a quilt of one.
import type { QuiltLimits } from "../../config/env.ts";

export interface QuiltPatchStored {
  readonly quiltId: string;
  readonly quiltPatchId: string;
}

/** Stores patches as one quilt; answers the quilt's blob id and each identifier's quilt patch id. */
export type StoreQuilt = (patches: readonly { identifier: string; contents: Uint8Array }[]) => Promise<{ quiltId: string; patchIds: ReadonlyMap<string, string> }>;

export interface Clock {
  /** Runs `fn` after `ms`; the returned function cancels it. */
  after(ms: number, fn: () => void): () => void;
}

export const realClock: Clock = {
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
};

interface Waiting {
  readonly contents: Uint8Array;
  readonly resolve: (stored: QuiltPatchStored) => void;
  readonly reject: (err: unknown) => void;
}

export class QuiltWriter {
  private pending: Waiting[] = [];
  private pendingBytes = 0;
  private cancelTimer: (() => void) | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly store: StoreQuilt, private readonly limits: QuiltLimits, private readonly clock: Clock = realClock) {}

  /** Resolves with the blob's quilt patch id once the quilt holding it is stored; rejects with the quilt's failure. */
  write(contents: Uint8Array): Promise<QuiltPatchStored> {
    return new Promise((resolve, reject) => {
      const item = { contents, resolve, reject };
      if (contents.byteLength > this.limits.maxBytes) return this.send([item]);
      if (this.pendingBytes + contents.byteLength > this.limits.maxBytes) this.flush();
      this.pending.push(item);
      this.pendingBytes += contents.byteLength;
      if (this.pending.length >= this.limits.maxPatches) this.flush();
      else if (this.pending.length === 1) this.cancelTimer = this.clock.after(this.limits.maxWaitMs, () => this.flush());
    });
  }

  /** Blobs gathered and not yet sent. */
  get gathered(): number {
    return this.pending.length;
  }

  /** Sends what is gathered now and waits for every quilt in flight (a stop drains, it does not drop). */
  async drain(): Promise<void> {
    this.flush();
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  private flush(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    if (!this.pending.length) return;
    const batch = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    this.send(batch);
  }

  private send(batch: Waiting[]): void {
    // Identifiers only need to be unique within the quilt; the caller is found again by its position.
    const width = String(batch.length - 1).length;
    const patches = batch.map((w, i) => ({ identifier: `p${String(i).padStart(width, "0")}`, contents: w.contents }));
    const done = this.store(patches).then(
      ({ quiltId, patchIds }) => {
        patches.forEach((p, i) => {
          const quiltPatchId = patchIds.get(p.identifier);
          if (quiltPatchId) batch[i].resolve({ quiltId, quiltPatchId });
          else batch[i].reject(new Error(`the publisher stored quilt ${quiltId} without patch ${p.identifier}`));
        });
      },
      (err) => batch.forEach((w) => w.reject(err)),
    );
    const tracked = done.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }
}
