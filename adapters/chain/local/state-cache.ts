// The chain state entries one ledger process has read or written, for the state at one `meta.applied` sequence.
// While no other writer has moved meta.applied (every change of the state goes through an appended block whose
// materialisation raises it), they are current: a commit round takes them from here instead of a KV read per key,
// and its compare-and-set writes start from exact revisions. Another sequence empties the cache; a round deciding on
// a stale view cannot commit anyway (its append expects the sequence it read).
import type { Entry } from "./state-store.ts";

const DEFAULT_MAX_ENTRIES = 20_000;

export class StateCache {
  private readonly entries = new Map<string, Entry>();
  private at = -1;

  constructor(private readonly maxEntries = DEFAULT_MAX_ENTRIES) {}

  /** Keeps the entries only if they describe state `applied` (the sequence a round has just read). */
  validFor(applied: number): void {
    if (applied === this.at) return;
    this.entries.clear();
    this.at = applied;
  }

  get(key: string): Entry | undefined {
    return this.entries.get(key);
  }

  /** An entry read at the cache's state; one written by a newer block (being materialised elsewhere) is not kept. */
  remember(key: string, entry: Entry): void {
    if (entry.seq <= this.at) this.put(key, entry);
  }

  /** The state after the block at `seq`, appended right after the cached state and materialised as `written`. */
  advance(seq: number, written: ReadonlyMap<string, Entry>): void {
    for (const [key, entry] of written) this.put(key, entry);
    this.at = seq;
  }

  /** Forgets everything (the state was changed by blocks this cache did not see). */
  clear(): void {
    this.entries.clear();
    this.at = -1;
  }

  private put(key: string, entry: Entry): void {
    this.entries.delete(key); // most recently used last
    this.entries.set(key, entry);
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }
}
