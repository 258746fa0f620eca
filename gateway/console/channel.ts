// A bounded hand-off of byte chunks from a producer to one async-iterating consumer, by reference (no copies). It
// replaces a PassThrough between the multipart parser and the storage upload: a Node stream costs several calls,
// events and allocations per chunk for what is here a queue and two promises.

export class ByteChannel implements AsyncIterable<Buffer> {
  private readonly queue: Buffer[] = [];
  private queued = 0;
  private ended = false;
  private failure: Error | undefined;
  /** the consumer stopped iterating: further chunks are dropped */
  private closed = false;
  private wakeConsumer: (() => void) | undefined;
  private wakeProducer: (() => void) | undefined;

  /** @param highWaterMark bytes queued before `push` waits for the consumer */
  constructor(private readonly highWaterMark: number) {}

  /** Queues a chunk; resolves once the queue is below the high-water mark again (or the consumer left). */
  push(chunk: Buffer): Promise<void> | undefined {
    if (this.closed || this.ended) return undefined;
    this.queue.push(chunk);
    this.queued += chunk.length;
    this.wake();
    if (this.queued < this.highWaterMark) return undefined;
    return new Promise((resolve) => (this.wakeProducer = resolve));
  }

  end(): void {
    this.ended = true;
    this.wake();
  }

  /** Ends the channel with an error: the consumer's iteration throws it. */
  fail(err: Error): void {
    this.failure ??= err;
    this.ended = true;
    this.wake();
  }

  private wake() {
    const w = this.wakeConsumer;
    this.wakeConsumer = undefined;
    w?.();
  }

  private release() {
    const w = this.wakeProducer;
    this.wakeProducer = undefined;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    try {
      for (;;) {
        if (this.failure) throw this.failure;
        const chunk = this.queue.shift();
        if (chunk) {
          this.queued -= chunk.length;
          if (this.queued < this.highWaterMark) this.release();
          yield chunk;
          continue;
        }
        if (this.ended) return;
        await new Promise<void>((resolve) => (this.wakeConsumer = resolve));
      }
    } finally {
      this.closed = true;
      this.queue.length = 0;
      this.queued = 0;
      this.release();
    }
  }
}
