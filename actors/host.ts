// The actor host: consumes commands from the CMD work queue, rehydrates an XState machine from its snapshot plus
// newer events, records the command's decision, runs the effect that the machine's state names, appends the
// resulting events, stores the snapshot and acknowledges. Retries and delays are the host's (nak with backoff),
// never XState timers, because timers do not survive a restore. While it lives, the host keeps every command it holds
// alive (working()), so its effects may take as long as their budget while a dead host's commands go to another host
// after a short ack wait (ACK_WAIT_MS). A command that fails for any other reason than a
// Transient or an unavailable backing service (a defect, a command it cannot parse or decide) is retried a bounded
// number of times and then set aside (eventlog/dead-letter.ts) with the aggregate's failure recorded, so it never
// occupies a worker or the queue indefinitely; so is a command whose machine has not come to rest after
// MAX_EFFECTS_PER_DELIVERY effects.
import { AckPolicy, DeliverPolicy, type JsMsg } from "@nats-io/jetstream";
import { Effect, Exit, Cause } from "effect";
import type { AnyStateMachine, AnyMachineSnapshot, ContextFrom } from "xstate";
import { contextOf, initialSnapshot, step, type SnapshotOf } from "./machine-steps.ts";
import type { CommandEnvelope, EventEnvelope, NewEvent } from "../schemas/envelope.ts";
import { ConcurrencyConflict, EventStore } from "../eventlog/event-store.ts";
import type { EventLog } from "../eventlog/connection.ts";
import { STREAMS, commandFilter } from "../eventlog/subjects.ts";
import type { Logger } from "../config/logger.ts";
import { deadLetterRecord, setAside } from "../eventlog/dead-letter.ts";
import { isUnavailable } from "../adapters/unavailable.ts";
import { settlesWithin } from "../config/time-bounds.ts";
import { isConsumerExisting } from "../eventlog/jetstream-errors.ts";
import { LIVE_CONSUME } from "../eventlog/live-consume.ts";

/** A failure the host retries later (the command stays on the queue). Anything else is a bug and is retried too, logged. */
export class Transient {
  readonly _tag = "Transient";
  constructor(readonly reason: string) {}
}

/**
 * A failure no retry can fix (e.g. a text too long to embed within its deadline): the command is set aside at once,
 * like a poison message after its bounded retries (dead letter, alert, the aggregate's failure events), so the same
 * work is never queued again.
 */
export class Permanent {
  readonly _tag = "Permanent";
  constructor(readonly reason: string) {}
}

/** Deliveries of a command failing with a defect before it is set aside. */
export const MAX_COMMAND_ATTEMPTS = 5;

/**
 * Effects one delivery may run. A machine that still names an effect after them is looping (its effects' events keep
 * leading back to work): the command is set aside, never acknowledged as if its work were done.
 */
export const MAX_EFFECTS_PER_DELIVERY = 16;

/** A failure that retrying will not fix. */
class Defect extends Error {}
/** An effect's Transient failure: retried for as long as it takes (an outage). */
class TransientFailure extends Error {}
/** An effect's Permanent failure: set aside on this delivery. */
class PermanentFailure extends Error {}

/** An effect: runs against the machine's context (`Ctx`) and reports what happened as events of the aggregate (`E`). */
export type EffectFn<Cmd, Ctx, E extends NewEvent = NewEvent> = (ctx: { aggregateId: string; context: Ctx; command: Cmd }) => Effect.Effect<E[], Transient | Permanent>;

/**
 * An actor: machine `M` over the events `E` of its catalogue (e.g. `NewJobEvent`), commands `Cmd`. `decide` sees the
 * machine's own snapshot type and effects its own context type; the host is the one place that reads untyped
 * snapshots and events back (the subject family names the catalogue).
 */
export interface ActorDefinition<Cmd extends CommandEnvelope = CommandEnvelope, M extends AnyStateMachine = AnyStateMachine, E extends NewEvent = NewEvent> {
  /** Aggregate type: events go to `evt.<type>.<id>`, commands come from `cmd.<type>.<id>`. */
  readonly aggregateType: string;
  readonly machine: M;
  /** The events a command produces in the current state (pure). An empty list means the command is already reflected. */
  decide(snapshot: SnapshotOf<M>, command: Cmd): E[];
  /** Effects by name; a state selects one with `meta: { effect: "<name>" }`. */
  readonly effects: Readonly<Record<string, EffectFn<Cmd, ContextFrom<M>, E>>>;
  /** Commands create their aggregate (ids minted by the gateway): skip reads on a first delivery. */
  readonly freshOnFirstDelivery?: boolean;
  /** Version of the persisted snapshot shape; a mismatch rebuilds from events. */
  readonly snapshotVersion: number;
  /**
   * No snapshot once the machine is final, for aggregates whose lookups read the event log: a final machine takes
   * no more events, so a later command rehydrates it from a short history, and the write is saved on every one.
   */
  readonly noFinalSnapshot?: boolean;
  /**
   * The events recording that a command was set aside (e.g. the job failed with the reason), appended to its
   * aggregate. `command` is undefined when the message could not even be parsed.
   */
  setAside?(command: Cmd | undefined, error: string): E[];
  /**
   * The time an effect may take for this command when it is longer than the host's effectTimeoutMs (e.g. derived
   * from the size of the text it embeds); the host keeps the command alive meanwhile so JetStream does not redeliver it.
   */
  effectBudgetMs?(effect: string, command: Cmd): number;
}

export interface ActorHostOptions {
  /** Commands run at once, not counting those parked in an effect that only waits (EffectMeta.waitsOnly). */
  readonly concurrency: number;
  /**
   * Commands this host holds at most (the consumer's max_ack_pending): running, parked and queued for a slot.
   * Default: 4 × concurrency, at least 256.
   */
  readonly maxHeld?: number;
  /**
   * Bytes of commands this host holds at most (running, parked and queued; a remember command carries its text). A
   * delivery that would pass it is handed back for HELD_BYTES_RETRY_MS, to another host or to this one once it holds
   * less; a host holding nothing takes any one command, however large. Default: no bound but `maxHeld`.
   */
  readonly maxHeldBytes?: number;
  /** The consumer's ack wait (default ACK_WAIT_MS). */
  readonly ackWaitMs?: number;
  readonly maxBackoffMs?: number;
  readonly effectTimeoutMs?: number;
  /** Chain network named in dead-letter alerts. */
  readonly network?: string;
}

interface PersistedSnapshot {
  readonly v: number;
  readonly seq: number;
  readonly value: unknown;
  readonly context: unknown;
}

/** Machine event for a stored domain event: `{type, data}`. */
export const toMachineEvent = (e: EventEnvelope) => ({ type: e.type, data: e.data });

export interface EffectMeta {
  readonly effect: string;
  /** Append the events so far before running this effect (its outcome must follow a durable fact). */
  readonly durableBefore?: boolean;
  /**
   * The effect only waits on other systems (a quilt's store, a transaction's finality), with no work on this host:
   * its command gives its slot back to the queued ones when the effect starts, and runs on outside the count until
   * it ends. Jobs that wait seconds on a network then do not cap what the host's CPU does (Little's law: slots =
   * throughput × time held), and the host's `maxHeld` still bounds how many it has at once.
   */
  readonly waitsOnly?: boolean;
}

export function effectOf(snapshot: AnyMachineSnapshot): EffectMeta | undefined {
  const meta = snapshot.getMeta() as Record<string, Partial<EffectMeta> | undefined>;
  for (const m of Object.values(meta)) if (m?.effect) return m as EffectMeta;
  return undefined;
}

export function evolve<M extends AnyStateMachine>(machine: M, snapshot: SnapshotOf<M>, events: readonly EventEnvelope[]): SnapshotOf<M> {
  let s = snapshot;
  for (const e of events) s = step(machine, s, toMachineEvent(e));
  return s;
}

/** How long a stop waits for the commands in flight (a stop of every role must end within seconds, issue 28). */
const STOP_GRACE_MS = 2_000;

/**
 * The commands consumer's ack wait: how long a command held by a host that died (kill -9, a lost machine) stays with
 * it before JetStream hands it to another host. A host that lives keeps each command it holds alive (working()) every
 * KEEP_ALIVE_FRACTION of it, however long the command's effects take, so the ack wait bounds only the recovery from a
 * dead host, not the length of any effect. 5 s: a killed host's commands resume within seconds, while the host's
 * event loop may stall for up to 3.75 s between two keep-alives before a live command is redelivered — five times the
 * longest stall measured in an actor worker (0.75 s, through test/relayer-quilt-faults.test.ts on a loaded 2-core
 * machine; the heavy work — embedding, signature checks, hashing — runs on worker threads). A redelivery past that is
 * safe (effects are idempotent, appends are optimistic-concurrency), only wasted work.
 */
export const ACK_WAIT_MS = 5_000;
/** Keep-alives per ack wait (a quarter: three may be lost or late before JetStream redelivers). */
const KEEP_ALIVE_FRACTION = 4;
/** How long a command handed back past the host's `maxHeldBytes` waits before JetStream delivers it again. */
const HELD_BYTES_RETRY_MS = 1_000;
/** At most one warning per this long that commands are handed back past `maxHeldBytes`. */
const HELD_BYTES_WARN_EVERY_MS = 60_000;

export class ActorHost<Cmd extends CommandEnvelope, M extends AnyStateMachine = AnyStateMachine, E extends NewEvent = NewEvent> {
  private readonly store: EventStore;
  private stopped = false;
  /** Commands being handled, with their messages (what a stop hands back when they outlast its grace). */
  private readonly inFlight = new Map<Promise<void>, JsMsg>();
  /** How many of `inFlight` are parked in an effect that only waits (they hold no slot). */
  private parked = 0;
  /**
   * Commands delivered to this host that wait for a free slot. The consumer pulls ahead of the slots, so a host under
   * load holds more commands than it runs; they are kept alive too, or each would be redelivered every ack wait.
   */
  private readonly queued: JsMsg[] = [];
  /** Every command this host holds (queued or in flight) until it is answered: what the keep-alive sweep keeps alive. */
  private readonly held = new Set<JsMsg>();
  /**
   * One timer for all of `held`, running while it is not empty: every fraction of the ack wait it tells JetStream the
   * host still works on each. Its keep-alives leave in one write to the server; a timer per command wrote each on its
   * own, a socket write per command per 1.25 s, and with thousands of commands parked on a network's finality that
   * was the actor host's largest cost after garbage collection (bench/NOTES.md, issue 31, stop 41).
   */
  private keepAliveSweep?: NodeJS.Timeout;
  /** Payload bytes of the commands in `held` (what `maxHeldBytes` bounds). */
  private heldBytes = 0;
  private lastHeldBytesWarning = -Infinity;
  private messages?: { stop(): void };

  constructor(
    private readonly log: EventLog,
    private readonly def: ActorDefinition<Cmd, M, E>,
    private readonly logger: Logger,
    private readonly opts: ActorHostOptions,
  ) {
    this.store = new EventStore(log.js, log.jsm);
  }

  get consumerName() {
    return `actor-${this.def.aggregateType}`;
  }

  private get ackWaitMs() {
    return this.opts.ackWaitMs ?? ACK_WAIT_MS;
  }

  async start(): Promise<void> {
    // A consumer created by an older host (a longer ack wait) is updated in place: the stream and its commands stay.
    const ackWaitNs = this.ackWaitMs * 1_000_000;
    const config = {
      durable_name: this.consumerName,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      filter_subject: commandFilter(this.def.aggregateType),
      ack_wait: ackWaitNs,
      max_ack_pending: this.opts.maxHeld ?? Math.max(this.opts.concurrency * 4, 256),
    };
    await this.log.jsm.consumers.add(STREAMS.commands, config).catch(async (err) => {
      if (!isConsumerExisting(err)) throw err;
      await this.log.jsm.consumers.update(STREAMS.commands, this.consumerName, { ack_wait: ackWaitNs, max_ack_pending: config.max_ack_pending });
    });
    void this.loop();
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        const consumer = await this.log.js.consumers.get(STREAMS.commands, this.consumerName);
        const messages = await consumer.consume({ ...LIVE_CONSUME, max_messages: this.opts.concurrency });
        this.messages = messages;
        for await (const m of messages) {
          if (this.stopped) this.handBack(m);
          else if (this.overHeldBytes(m)) this.handBack(m, HELD_BYTES_RETRY_MS);
          else {
            this.keepAlive(m);
            this.queued.push(m);
          }
          this.startQueued();
        }
      } catch (err) {
        if (this.stopped) break;
        this.logger.warn("actor host consumer interrupted; resubscribing", { actor: this.def.aggregateType, error: String(err) });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  /** Runs queued commands while slots are free. */
  private startQueued(): void {
    while (!this.stopped && this.inFlight.size - this.parked < this.opts.concurrency && this.queued.length) {
      const m = this.queued.shift()!;
      let parked = false;
      const park = () => {
        if (parked) return;
        parked = true;
        this.parked++;
        this.startQueued();
      };
      // (an outcome reported after a stop closed the connection fails: the command is redelivered anyway)
      const p = this.handle(m, park)
        .catch((err) => this.logger.warn("command outcome could not be reported; it will be redelivered", { actor: this.def.aggregateType, error: errorText(err) }))
        .finally(() => {
          if (parked) this.parked--;
          this.release(m);
          this.inFlight.delete(p);
          this.startQueued();
        });
      this.inFlight.set(p, m);
    }
  }

  /**
   * Whether holding `m` would pass `maxHeldBytes`. The consumer's max_ack_pending bounds how many commands a host
   * holds, not their size, and a held command keeps its payload (up to a 1 MiB text) in memory until it is answered.
   */
  private overHeldBytes(m: JsMsg): boolean {
    const max = this.opts.maxHeldBytes;
    if (max === undefined || this.heldBytes === 0 || this.heldBytes + m.data.byteLength <= max) return false;
    const now = performance.now();
    if (now - this.lastHeldBytesWarning >= HELD_BYTES_WARN_EVERY_MS) {
      this.lastHeldBytesWarning = now;
      this.logger.warn("holding as many command bytes as allowed; handing new commands back for a while", { actor: this.def.aggregateType, heldBytes: this.heldBytes, maxHeldBytes: max, commands: this.held.size });
    }
    return true;
  }

  /** Tells JetStream, every fraction of the ack wait, that this host still works on `m` (until release). */
  private keepAlive(m: JsMsg): void {
    this.heldBytes += m.data.byteLength;
    this.held.add(m);
    this.keepAliveSweep ??= setInterval(() => {
      for (const h of this.held) {
        try {
          h.working();
        } catch {
          // the connection is gone: the command is redelivered once the ack wait passes, as after a kill
        }
      }
    }, this.ackWaitMs / KEEP_ALIVE_FRACTION);
  }

  private release(m: JsMsg): void {
    if (!this.held.delete(m)) return;
    this.heldBytes -= m.data.byteLength;
    if (this.held.size === 0) {
      clearInterval(this.keepAliveSweep);
      this.keepAliveSweep = undefined;
    }
  }

  /** Answers `m` unhandled (nak): JetStream redelivers it after `delayMs` (at once by default), to another host or after a restart. */
  private handBack(m: JsMsg, delayMs?: number): void {
    this.release(m);
    try {
      m.nak(delayMs);
    } catch {
      // the connection is gone: JetStream redelivers once the ack wait passes
    }
  }

  /**
   * Stops taking commands, hands back those still queued and waits up to `graceMs` for those in flight. One still
   * running then (an effect wedged on a service that does not answer) is handed back too: JetStream redelivers it, to
   * another replica or after a restart, and effects are idempotent, so a stop neither waits on it nor loses it.
   */
  async stop(graceMs = STOP_GRACE_MS): Promise<void> {
    this.stopped = true;
    this.messages?.stop();
    for (const m of this.queued.splice(0)) this.handBack(m);
    if (await settlesWithin(graceMs, Promise.allSettled(this.inFlight.keys()))) return;
    this.logger.warn("stopping with commands in flight; handed back for redelivery", { actor: this.def.aggregateType, commands: this.inFlight.size });
    for (const m of this.inFlight.values()) this.handBack(m);
  }

  private backoffMs(deliveries: number): number {
    const max = this.opts.maxBackoffMs ?? 30_000;
    return Math.min(max, 200 * 2 ** Math.min(deliveries - 1, 10)) * (0.5 + Math.random() / 2);
  }

  private async handle(m: JsMsg, park: () => void): Promise<void> {
    const aggregateId = m.subject.slice(`cmd.${this.def.aggregateType}.`.length);
    let command: Cmd | undefined;
    try {
      command = parseCommand<Cmd>(m.data);
      await this.process(aggregateId, command, m.info.deliveryCount === 1, park);
      m.ack();
    } catch (err) {
      const defect = err instanceof Defect || !(err instanceof ConcurrencyConflict || err instanceof TransientFailure || isUnavailable(err));
      if (err instanceof PermanentFailure || (defect && (command === undefined || m.info.deliveryCount >= MAX_COMMAND_ATTEMPTS))) {
        await this.setAside(m, aggregateId, command, errorText(err)).then(
          () => m.term(),
          (e) => {
            this.logger.warn("command could not be set aside; will retry", { actor: this.def.aggregateType, aggregate: aggregateId, error: errorText(e) });
            m.nak(Math.round(this.backoffMs(m.info.deliveryCount)));
          },
        );
        return;
      }
      const delay = err instanceof ConcurrencyConflict ? 0 : this.backoffMs(m.info.deliveryCount);
      if (!(err instanceof ConcurrencyConflict)) {
        this.logger.warn("command will be retried", { actor: this.def.aggregateType, aggregate: aggregateId, command: command?.type ?? "unparsed", delivery: m.info.deliveryCount, error: errorText(err) });
      }
      m.nak(Math.round(delay)); // whole milliseconds: a fractional delay becomes fractional nanoseconds, which JetStream rejects ("bad NAK delay value") and redelivers at once
    }
  }

  /** Records the command on the DLQ stream (never its payload), raises the alert and appends the aggregate's failure. */
  private async setAside(m: JsMsg, aggregateId: string, command: Cmd | undefined, error: string): Promise<void> {
    const aggregate = `${this.def.aggregateType}.${aggregateId}`;
    const record = deadLetterRecord({
      source: "actor",
      name: this.def.aggregateType,
      stream: STREAMS.commands,
      stream_seq: m.seq,
      subject: m.subject,
      aggregate,
      types: [typeof command?.type === "string" ? command.type : "unparsed"],
      error,
      attempts: m.info.deliveryCount,
    });
    await setAside(this.log, record, this.opts.network ?? "local");
    const events = this.def.setAside?.(command, record.error) ?? [];
    if (events.length && /^[A-Za-z0-9_-]+$/.test(aggregateId)) {
      const seq = await this.store.lastSeq(aggregate);
      await this.store.append(aggregate, events, seq, { causationId: record.id, correlationId: command?.correlation_id ?? record.id, commitId: `setaside:${record.id}` });
    }
    this.logger.error("command set aside after bounded retries", { actor: this.def.aggregateType, aggregate, command: record.types[0], attempts: record.attempts, error: record.error });
  }

  /** Rehydrates the aggregate: snapshot (if current) plus newer events. */
  async rehydrate(aggregateId: string): Promise<{ snapshot: SnapshotOf<M>; seq: number }> {
    const aggregate = `${this.def.aggregateType}.${aggregateId}`;
    const [entry, lastSeq] = await Promise.all([this.log.snapshots.get(aggregate), this.store.lastSeq(aggregate)]);
    const persisted = entry?.value?.length ? (entry.json() as PersistedSnapshot) : undefined;
    let snapshot: SnapshotOf<M>;
    let fromSeq = 0;
    if (persisted && persisted.v === this.def.snapshotVersion && persisted.seq <= lastSeq) {
      snapshot = this.def.machine.resolveState({ value: persisted.value as never, context: persisted.context as never }) as SnapshotOf<M>;
      fromSeq = persisted.seq;
    } else {
      snapshot = initialSnapshot(this.def.machine);
    }
    if (lastSeq > fromSeq) {
      const { events } = await this.store.load(aggregate, fromSeq);
      snapshot = evolve(this.def.machine, snapshot, events.map((e) => e.event));
    }
    return { snapshot, seq: lastSeq };
  }

  private async process(aggregateId: string, command: Cmd, firstDelivery: boolean, park: () => void): Promise<void> {
    const aggregate = `${this.def.aggregateType}.${aggregateId}`;
    // A command delivered for the first time to a fresh aggregate needs no reads: if events did exist after all,
    // the append's expected sequence 0 conflicts and the redelivery rehydrates properly.
    let { snapshot, seq } = firstDelivery && this.def.freshOnFirstDelivery ? { snapshot: initialSnapshot(this.def.machine), seq: 0 } : await this.rehydrate(aggregateId);
    const pending: E[] = [...this.def.decide(snapshot, command)];
    // Nothing decided and nothing left to do: the command is already reflected (a redelivery after success).
    if (!pending.length && !effectOf(snapshot)) return;
    const applyLocal = (events: readonly E[]) => {
      for (const e of events) snapshot = step(this.def.machine, snapshot, { type: e.type, data: e.data });
    };
    applyLocal(pending);
    // Run effects until the machine rests in a state that names none (final, or waiting for another command).
    // Effects are idempotent, so their events are appended together with the decision in one commit: a crash
    // before the append simply repeats them on redelivery.
    const ctxFor = (at: number) => ({ causationId: command.id, correlationId: command.correlation_id, commitId: `${command.id}:${at}` });
    for (let step = 0; step < MAX_EFFECTS_PER_DELIVERY; step++) {
      const meta = effectOf(snapshot);
      if (!meta) break;
      const name = meta.effect;
      if (meta.durableBefore && pending.length) {
        seq = (await this.store.append(aggregate, pending.splice(0), seq, ctxFor(seq))).seq;
      }
      const fn = this.def.effects[name];
      if (!fn) throw new Error(`machine ${this.def.aggregateType} names unknown effect ${name}`);
      if (meta.waitsOnly) park();
      const budget = Math.max(this.opts.effectTimeoutMs ?? 120_000, this.def.effectBudgetMs?.(name, command) ?? 0);
      const program = fn({ aggregateId, context: contextOf<M>(snapshot), command }).pipe(
        Effect.timeoutOrElse({ duration: budget, orElse: () => Effect.fail(new Transient(`effect ${name} timed out`)) }),
      );
      const exit = await Effect.runPromiseExit(program);
      // A Permanent failure is set aside now, a Transient retried as long as it takes; anything else the effect died of is a defect.
      if (Exit.isFailure(exit)) {
        const permanent = exit.cause.reasons.filter(Cause.isFailReason).find((r) => r.error instanceof Permanent);
        if (permanent) throw new PermanentFailure((permanent.error as Permanent).reason);
        throw Cause.hasFails(exit.cause) ? new TransientFailure(Cause.pretty(exit.cause)) : new Defect(Cause.pretty(exit.cause));
      }
      if (!exit.value.length) throw new Error(`effect ${name} produced no events`);
      pending.push(...exit.value);
      applyLocal(exit.value);
    }
    // What the effects did is recorded either way: they are facts, and a set-aside failure follows them.
    if (pending.length) seq = (await this.store.append(aggregate, pending, seq, ctxFor(seq))).seq;
    const unfinished = effectOf(snapshot);
    if (unfinished) throw new PermanentFailure(`still names effect ${unfinished.effect} after ${MAX_EFFECTS_PER_DELIVERY} effects in one delivery`);
    const rested: AnyMachineSnapshot = snapshot;
    if (this.def.noFinalSnapshot && rested.status === "done") return;
    const persisted: PersistedSnapshot = { v: this.def.snapshotVersion, seq, value: rested.value, context: rested.context };
    // A snapshot is a cache (losing one only costs a longer rehydrate), but it is stored before the command is
    // acknowledged: a status lookup falls back to it while the read model lags, and an acknowledged command has left
    // the work queue, so an unstored snapshot would leave a window in which the job is found nowhere. A failed write
    // therefore fails the delivery (the command is redelivered; its events are already appended, so nothing repeats).
    await this.log.snapshots.put(aggregate, JSON.stringify(persisted));
  }
}

function parseCommand<Cmd>(data: Uint8Array): Cmd {
  try {
    const c = JSON.parse(new TextDecoder().decode(data)) as Cmd;
    if (!c || typeof c !== "object" || typeof (c as { type?: unknown }).type !== "string") throw new Error("not a command envelope");
    return c;
  } catch (err) {
    throw new Defect(`unreadable command: ${errorText(err)}`);
  }
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
