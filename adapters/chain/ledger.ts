// The submit pipeline of the local ledger: verify → decide against the materialised state → append to `chain.tx`
// expecting the last sequence the state reflects → materialise into KV. A conflicting append (another process went
// first) catches the state up from the stream and decides again; every step is idempotent, so retries are safe.
import { Effect, Schedule } from "effect";
import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { STREAMS } from "../../eventlog/subjects.ts";
import { AppendConflict, reject, StoreUnavailable, unavailable, type LedgerError } from "./errors.ts";
import { decide, StateView, type TxOutcome } from "./decide.ts";
import { TX_CLOCK_SKEW_MS, type ChainEvent, type ChainRecord, type SignedTx, type TxReceipt } from "./model.ts";
import { CHAIN_TX_SUBJECT, KEYS } from "./state-keys.ts";
import type { ChainStateStore } from "./state-store.ts";
import { isVerifyFailure, verifySignedTx } from "./tx.ts";
import { opsOf } from "./writes.ts";

export interface SubmitResult {
  readonly digest: string;
  /** chain.tx sequence of the transaction; for a no-op, the sequence the state was read at. */
  readonly seq: number;
  /** false when nothing was appended (idempotent repeat) */
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
  readonly network: string;
  readonly submitTimeoutMs?: number;
  readonly clock?: () => number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const DIRECT_READ_GAP = 32;

/** Backoff between decide/append rounds lost to another writer: 2 ms growing ×1.5, capped at 40 ms, jittered. */
const conflictSchedule = Schedule.min([Schedule.exponential("2 millis", 1.5), Schedule.spaced("40 millis")]).pipe(Schedule.jittered);
const unavailableSchedule = Schedule.exponential("50 millis", 2).pipe(Schedule.jittered);

function isWrongLastSequence(err: unknown): boolean {
  const e = err as { code?: number; message?: string } | null;
  return e?.code === 10071 || /wrong last sequence/i.test(String(e?.message ?? err));
}

function isNoMessage(err: unknown): boolean {
  return /no message found|10037/i.test(String((err as Error)?.message ?? err));
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
        outcome = { ...outcome, blob: e.blob };
        break;
      case "ObjectPut":
        outcome = { ...outcome, object: e.object };
        break;
      case "BalanceChanged":
        if (e.reason !== "gas" && (e.reason === "mint" || e.address === sender)) outcome = { ...outcome, balance: { address: e.address, token: e.token, amount: e.amount } };
        break;
    }
  }
  return outcome;
}

export class Ledger {
  private readonly clock: () => number;

  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    readonly store: ChainStateStore,
    private readonly opts: LedgerOptions,
  ) {
    this.clock = opts.clock ?? Date.now;
  }

  /** Verifies and executes a signed transaction. */
  submit(tx: SignedTx, options: SubmitOptions = {}): Effect.Effect<SubmitResult, LedgerError> {
    const self = this;
    return Effect.gen(function* () {
      const vtx = verifySignedTx(tx, self.opts.network, self.clock(), TX_CLOCK_SKEW_MS);
      if (isVerifyFailure(vtx)) return yield* Effect.fail(reject(vtx.kind, vtx.message));

      const round = Effect.gen(function* () {
        const applied = yield* self.store.applied();
        const done = yield* self.store.read(KEYS.tx(vtx.digest));
        if (done.value) return self.fromReceipt(done.value as unknown as TxReceipt);

        const view = new StateView(self.store);
        const now = self.clock();
        const decision = yield* decide(view, vtx, { now });
        if (decision.kind === "noop") return { digest: vtx.digest, seq: applied.applied, appended: false, outcome: decision.outcome } satisfies SubmitResult;

        const record: ChainRecord = {
          v: 1,
          digest: vtx.digest,
          tx,
          kind: vtx.body.kind,
          sender: vtx.body.sender,
          gas_owner: vtx.body.gas_owner ?? null,
          gas_used: decision.gasUsed.toString(),
          executed_at: now,
          events: decision.events,
        };
        const ack = yield* self.append(record, applied.applied);
        if (ack.duplicate) {
          // Appended earlier (a retried publish whose first ack was lost): materialise and answer from the receipt.
          yield* self.catchUp();
          const again = yield* self.store.read(KEYS.tx(vtx.digest));
          if (again.value) return self.fromReceipt(again.value as unknown as TxReceipt);
          return yield* Effect.fail(new StoreUnavailable({ message: `transaction ${vtx.digest} appended but not found in the state` }));
        }
        if (options.materialise !== false) {
          yield* self.store.apply(opsOf(record, ack.seq), ack.seq, view.seen);
          yield* self.store.markApplied(ack.seq);
        }
        return { digest: vtx.digest, seq: ack.seq, appended: true, outcome: decision.outcome } satisfies SubmitResult;
      });

      const onConflict = round.pipe(
        Effect.catchTag("AppendConflict", (conflict) => self.catchUp().pipe(Effect.andThen(Effect.fail(conflict)))),
        Effect.retry({ schedule: conflictSchedule, times: 500, while: (e) => e._tag === "AppendConflict" }),
        Effect.retry({ schedule: unavailableSchedule, times: 3, while: (e) => e._tag === "StoreUnavailable" }),
        Effect.catchTag("AppendConflict", () => Effect.fail(new StoreUnavailable({ message: "ledger too contended, gave up" }))),
      );
      return yield* onConflict;
    }).pipe(
      Effect.timeoutOrElse({
        duration: self.opts.submitTimeoutMs ?? 30_000,
        orElse: () => Effect.fail(new StoreUnavailable({ message: "ledger submit timed out" })),
      }),
    );
  }

  /** Sequence of the last chain.tx message (0 when none). */
  lastSeq(): Effect.Effect<number, StoreUnavailable> {
    return Effect.tryPromise({
      try: () =>
        this.jsm.streams.getMessage(STREAMS.chain, { last_by_subj: CHAIN_TX_SUBJECT }).then(
          (m) => m?.seq ?? 0,
          (err) => {
            if (isNoMessage(err)) return 0;
            throw err;
          },
        ),
      catch: unavailable("read last chain sequence"),
    });
  }

  /** Materialises every chain.tx message newer than the state's applied sequence; returns the applied sequence. */
  catchUp(): Effect.Effect<number, StoreUnavailable> {
    const self = this;
    return Effect.gen(function* () {
      const last = yield* self.lastSeq();
      const { applied } = yield* self.store.applied();
      if (applied >= last) return applied;
      let upTo = applied;
      const apply = (seq: number, data: Uint8Array) =>
        Effect.gen(function* () {
          const record = JSON.parse(decoder.decode(data)) as ChainRecord;
          yield* self.store.apply(opsOf(record, seq), seq);
          yield* self.store.markApplied(seq);
          upTo = seq;
        });
      if (last - applied <= DIRECT_READ_GAP) {
        for (let seq = applied + 1; seq <= last; seq++) {
          const msg = yield* Effect.tryPromise({
            try: () =>
              self.jsm.streams.getMessage(STREAMS.chain, { seq }).catch((err) => {
                if (isNoMessage(err)) return null;
                throw err;
              }),
            catch: unavailable(`read chain message ${seq}`),
          });
          if (msg && msg.subject === CHAIN_TX_SUBJECT) yield* apply(msg.seq, msg.data);
        }
      } else {
        const messages = yield* self.readRange(applied + 1, last);
        for (const m of messages) yield* apply(m.seq, m.data);
      }
      return Math.max(upTo, last);
    });
  }

  private readRange(from: number, to: number): Effect.Effect<{ seq: number; data: Uint8Array }[], StoreUnavailable> {
    return Effect.tryPromise({
      try: async () => {
        const consumer = await this.js.consumers.get(STREAMS.chain, {
          filter_subjects: CHAIN_TX_SUBJECT,
          opt_start_seq: from,
          deliver_policy: DeliverPolicy.StartSequence,
        });
        const out: { seq: number; data: Uint8Array }[] = [];
        try {
          const it = await consumer.consume({ max_messages: 256 });
          for await (const m of it) {
            if (m.seq > to) break;
            out.push({ seq: m.seq, data: m.data });
            if (m.seq >= to) break;
          }
        } finally {
          await consumer.delete().catch(() => undefined);
        }
        return out;
      },
      catch: unavailable(`read chain messages ${from}..${to}`),
    });
  }

  private append(record: ChainRecord, expected: number): Effect.Effect<{ seq: number; duplicate: boolean }, AppendConflict | StoreUnavailable> {
    return Effect.tryPromise({
      try: () =>
        this.js.publish(CHAIN_TX_SUBJECT, encoder.encode(JSON.stringify(record)), {
          msgID: record.digest,
          expect: { streamName: STREAMS.chain, lastSubjectSequence: expected },
        }),
      catch: (err) => (isWrongLastSequence(err) ? new AppendConflict({ expected }) : unavailable("append to chain")(err)),
    }).pipe(Effect.map((ack) => ({ seq: ack.seq, duplicate: ack.duplicate })));
  }

  private fromReceipt(receipt: TxReceipt): SubmitResult {
    return { digest: receipt.digest, seq: receipt.seq, appended: false, outcome: outcomeOfEvents(receipt.events, receipt.sender) };
  }
}
