// Bounded LRU of ciphertext by blob id (BLOB_CACHE_TTL_SECS, BLOB_CACHE_MAX_BYTES per entry, a total budget).
// Only ciphertext is cached; losing the cache costs a download, never correctness.

interface Entry { readonly bytes: Uint8Array; readonly expires: number }

export class CiphertextCache {
  private readonly entries = new Map<string, Entry>();
  private total = 0;

  constructor(private readonly ttlSecs: number, private readonly maxEntryBytes: number, private readonly maxTotalBytes: number) {}

  get enabled(): boolean {
    return this.ttlSecs > 0 && this.maxEntryBytes > 0;
  }

  get(id: string, now = Date.now()): Uint8Array | undefined {
    const e = this.entries.get(id);
    if (!e) return undefined;
    this.entries.delete(id);
    if (e.expires <= now) {
      this.total -= e.bytes.byteLength;
      return undefined;
    }
    this.entries.set(id, e); // most recently used goes last
    return e.bytes;
  }

  put(id: string, bytes: Uint8Array, now = Date.now()): void {
    if (!this.enabled || bytes.byteLength > this.maxEntryBytes) return;
    const old = this.entries.get(id);
    if (old) {
      this.total -= old.bytes.byteLength;
      this.entries.delete(id);
    }
    this.entries.set(id, { bytes, expires: now + this.ttlSecs * 1000 });
    this.total += bytes.byteLength;
    for (const [k, e] of this.entries) {
      if (this.total <= this.maxTotalBytes) break;
      this.entries.delete(k);
      this.total -= e.bytes.byteLength;
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
