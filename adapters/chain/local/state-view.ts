// What a decision reads and returns: the memoised view of the ledger state one block of decisions reads through,
// and the decision itself. Shared by the ledger's rules (decide.ts, console-decide.ts) and the ledger that applies them.
import { Effect } from "effect";
import type { StoreUnavailable } from "./errors.ts";
import type { Account, BlobRecord, ChainEvent, GenesisState } from "./model.ts";
import type { StoredObject } from "../../../schemas/chain.ts";
import type { ChainStateStore, Entry } from "./state-store.ts";
import type { StateCache } from "./state-cache.ts";
import { applyOp, type Op } from "./writes.ts";

/**
 * Reads of one block of decisions, memoised. `seen` holds the entries as read from KV (they seed the compare-and-set
 * of the writes that follow); the writes of records decided earlier in the block are layered on top.
 */
export class StateView {
  readonly seen = new Map<string, Entry>();
  /** Current values of keys written by earlier records of the block. */
  private readonly overlay = new Map<string, Record<string, unknown> | null>();
  /** Writes to keys not read yet, replayed on first read. */
  private readonly pending = new Map<string, Op[]>();
  /** `cache`: entries of this state kept across blocks by the ledger (state-cache.ts), read before KV and fed by it. */
  constructor(private readonly store: ChainStateStore, private readonly cache?: StateCache) {}

  entry(key: string): Effect.Effect<Entry, StoreUnavailable> {
    const hit = this.seen.get(key) ?? this.cache?.get(key);
    if (hit) {
      this.seen.set(key, hit);
      return Effect.succeed(hit);
    }
    return this.store.read(key).pipe(
      Effect.tap((e) =>
        Effect.sync(() => {
          this.seen.set(key, e);
          this.cache?.remember(key, e);
        }),
      ),
    );
  }

  get<T>(key: string): Effect.Effect<T | null, StoreUnavailable> {
    if (this.overlay.has(key)) return Effect.succeed(this.overlay.get(key) as T | null);
    return this.entry(key).pipe(
      Effect.map((e) => {
        const ops = this.pending.get(key);
        if (!ops) return e.value as T | null;
        this.pending.delete(key);
        let v: Record<string, unknown> | null = e.value;
        for (const op of ops) v = layered(op, v);
        this.overlay.set(key, v);
        return v as T | null;
      }),
    );
  }

  /** Layers the writes of a record decided in this block, so the next decisions see them. */
  layer(ops: readonly Op[]): void {
    for (const op of ops) {
      if (this.overlay.has(op.key)) this.overlay.set(op.key, layered(op, this.overlay.get(op.key) ?? null));
      else if (this.seen.has(op.key) && !this.pending.has(op.key)) this.overlay.set(op.key, layered(op, this.seen.get(op.key)!.value));
      else {
        const list = this.pending.get(op.key);
        if (list) list.push(op);
        else this.pending.set(op.key, [op]);
      }
    }
  }
}

function layered(op: Op, current: Record<string, unknown> | null): Record<string, unknown> | null {
  const next = applyOp(op, current, 0);
  return next.deleted === true ? null : next;
}

export interface TxOutcome {
  readonly account?: Account;
  /** A record_blob's blobs in the order of its records (an already recorded one as it was). */
  readonly blobs?: readonly BlobRecord[];
  readonly balance?: { readonly address: string; readonly token: string; readonly amount: string };
  readonly object?: StoredObject;
  readonly genesis?: GenesisState;
}

export type Decision =
  | { readonly kind: "append"; readonly events: readonly ChainEvent[]; readonly gasUsed: bigint; readonly outcome: TxOutcome }
  /** Nothing to append (an idempotent repeat): the outcome describes the existing state. */
  | { readonly kind: "noop"; readonly outcome: TxOutcome };

export interface DecideContext {
  readonly now: number;
  /** The ledger's account registry, parent of the derived blob object ids. */
  readonly registryId: string;
}
