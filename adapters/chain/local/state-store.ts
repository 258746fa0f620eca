// The materialised ledger state in the `chain_state` KV bucket. Every value carries `_seq`, the chain.tx sequence
// that wrote it; writes are compare-and-set on the KV revision and skip when the stored `_seq` is already as new, so
// concurrent appliers (the submitter and another process catching up) converge and never regress a key.
import { Effect } from "effect";
import type { KV, KvEntry, Kvm } from "@nats-io/kv";
import { StoreUnavailable, unavailable } from "./errors.ts";
import { CHAIN_STATE_BUCKET, KEYS } from "./state-keys.ts";
import { applyOp, probablyExists, type Op } from "./writes.ts";
import { isWrongLastSequence } from "../../../eventlog/jetstream-errors.ts";

export interface Entry {
  /** null when absent or a tombstone */
  readonly value: Record<string, unknown> | null;
  /** KV revision, 0 when the key never existed */
  readonly revision: number;
  /** chain.tx sequence that wrote it, 0 when absent */
  readonly seq: number;
}

const ABSENT: Entry = { value: null, revision: 0, seq: 0 };
/** No guess: read the entry before the first write. */
const UNREAD = Symbol("unread");
const encoder = new TextEncoder();
const MAX_CAS_ATTEMPTS = 64;
/** KV writes in flight per apply. */
const APPLY_CONCURRENCY = 256;

function decodeEntry(e: KvEntry | null): Entry {
  if (!e) return ABSENT;
  if (e.operation !== "PUT" || e.value.length === 0) return { value: null, revision: e.revision, seq: 0 };
  const raw = e.json<Record<string, unknown>>();
  const seq = typeof raw._seq === "number" ? raw._seq : 0;
  return { value: raw.deleted === true ? null : raw, revision: e.revision, seq };
}

export class ChainStateStore {
  private constructor(readonly kv: KV) {}

  static async open(kvm: Kvm, replicas: number): Promise<ChainStateStore> {
    // Direct gets may be answered by a lagging follower in a cluster; auth reads must be current, so only R1 uses them.
    const kv = await kvm.create(CHAIN_STATE_BUCKET, { history: 1, replicas, allow_direct: replicas === 1 });
    return new ChainStateStore(kv);
  }

  /** One KV get; a plain promise for hot read paths. */
  async get<T>(key: string): Promise<T | null> {
    return decodeEntry(await this.kv.get(key)).value as T | null;
  }

  read(key: string): Effect.Effect<Entry, StoreUnavailable> {
    return Effect.tryPromise({ try: async () => decodeEntry(await this.kv.get(key)), catch: unavailable(`read ${key}`) });
  }

  /** Sequence up to which chain.tx is fully materialised. */
  applied(): Effect.Effect<Entry & { readonly applied: number }, StoreUnavailable> {
    return this.read(KEYS.applied).pipe(Effect.map((e) => ({ ...e, applied: typeof e.value?.seq === "number" ? e.value.seq : 0 })));
  }

  /**
   * Applies the ops of the record at `seq`; `known` holds entries read earlier (a first CAS guess, re-read on conflict).
   * Resolves to the entries the keys hold afterwards.
   */
  apply(ops: readonly Op[], seq: number, known?: ReadonlyMap<string, Entry>): Effect.Effect<Map<string, Entry>, StoreUnavailable> {
    return Effect.tryPromise({
      try: async () => {
        const after = new Map<string, Entry>();
        let next = 0;
        const worker = async () => {
          while (next < ops.length) {
            const op = ops[next++]!;
            after.set(op.key, await this.applyOne(op, seq, known?.get(op.key) ?? (probablyExists(op) ? UNREAD : ABSENT)));
          }
        };
        await Promise.all(Array.from({ length: Math.min(APPLY_CONCURRENCY, ops.length) }, worker));
        return after;
      },
      catch: unavailable(`apply chain record ${seq}`),
    });
  }

  /** The key layout the state was materialised with (0: before layouts were versioned, or an empty state). */
  async layout(): Promise<number> {
    const v = (await this.get<{ version?: number }>(KEYS.layout))?.version;
    return typeof v === "number" ? v : 0;
  }

  /** Records the key layout, once the state has been materialised with it. */
  async setLayout(version: number): Promise<void> {
    await this.kv.put(KEYS.layout, encoder.encode(JSON.stringify({ version })));
  }

  /** Raises meta.applied to `seq` (never lowers it). Call only when every record up to `seq` is applied. */
  markApplied(seq: number, guess?: Entry): Effect.Effect<void, StoreUnavailable> {
    return Effect.tryPromise({
      try: () => this.applyOne({ kind: "set", key: KEYS.applied, value: { seq } }, seq, guess).then(() => undefined),
      catch: unavailable(`mark applied ${seq}`),
    });
  }

  /**
   * Compare-and-set loop from a guess of the current entry (UNREAD: read it first). Unread keys are mostly new objects.
   * Resolves to the entry the key holds afterwards.
   */
  private async applyOne(op: Op, seq: number, guess: Entry | typeof UNREAD = ABSENT): Promise<Entry> {
    let cur: Entry | undefined = guess === UNREAD ? undefined : guess;
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      if (!cur) cur = decodeEntry(await this.kv.get(op.key));
      if (cur.seq >= seq) return cur;
      const value = applyOp(op, cur.value, seq);
      const bytes = encoder.encode(JSON.stringify(value));
      try {
        const revision = cur.revision === 0 ? await this.kv.create(op.key, bytes) : await this.kv.update(op.key, bytes, cur.revision);
        return { value: value.deleted === true ? null : value, revision, seq };
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
        cur = undefined;
      }
    }
    throw new Error(`could not write ${op.key}: too many concurrent writers`);
  }
}
