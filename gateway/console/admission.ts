// An upload's admission (key state, bucket, role, rate, grant, quota), decided while its bytes already stream into
// storage: the checks cost round trips to NATS and Postgres that would otherwise delay every upload. A refusal wins
// over any other failure of the request, and stops the bytes at once.

export class Admission<T> {
  /** The checks' outcome (rejects with the refusal). */
  readonly result: Promise<T>;
  private refusal: { error: unknown } | undefined;
  private readonly refused: Promise<void>;
  /** waits of gate() to wake at a refusal */
  private readonly listeners = new Set<() => void>();

  constructor(check: () => Promise<T>) {
    this.result = check();
    this.refused = new Promise((resolve) => {
      this.result.catch((error: unknown) => {
        this.refusal = { error };
        for (const wake of this.listeners) wake();
        resolve();
      });
    });
  }

  throwIfRefused(): void {
    if (this.refusal) throw this.refusal.error;
  }

  /** Runs `f`; if it fails, a refusal answers instead. */
  async first<R>(f: () => R | Promise<R>): Promise<R> {
    try {
      return await f();
    } catch (err) {
      await this.result;
      throw err;
    }
  }

  /**
   * `data` until a refusal, which ends it at once (not at the next chunk, which a slow client may take long to send).
   * The storage write then ends cleanly — a short object, removed by the caller — rather than by resetting the
   * blob store's connection mid-request. (Each wait registers its own listener: racing every chunk against one
   * long-lived promise would keep every chunk reachable until the upload ends.)
   */
  gate(data: AsyncIterable<Buffer>): AsyncIterableIterator<Buffer> {
    const it = data[Symbol.asyncIterator]();
    const end = (): IteratorResult<Buffer> => {
      // with a next() still pending, the source is released once it settles
      void it.return?.()?.catch(() => undefined);
      return { done: true, value: undefined };
    };
    const listeners = this.listeners;
    const refused = () => this.refusal !== undefined;
    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      next: () => {
        if (refused()) return Promise.resolve(end());
        return new Promise<IteratorResult<Buffer>>((resolve, reject) => {
          const onRefusal = () => resolve(end());
          listeners.add(onRefusal);
          it.next().then(
            (r) => {
              listeners.delete(onRefusal);
              resolve(refused() ? end() : r);
            },
            (err: unknown) => {
              listeners.delete(onRefusal);
              reject(err);
            },
          );
        });
      },
      return: () => Promise.resolve(end()),
    };
  }

  /** Rejects with the refusal once `settled` (the work it stops) has settled; never settles once admitted. */
  async refusedAfter(settled: () => Promise<unknown> | undefined): Promise<never> {
    await this.refused;
    await settled()?.catch(() => undefined);
    throw this.refusal!.error;
  }
}
