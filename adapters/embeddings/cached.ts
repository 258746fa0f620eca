// Bounded LRU of query embeddings: a repeated recall skips the embedder (a network round trip with the real one).
// Keys are HMAC-SHA256 digests under a per-process random key, so the cache never holds query text and its keys
// are useless outside this process.
import { createHmac, randomBytes } from "node:crypto";
import type { EmbeddingPort } from "../ports.ts";

export class CachedEmbedder implements EmbeddingPort {
  readonly name: string;
  readonly dims: number;
  private readonly lru = new Map<string, Float32Array>(); // insertion order = recency order
  private readonly hmacKey = randomBytes(32);
  hits = 0;
  misses = 0;

  constructor(private readonly inner: EmbeddingPort, private readonly maxEntries = 1000) {
    this.name = inner.name;
    this.dims = inner.dims;
  }

  get size(): number {
    return this.lru.size;
  }

  private key(text: string): string {
    return createHmac("sha256", this.hmacKey).update(text).digest("base64url");
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const keys = texts.map((t) => this.key(t));
    const out: Float32Array[] = new Array(texts.length);
    const missing = new Map<string, number[]>(); // key -> positions, so duplicates in a batch are embedded once
    keys.forEach((k, i) => {
      const v = this.lru.get(k);
      if (v) {
        this.lru.delete(k);
        this.lru.set(k, v);
        out[i] = v.slice(); // callers own their vectors; the cached one stays pristine
        this.hits++;
      } else missing.set(k, [...(missing.get(k) ?? []), i]);
    });
    if (missing.size > 0) {
      this.misses += missing.size;
      const entries = [...missing];
      const vecs = await this.inner.embed(entries.map(([, pos]) => texts[pos[0]]));
      entries.forEach(([k, pos], j) => {
        this.lru.set(k, vecs[j]);
        for (const p of pos) out[p] = vecs[j].slice();
      });
      for (const k of this.lru.keys()) {
        if (this.lru.size <= this.maxEntries) break;
        this.lru.delete(k);
      }
    }
    return out;
  }
}
