// The submit pipeline of the local ledger. Transactions are verified on arrival and queued; one committer per process
// takes the queue in blocks (group commit): each transaction is decided against the materialised state plus the
// writes of the ones before it, the block is appended to `chain.tx` expecting the last sequence the state reflects,
// then materialised into KV. A conflicting append (another process went first) catches the state up from the stream
// and decides the block again; every step is idempotent, so retries are safe.
import { existsSync } from "node:fs";
import { Cause, Effect, Exit, Schedule } from "effect";
import { blake2b } from "@noble/hashes/blake2.js";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { STREAMS } from "../../../eventlog/subjects.ts";
import { followConsumer } from "../../../eventlog/follow-consumer.ts";
import { AppendConflict, reject, StoreUnavailable, TxRejected, unavailable, type LedgerError } from "./errors.ts";
import { decide, keysToPrefetch, pagesToPrefetch } from "./decide.ts";
import { StateView, type TxOutcome } from "./state-view.ts";
import { SYSTEM_KINDS, type ChainBlock, type ChainEvent, type ChainRecord, type TxReceipt } from "./model.ts";
import { type SignedTx } from "../../../schemas/chain.ts";
import { CHAIN_TX_SUBJECT, KEYS } from "./state-keys.ts";
import type { ChainStateStore } from "./state-store.ts";
import { StateCache } from "./state-cache.ts";
import { isVerifyFailure, verifySignedTx, type VerifiedTx } from "./tx.ts";
import type { ChainTarget } from "../../../schemas/chain.ts";
import { opsOf, type SequencedBlock } from "./writes.ts";
import { isWrongLastSequence } from "../../../eventlog/jetstream-errors.ts";
import { NETWORK_PROFILES, type NetworkProfile } from "../../../config/network-profile.ts";
import { networkDelay } from "../../network-latency.ts";
import { gasCoinId, objectLockConflictMessage, OwnedObjectLocks } from "./owned-object-locks.ts";

export interface SubmitResult {
  readonly digest: string;
  /** chain.tx sequence of the block holding the transaction; for a no-op, the sequence the state was read at. */
  readonly seq: number;
  /** false when nothing was appended for this call (an idempotent repeat) */
  readonly appended: boolean;
  readonly outcome: TxOutcome;
}

export interface SubmitOptions {
  /**
   * false appends without writing the KV state, as a process that crashes right after its append would
   * (crash-recovery tests). Default true.
   */
  readonly materialise?: boolean;
}

export interface LedgerOptions {
  /** The network, package and registry this ledger's transactions must name. */
  readonly target: ChainTarget;
  readonly submitTimeoutMs?: number;
  readonly clock?: () => number;
  /** Most transactions per appended block. Default 128. */
  readonly maxBlockTxs?: number;
  /**
   * MEMRELAY_NETWORK_PROFILE: a user's transaction is in flight for the profile's finality before it commits, and
   * under the owned-object rule its gas coin stays locked meanwhile. Default `local` (no wait, no locks).
   */
  readonly profile?: NetworkProfile;
}

type ItemResult = { readonly ok: true; readonly value: SubmitResult } | { readonly ok: false; readonly error: LedgerError };

interface Pending {
  readonly vtx: VerifiedTx;
  readonly tx: SignedTx;
  readonly materialise: boolean;
  readonly settle: (r: ItemResult) => void;
}

type Slot =
  | { readonly kind: "result"; readonly result: ItemResult }
  | { readonly kind: "noop"; readonly digest: string; readonly outcome: TxOutcome }
  | { readonly kind: "record"; readonly digest: string; readonly outcome: TxOutcome }
  | { readonly kind: "same-as"; readonly index: number };

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const DIRECT_READ_GAP = 32;
/** Blocks replayed as one set of combined writes. */
const REPLAY_GROUP = 128;
/** Blocks asked for per pull of a replay. */
const REPLAY_PULL = 256;
/** Bound on the signed bytes per block, so a block with its events stays under the default 1 MiB max_payload. */
const MAX_BLOCK_TX_BYTES = 256 * 1024;

/** Backoff between rounds lost to another writer: 2 ms growing ×1.5, capped at 40 ms, jittered. */
const conflictSchedule = Schedule.min([Schedule.exponential("2 millis", 1.5), Schedule.spaced("40 millis")]).pipe(Schedule.jittered);
const unavailableSchedule = Schedule.exponential("50 millis", 2).pipe(Schedule.jittered);

function decodeBlock(data: Uint8Array): ChainBlock {
  return JSON.parse(decoder.decode(data)) as ChainBlock;
}

/** The outcome of an already executed transaction, rebuilt from its events. */
export function outcomeOfEvents(events: readonly ChainEvent[], sender: string): TxOutcome {
  let outcome: TxOutcome = {};
  for (const e of events) {
    switch (e.type) {
      case "Genesis":
        outcome = { ...outcome, genesis: e.genesis };
        break;
      case "AccountCreated":
      case "DelegateKeyAdded":
      case "DelegateKeyRemoved":
      case "AccountDeactivated":
      case "AccountReactivated":
        outcome = { ...outcome, account: e.account };
        break;
      case "BlobRecorded":
        outcome = { ...outcome, blobs: [...(outcome.blobs ?? []), e.blob] };
        break;
      case "ObjectPut":
        outcome = { ...outcome, object: e.object };
        break;
      case "BalanceChanged":
        if (e.reason === "mint" || (e.reason === "transfer" && e.address === sender)) outcome = { ...outcome, balance: { address: e.address, token: e.token, amount: e.amount } };
        break;
    }
  }
  return outcome;
}

function fromReceipt(receipt: TxReceipt): SubmitResult {
  return { digest: receipt.digest, seq: receipt.seq, appended: false, outcome: outcomeOfEvents(receipt.events, receipt.sender) };
}

export class Ledger {
  private readonly clock: () => number;
  private readonly queue: Pending[] = [];
  private draining = false;
  private drained: Promise<void> = Promise.resolve();
  /** What this process's rounds read and wrote, current while no other writer moves meta.applied. */
  private readonly cache = new StateCache();
  private readonly profile: NetworkProfile;
  private readonly locks = new OwnedObjectLocks();

  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    readonly store: ChainStateStore,
    private readonly opts: LedgerOptions,
  ) {
    this.clock = opts.clock ?? Date.now;
    this.profile = opts.profile ?? NETWORK_PROFILES.local;
  }

  /** Verifies a signed transaction, then executes it in this process's next block. */
  submit(tx: SignedTx, options: SubmitOptions = {}): Effect.Effect<SubmitResult, LedgerError> {
    return Effect.suspend(() => {
      const vtx = verifySignedTx(tx, this.opts.target, this.clock());
      if (isVerifyFailure(vtx)) return Effect.fail(new TxRejected(vtx));
      return this.inFlight(vtx, this.enqueue(vtx, tx, options.materialise !== false));
    });
  }

  /** Executes a transaction this process built and signed itself (tx.ts signOwnTransaction): no verification again. */
  submitOwn(own: { readonly tx: SignedTx; readonly vtx: VerifiedTx }): Effect.Effect<SubmitResult, LedgerError> {
    return this.inFlight(own.vtx, this.enqueue(own.vtx, own.tx, true));
  }

  private enqueue(vtx: VerifiedTx, tx: SignedTx, materialise: boolean): Effect.Effect<SubmitResult, LedgerError> {
    return Effect.callback<SubmitResult, LedgerError>((resume) => {
      this.queue.push({ vtx, tx, materialise, settle: (r) => resume(r.ok ? Effect.succeed(r.value) : Effect.fail(r.error)) });
      this.drain();
    });
  }

  /**
   * `commit` as the network profile has it: the transaction's gas coin locked (refused as Sui refuses equivocation
   * when another transaction holds it), the finality waited, then committed and unlocked; a stalled wallet's
   * (MEMRELAY_NETWORK_STALLED_WALLETS, while MEMRELAY_NETWORK_STALL_SWITCH's file exists if set) waits for good, its
   * coin locked. The ledger operator's
   * set-up transactions (genesis, mint, put_object) stand for no user's and neither wait nor lock.
   */
  private inFlight(vtx: VerifiedTx, commit: Effect.Effect<SubmitResult, LedgerError>): Effect.Effect<SubmitResult, LedgerError> {
    const profile = this.profile;
    if (SYSTEM_KINDS.has(vtx.body.kind)) return commit;
    // The local profile adds nothing, not even an asynchronous hop. A stalled wallet's transaction never gets final.
    const stalls = profile.stalledWallets.has(vtx.gasOwner) && (profile.stallSwitch === undefined || existsSync(profile.stallSwitch));
    const final = stalls ? Effect.never : commit;
    const waited = profile.ownedTxFinality.maxMs > 0 ? Effect.promise(() => networkDelay(profile.ownedTxFinality)).pipe(Effect.andThen(final)) : final;
    if (!profile.ownedObjectLocks) return waited;
    const owned = [gasCoinId(vtx.gasOwner)];
    return Effect.suspend(() => {
      const conflict = this.locks.lock(owned, vtx.digest);
      if (conflict) return Effect.fail(reject("rejected", objectLockConflictMessage(conflict)));
      return waited.pipe(Effect.onExit((exit) => Effect.sync(() => this.locks.unlock(owned, vtx.digest, Exit.isSuccess(exit)))));
    });
  }

  /** Last sequence of the CHAIN stream (an upper bound of the last chain.tx block; 0 when empty). */
  lastSeq(): Effect.Effect<number, StoreUnavailable> {
    return Effect.tryPromise({
      try: () => this.jsm.streams.info(STREAMS.chain).then((info) => info.state.last_seq),
      catch: unavailable("read chain stream state"),
    });
  }

  /** Materialises every chain.tx block newer than the state's applied sequence; returns the applied sequence. */
  catchUp(): Effect.Effect<number, StoreUnavailable> {
    const self = this;
    return Effect.gen(function* () {
      const last = yield* self.lastSeq();
      const { applied } = yield* self.store.applied();
      if (applied >= last) return applied;
      // Other writers' blocks change the state this process cached (the next round would notice the new sequence).
      self.cache.clear();
      if (last - applied > DIRECT_READ_GAP) return yield* self.replayFrom(applied + 1);
      let upTo = applied;
      for (let seq = applied + 1; seq <= last; seq++) {
        const msg = yield* Effect.tryPromise({
          // nats.js answers a sequence with no message with null
          try: () => self.jsm.streams.getMessage(STREAMS.chain, { seq }),
          catch: unavailable(`read chain message ${seq}`),
        });
        if (msg && msg.subject === CHAIN_TX_SUBJECT) {
          yield* self.store.apply(opsOf([{ seq: msg.seq, records: decodeBlock(msg.data).records }], self.opts.target.registryId), msg.seq);
          yield* self.store.markApplied(msg.seq);
          upTo = msg.seq;
        }
      }
      return upTo;
    });
  }

  /** Materialises the whole chain.tx stream again (a change of the state's key layout); returns the applied sequence. */
  rematerialise(): Effect.Effect<number, StoreUnavailable> {
    return this.replayFrom(1);
  }

  // ------------------------------------------------------------------ group commit

  /** Resolves once every queued transaction has been committed or refused. */
  async idle(): Promise<void> {
    while (this.draining) await this.drained;
  }

  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    this.drained = (async () => {
      try {
        while (this.queue.length > 0) {
          const batch = this.takeBatch();
          const exit = await Effect.runPromiseExit(this.commit(batch));
          if (Exit.isSuccess(exit)) exit.value.forEach((r, i) => batch[i]!.settle(r));
          else {
            const err = Cause.squash(exit.cause);
            const error = err instanceof StoreUnavailable || err instanceof TxRejected ? err : unavailable("commit")(err);
            for (const p of batch) p.settle({ ok: false, error });
          }
        }
      } finally {
        this.draining = false;
      }
    })();
  }

  /** Consecutive queued transactions with the same materialise flag, bounded in count and bytes. */
  private takeBatch(): Pending[] {
    const max = this.opts.maxBlockTxs ?? 128;
    const first = this.queue[0]!;
    let n = 0;
    let bytes = 0;
    while (n < this.queue.length && n < max) {
      const p = this.queue[n]!;
      if (p.materialise !== first.materialise) break;
      bytes += p.tx.tx_bytes.length;
      if (n > 0 && bytes > MAX_BLOCK_TX_BYTES) break;
      n++;
    }
    return this.queue.splice(0, n);
  }

  private commit(batch: readonly Pending[]): Effect.Effect<ItemResult[], StoreUnavailable> {
    const self = this;
    const round = Effect.gen(function* () {
      const prefetch = new Set<string>([KEYS.genesis]);
      for (const p of batch) {
        prefetch.add(KEYS.tx(p.vtx.digest));
        for (const k of keysToPrefetch(p.vtx, self.opts.target.registryId)) prefetch.add(k);
      }
      // applied first: meta.applied is raised only after a block's writes, so every read that follows sees at least
      // that state; a newer one makes the append below conflict, never succeed on stale reads (or cached ones).
      const applied = yield* self.store.applied();
      self.cache.validFor(applied.applied);
      const view = new StateView(self.store, self.cache);
      yield* Effect.all([...prefetch].map((k) => view.entry(k)), { concurrency: 64, discard: true });
      const pages = new Set(batch.flatMap((p) => pagesToPrefetch(p.vtx, (key) => view.seen.get(key)?.value)));
      yield* Effect.all([...pages].map((k) => view.entry(k)), { concurrency: 64, discard: true });
      const now = self.clock();
      const slots: Slot[] = [];
      const records: ChainRecord[] = [];
      const firstByDigest = new Map<string, number>();
      for (const [i, p] of batch.entries()) {
        const { vtx } = p;
        const earlier = firstByDigest.get(vtx.digest);
        if (earlier !== undefined) {
          slots.push({ kind: "same-as", index: earlier });
          continue;
        }
        firstByDigest.set(vtx.digest, i);
        const receipt = view.seen.get(KEYS.tx(vtx.digest))?.value as TxReceipt | null | undefined;
        if (receipt) {
          slots.push({ kind: "result", result: { ok: true, value: fromReceipt(receipt) } });
          continue;
        }
        const decision = yield* decide(view, vtx, { now, registryId: self.opts.target.registryId }).pipe(Effect.catchTag("TxRejected", (e) => Effect.succeed(e)));
        if (decision instanceof TxRejected) slots.push({ kind: "result", result: { ok: false, error: decision } });
        else if (decision.kind === "noop") slots.push({ kind: "noop", digest: vtx.digest, outcome: decision.outcome });
        else {
          const record: ChainRecord = {
            v: 1,
            digest: vtx.digest,
            tx: p.tx,
            kind: vtx.body.kind,
            sender: vtx.body.sender,
            gas_owner: vtx.body.gas_owner ?? null,
            gas_used: decision.gasUsed.toString(),
            executed_at: now,
            events: decision.events,
          };
          records.push(record);
          view.layer(opsOf([{ seq: 0, records: [record] }], self.opts.target.registryId));
          slots.push({ kind: "record", digest: vtx.digest, outcome: decision.outcome });
        }
      }
      let seq = applied.applied;
      if (records.length > 0) {
        const ack = yield* self.append({ v: 1, records }, applied.applied);
        if (ack.duplicate) {
          // Appended by an earlier attempt whose ack was lost: materialise it and decide again from the receipts.
          yield* self.catchUp();
          return yield* Effect.fail(new AppendConflict({ expected: applied.applied }));
        }
        seq = ack.seq;
        if (batch[0]!.materialise) {
          const written = yield* self.store.apply(opsOf([{ seq, records }], self.opts.target.registryId), seq, view.seen).pipe(Effect.tapError(() => Effect.sync(() => self.cache.clear())));
          yield* self.store.markApplied(seq, applied).pipe(Effect.tapError(() => Effect.sync(() => self.cache.clear())));
          // The block follows the state the round read (its append expected that sequence): cached state + its writes.
          self.cache.advance(seq, written);
        } else self.cache.clear();
      }
      const results: ItemResult[] = [];
      for (const slot of slots) {
        switch (slot.kind) {
          case "result":
            results.push(slot.result);
            break;
          case "noop":
            results.push({ ok: true, value: { digest: slot.digest, seq, appended: false, outcome: slot.outcome } });
            break;
          case "record":
            results.push({ ok: true, value: { digest: slot.digest, seq, appended: true, outcome: slot.outcome } });
            break;
          case "same-as": {
            const r = results[slot.index]!;
            results.push(r.ok ? { ok: true, value: { ...r.value, appended: false } } : r);
            break;
          }
        }
      }
      return results;
    });

    return round.pipe(
      Effect.catchTag("AppendConflict", (conflict) => self.catchUp().pipe(Effect.andThen(Effect.fail(conflict)))),
      Effect.retry({ schedule: conflictSchedule, times: 500, while: (e) => e._tag === "AppendConflict" }),
      Effect.retry({ schedule: unavailableSchedule, times: 3, while: (e) => e._tag === "StoreUnavailable" }),
      Effect.catchTag("AppendConflict", () => Effect.fail(new StoreUnavailable({ message: "ledger too contended, gave up" }))),
      Effect.timeoutOrElse({
        duration: self.opts.submitTimeoutMs ?? 30_000,
        orElse: () => Effect.fail(new StoreUnavailable({ message: "ledger commit timed out" })),
      }),
    );
  }

  /**
   * Applies every block from `from` on through a consumer of its own (large gaps: a lost KV bucket, a long outage).
   * Every block must be the consumer's next delivery past the last one (followConsumer): a skipped or repeated block
   * fails the replay (StoreUnavailable, retried) before it is applied, instead of leaving a state that missed one.
   */
  private replayFrom(from: number): Effect.Effect<number, StoreUnavailable> {
    return Effect.tryPromise({
      try: async () => {
        this.cache.clear();
        const consumer = await followConsumer({ js: this.js, jsm: this.jsm }, CHAIN_TX_SUBJECT, from - 1, REPLAY_PULL, STREAMS.chain);
        let lastApplied = from - 1;
        let group: SequencedBlock[] = [];
        const flush = async () => {
          if (group.length === 0) return;
          const seq = group[group.length - 1]!.seq;
          await Effect.runPromise(this.store.apply(opsOf(group, this.opts.target.registryId), seq));
          await Effect.runPromise(this.store.markApplied(seq));
          lastApplied = seq;
          group = [];
        };
        try {
          if (consumer.pending === 0) return lastApplied;
          for await (const m of consumer.messages) {
            consumer.check(m);
            group.push({ seq: m.seq, records: decodeBlock(m.data).records });
            if (group.length >= REPLAY_GROUP) await flush();
            if (m.info.pending === 0) break;
          }
          await flush();
        } finally {
          await consumer.close();
        }
        return lastApplied;
      },
      catch: unavailable(`replay chain blocks from ${from}`),
    });
  }

  private append(block: ChainBlock, expected: number): Effect.Effect<{ seq: number; duplicate: boolean }, AppendConflict | StoreUnavailable> {
    const msgID = Buffer.from(blake2b(encoder.encode(block.records.map((r) => r.digest).join(",")), { dkLen: 16 })).toString("hex");
    return Effect.tryPromise({
      try: () =>
        this.js.publish(CHAIN_TX_SUBJECT, encoder.encode(JSON.stringify(block)), {
          msgID,
          expect: { streamName: STREAMS.chain, lastSubjectSequence: expected },
        }),
      catch: (err) => (isWrongLastSequence(err) ? new AppendConflict({ expected }) : unavailable("append to chain")(err)),
    }).pipe(Effect.map((ack) => ({ seq: ack.seq, duplicate: ack.duplicate })));
  }
}
