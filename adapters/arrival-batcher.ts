// Work batched by arrival: while `maxInFlight` batches are out, new items queue, and the next batch takes all of them
// at once (up to `maxBatch`). No timer: an idle caller waits for nothing, a busy one makes bigger batches. Each item
// is answered by a batch sent after it was asked (never by one already in flight), so a batched read sees every write
// answered before it, as its own query would. What batching saves is the per-call cost (a pool checkout and round
// trip for the blob store's public lookups; a transaction's signing, verification and gas for blob registrations,
// adapters/chain/record-batcher.ts), paid once per batch instead of per item.

interface Waiting<K, V> {
  readonly key: K;
  readonly resolve: (v: V) => void;
  readonly reject: (err: unknown) => void;
}

export interface ArrivalBatcherOptions {
  /**
   * Gather what is asked in one turn of the event loop before the first batch goes (one macrotask later): for callers
   * woken together, such as the long polls that one announcement ends, which would otherwise send the first of them
   * alone.
   */
  readonly wholeTurn?: boolean;
  /**
   * Let a batch's first item wait up to this long for company before the batch goes (ms; 0: none): where each batch
   * costs much (a chain transaction's gas) and its items come spread over a few milliseconds, as the records of one
   * quilt's members do. An item that waited that long already (behind batches in flight) goes at once.
   */
  readonly gatherMs?: number;
}

export class ArrivalBatcher<K, V> {
  private readonly queue: Waiting<K, V>[] = [];
  private inFlight = 0;
  private turnScheduled = false;
  /** When the oldest queued item was queued (performance.now()), for gatherMs. */
  private oldestQueuedAt = 0;
  private gatherTimer: ReturnType<typeof setTimeout> | undefined;

  /** `run` answers the keys in order (one value per key, duplicates included); a rejection fails the whole batch. */
  constructor(
    private readonly run: (keys: readonly K[]) => Promise<readonly V[]>,
    private readonly maxInFlight = 2,
    private readonly maxBatch = 256,
    private readonly opts: ArrivalBatcherOptions = {},
  ) {}

  submit(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      if (!this.queue.length) this.oldestQueuedAt = performance.now();
      this.queue.push({ key, resolve, reject });
      this.kick();
    });
  }

  /** Sends what is queued: now, or with wholeTurn once the current turn is over (never splitting one). */
  private kick(): void {
    if (this.opts.gatherMs) return this.gather(this.opts.gatherMs);
    if (!this.opts.wholeTurn) return this.flush();
    if (this.turnScheduled) return;
    this.turnScheduled = true;
    setImmediate(() => {
      this.turnScheduled = false;
      this.flush();
    });
  }

  /** Sends once the oldest queued item has waited `gatherMs`, or at once when a whole batch is queued. */
  private gather(gatherMs: number): void {
    if (!this.queue.length) return;
    const left = gatherMs - (performance.now() - this.oldestQueuedAt);
    if (left <= 0 || this.queue.length >= this.maxBatch) {
      clearTimeout(this.gatherTimer);
      this.gatherTimer = undefined;
      return this.flush();
    }
    this.gatherTimer ??= setTimeout(() => {
      this.gatherTimer = undefined;
      this.gather(gatherMs);
    }, left);
  }

  private flush(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      let run: Promise<readonly V[]>;
      try {
        run = this.run(batch.map((w) => w.key));
      } catch (err) {
        run = Promise.reject(err);
      }
      // the next batch goes out before this one's callers resume
      const done = () => {
        this.inFlight--;
        this.kick();
      };
      run.then(
        (values) => {
          done();
          batch.forEach((w, i) => w.resolve(values[i]));
        },
        (err: unknown) => {
          done();
          batch.forEach((w) => w.reject(err));
        },
      );
    }
  }
}
