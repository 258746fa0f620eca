// One write primitive for the synchronous aggregates (the blob store's and the console's directory): read the
// aggregate's last commit, fold it into a state, let a pure decider turn the state into events or a domain error,
// append expecting that commit, and decide again when a concurrent writer got there first. The decider's result is
// returned with the outcome, so callers never pass values out of the decision through outer variables.
//
// Events of these aggregates carry their whole state, so the last commit alone is enough to know the state: a
// reader folds only that commit's events, never the history.
import { randomUUID } from "node:crypto";
import type { EventLog } from "./connection.ts";
import { ConcurrencyConflict, EventStore, type NewEvent } from "./event-store.ts";
import { lastCommit, type LastCommit } from "./command-bus.ts";
import { aggregateEventSubject } from "./subjects.ts";
import type { EventEnvelope } from "../schemas/envelope.ts";

/** Where an aggregate store reads an aggregate's last commit and appends the next one. */
export interface CommitLog {
  /** The aggregate's last commit (`<type>.<id>`), null when it has none. */
  last(aggregate: string): Promise<LastCommit | null>;
  /** Appends one commit; ConcurrencyConflict when the aggregate's last commit is not at `expectedSeq` (0: none). */
  append(aggregate: string, events: readonly NewEvent[], expectedSeq: number | "any", ctx: { correlationId: string; causationId: string }): Promise<{ seq: number }>;
}

/** The commit log of the EVT stream. */
export class JetStreamCommitLog implements CommitLog {
  private readonly events: EventStore;

  constructor(private readonly log: EventLog) {
    this.events = new EventStore(log.js, log.jsm);
  }

  last(aggregate: string): Promise<LastCommit | null> {
    return lastCommit(this.log, aggregateEventSubject(aggregate));
  }

  append(aggregate: string, events: readonly NewEvent[], expectedSeq: number | "any", ctx: { correlationId: string; causationId: string }): Promise<{ seq: number }> {
    return this.events.append(aggregate, events, expectedSeq, ctx);
  }
}

/** How an aggregate's state is built from its events (Emmett's `evolve` and `initialState`). */
export interface Fold<S, E = EventEnvelope> {
  readonly initial: S;
  evolve(state: S, event: E): S;
}

/** What a decider answers: the events to append and the result to hand back, or a domain error. */
export type Decision<R, Err> = { readonly ok: true; readonly events: readonly NewEvent[]; readonly result: R } | { readonly ok: false; readonly error: Err };

export const accept = <R>(result: R, events: readonly NewEvent[] = []): Decision<R, never> => ({ ok: true, events, result });
export const reject = <Err>(error: Err): Decision<never, Err> => ({ ok: false, error });

/** A command's answer: its result, or the domain error it was refused for. */
export type Result<R, Err> = { readonly ok: true; readonly result: R } | { readonly ok: false; readonly error: Err };

/** A decision as carried out: the result with the stream sequence of the append (null when nothing was appended). */
export type Outcome<R, Err> = { readonly ok: true; readonly result: R; readonly seq: number | null } | { readonly ok: false; readonly error: Err };

export interface HandleOptions {
  readonly correlationId?: string;
  /**
   * Last writer wins: decide on the initial state without reading the aggregate, and append whatever it holds
   * (an unconditional overwrite needs no read, and races nobody).
   */
  readonly blind?: boolean;
  /**
   * The aggregate is most likely new (a fresh name): the first decision is made on the initial state without reading
   * it and appended expecting no commit, one round trip; if the aggregate exists, it is read and decided again.
   */
  readonly assumeNew?: boolean;
}

export class AggregateStore {
  constructor(
    private readonly log: CommitLog,
    private readonly maxAttempts = 8,
  ) {}

  /** The aggregate's current state and the sequence of its last commit (0 when it has none). */
  async read<S, E>(aggregate: string, fold: Fold<S, E>): Promise<{ state: S; seq: number }> {
    const last = await this.log.last(aggregate);
    // The subject names the aggregate, and an aggregate's commits hold events of its own catalogue only.
    const events = (last?.events ?? []) as readonly E[];
    return { state: events.reduce((s, e) => fold.evolve(s, e), fold.initial), seq: last?.seq ?? 0 };
  }

  /** Decides against the aggregate's current state and appends the decision, deciding again on a concurrent append. */
  async handle<S, E, R, Err>(aggregate: string, fold: Fold<S, E>, decide: (state: S) => Decision<R, Err>, opts: HandleOptions = {}): Promise<Outcome<R, Err>> {
    const correlationId = opts.correlationId ?? randomUUID();
    const ctx = { correlationId, causationId: correlationId };
    for (let attempt = 1; ; attempt++) {
      const guessed = opts.assumeNew && attempt === 1;
      const { state, seq } = opts.blind ? { state: fold.initial, seq: "any" as const } : guessed ? { state: fold.initial, seq: 0 } : await this.read(aggregate, fold);
      const decision = decide(state);
      if (!decision.ok) return decision;
      if (!decision.events.length) return { ok: true, result: decision.result, seq: null };
      try {
        const r = await this.log.append(aggregate, decision.events, seq, ctx);
        return { ok: true, result: decision.result, seq: r.seq };
      } catch (err) {
        if (!(err instanceof ConcurrencyConflict) || attempt >= this.maxAttempts) throw err;
        // Writers that collided would collide again in lock step: a growing random pause spreads them out. A wrong
        // guess that the aggregate was new collided with nobody in flight, so it reads again at once.
        if (!guessed) await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
      }
    }
  }
}
