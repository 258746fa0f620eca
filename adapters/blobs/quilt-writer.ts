// Gathers blobs handed to it (any owner's) into Walrus quilts: a quilt goes out when it holds QUILT_MAX_PATCHES
// blobs, when QUILT_MAX_BYTES would be passed, or QUILT_MAX_WAIT_MS after its first blob, whichever comes first. One
// store for the lot (Walrus charges every blob a fixed metadata overhead that dominates small blobs); each caller
// gets its own quilt patch id. A failed quilt fails every caller in it with the reason: nothing is dropped silently.
// A blob over QUILT_MAX_BYTES on its own goes alone, in a quilt of one.

export interface QuiltLimits {
  readonly maxPatches: number;
  readonly maxBytes: number;
  readonly maxWaitMs: number;
}

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

export const DEFAULT_QUILT_LIMITS: QuiltLimits = { maxPatches: 256, maxBytes: 8 * 1024 * 1024, maxWaitMs: 50 };

function positiveInt(env: Record<string, string | undefined>, name: string, fallback: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${name} must be an integer from 1 to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * QUILT_MAX_PATCHES (256; a quilt of a 1000-shard committee holds at most 666), QUILT_MAX_BYTES (8 MiB of blob
 * bytes), QUILT_MAX_WAIT_MS (50). An invalid value stops the process rather than quietly taking the default.
 */
export function quiltLimitsFromEnv(env: Record<string, string | undefined>): QuiltLimits {
  return {
    maxPatches: positiveInt(env, "QUILT_MAX_PATCHES", DEFAULT_QUILT_LIMITS.maxPatches, 666),
    maxBytes: positiveInt(env, "QUILT_MAX_BYTES", DEFAULT_QUILT_LIMITS.maxBytes, 1024 * 1024 * 1024),
    maxWaitMs: positiveInt(env, "QUILT_MAX_WAIT_MS", DEFAULT_QUILT_LIMITS.maxWaitMs, 60_000),
  };
}

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
