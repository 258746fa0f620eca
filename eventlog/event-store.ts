// Appends commits of events to the EVT stream with optimistic concurrency and reads an aggregate's history back.
import { randomUUID } from "node:crypto";
import type { JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import { upcast, type EventCommit, type EventEnvelope, type EventOf, type NewEvent, type NewEventOf, type StoredEvent } from "../schemas/envelope.ts";
import { UPCASTERS } from "../schemas/upcasters.ts";
import { withTimeout } from "../config/time-bounds.ts";
import { followConsumer } from "./follow-consumer.ts";
import { isWrongLastSequence } from "./jetstream-errors.ts";
import { lastEventSeq } from "./last-message.ts";
import { EventLogOutage } from "./outage.ts";
import { STREAMS, aggregateEventSubject } from "./subjects.ts";

export class ConcurrencyConflict extends Error {
  constructor(readonly subject: string, readonly expected: number) {
    super(`concurrent append to ${subject} (expected last sequence ${expected})`);
  }
}

export type { NewEvent };

/** No catalogue: any event type with any data (the store's default, for generic tooling). */
export type AnyCatalogue = Record<string, unknown>;

export interface AppendContext {
  readonly causationId: string;
  readonly correlationId: string;
  /** Deduplicates the append itself (JetStream Nats-Msg-Id): a retried append of the same transition is a no-op. */
  readonly commitId?: string;
}

/**
 * A history read whose consumer delivers nothing for this long fails, for its caller to retry (a lookup answers 503, an
 * actor host redelivers), instead of waiting for good: after a chaos run's faults a job lookup waited on such a
 * consumer for 5 minutes, holding the client's request (issue 32).
 */
const LOAD_IDLE_MS = 10_000;
/** Commits asked for per pull: nearly every history fits in one. */
const LOAD_PULL = 256;

/**
 * The log did not deliver an aggregate's history, whole and in order: an outage of the event log, so a caller retries
 * it rather than taking it for a bad command or building a state from a part of the history.
 */
export class HistoryUnavailable extends EventLogOutage {}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeCommit(commit: EventCommit): Uint8Array {
  return encoder.encode(JSON.stringify(commit));
}

/** Decodes a commit read from the log, upcasting each event to its current version. */
export function decodeCommit(data: Uint8Array): EventCommit {
  const commit = JSON.parse(decoder.decode(data)) as EventCommit;
  return UPCASTERS.size ? { events: commit.events.map((e) => upcast(e, UPCASTERS)) } : commit;
}

export function envelope<E extends NewEvent>(aggregate: string, e: E, ctx: AppendContext, now = new Date()): EventEnvelope<E["type"], E["data"]> {
  return {
    type: e.type,
    version: e.version,
    id: randomUUID(),
    aggregate,
    occurred_at: now.toISOString(),
    causation_id: ctx.causationId,
    correlation_id: ctx.correlationId,
    data: e.data,
  };
}

/**
 * The event log of aggregates whose events are catalogue C. What is read back is taken to be of C: the subject
 * family names the catalogue, and every event read is upcast to its current version (decodeCommit).
 */
export class EventStore<C = AnyCatalogue> {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
  ) {}

  /**
   * Appends one commit to `evt.<aggregate>`. `expectedSeq` is the stream sequence of the aggregate's last commit
   * (0 when it must not exist yet); a mismatch raises ConcurrencyConflict so the caller can reload and retry.
   */
  async append(aggregate: string, events: readonly NewEventOf<C>[], expectedSeq: number | "any", ctx: AppendContext): Promise<{ seq: number; events: EventOf<C>[]; duplicate: boolean }> {
    const subject = aggregateEventSubject(aggregate);
    const envelopes = events.map((e) => envelope(aggregate, e, ctx) as EventOf<C>);
    try {
      const ack = await this.js.publish(subject, encodeCommit({ events: envelopes }), {
        msgID: ctx.commitId,
        expect: expectedSeq === "any" ? { streamName: STREAMS.events } : { streamName: STREAMS.events, lastSubjectSequence: expectedSeq },
      });
      return { seq: ack.seq, events: envelopes, duplicate: ack.duplicate };
    } catch (err) {
      if (isWrongLastSequence(err)) throw new ConcurrencyConflict(subject, expectedSeq as number);
      throw err;
    }
  }

  /** Sequence of the aggregate's last commit, 0 when it has none. */
  async lastSeq(aggregate: string): Promise<number> {
    return lastEventSeq(this.jsm, aggregateEventSubject(aggregate));
  }

  /**
   * The aggregate's commits after `afterSeq`, in order. Every message must be its consumer's next delivery, at a stream
   * sequence past the previous one (followConsumer): a skipped, repeated or foreign commit fails the read as an outage.
   */
  async load(aggregate: string, afterSeq = 0): Promise<{ events: StoredEvent<EventOf<C>>[]; lastSeq: number }> {
    const last = await this.lastSeq(aggregate);
    if (last <= afterSeq) return { events: [], lastSeq: last };
    const consumer = await followConsumer({ js: this.js, jsm: this.jsm }, aggregateEventSubject(aggregate), afterSeq, LOAD_PULL);
    const messages = consumer.messages[Symbol.asyncIterator]();
    /** The next commit, checked; any failure of the log's (silence, an end, a lost consumer, a delivery out of order) an outage. */
    const next = async (at: number): Promise<JsMsg> => {
      try {
        const r = await withTimeout(LOAD_IDLE_MS, messages.next(), "no event delivered");
        // An ended or silent consumer has not delivered the history up to `last`: a part of it is not the state.
        if (r.done) throw new Error(`ended at sequence ${at} of ${last}`);
        const m = r.value;
        consumer.check(m);
        return m;
      } catch (err) {
        throw new HistoryUnavailable(`reading ${aggregate}'s events: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
    };
    const out: StoredEvent<EventOf<C>>[] = [];
    try {
      for (let at = afterSeq; at < last; ) {
        const m = await next(at);
        for (const event of decodeCommit(m.data).events) out.push({ seq: m.seq, subject: m.subject, event: event as EventOf<C> });
        at = m.seq;
      }
    } finally {
      await consumer.close();
    }
    return { events: out, lastSeq: last };
  }
}
