// Coalesces concurrent embedding requests into batches: many jobs in flight share one embedder call, which is
// how the neural embedder reaches its batch throughput and the hashing one avoids per-call overhead.
import type { EmbeddingPort } from "../ports.ts";

interface Waiting { text: string; resolve: (v: Float32Array) => void; reject: (e: unknown) => void }

export class EmbedBatcher {
  private queue: Waiting[] = [];
  private scheduled = false;

  constructor(private readonly embedder: EmbeddingPort, private readonly maxBatch = 64) {}

  get dims() {
    return this.embedder.dims;
  }

  get name() {
    return this.embedder.name;
  }

  embed(text: string): Promise<Float32Array> {
    return new Promise((resolve, reject) => {
      this.queue.push({ text, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    this.scheduled = false;
    while (this.queue.length) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const vectors = await this.embedder.embed(batch.map((w) => w.text));
        batch.forEach((w, i) => w.resolve(vectors[i]));
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
  }
}
