// The blob store's access to the event log: the current state of an aggregate is the last event on its subject
// (events carry full state), read straight from JetStream so decisions never depend on a lagging read model; a
// decision is appended with the sequence it was made against, and a concurrent append makes it decide again.
import type { EventLog } from "../../eventlog/connection.ts";
import { ConcurrencyConflict, EventStore, decodeCommit, type NewEvent } from "../../eventlog/event-store.ts";
import { STREAMS } from "../../eventlog/subjects.ts";
import { lastEventSeq, lastMessage } from "../../eventlog/last-message.ts";
import { type BlobstoreEvent, type Kind, aggregateOf, subjectOf } from "../../schemas/blobstore/events.ts";

export interface Last {
  readonly seq: number;
  readonly event: BlobstoreEvent;
}

export class BlobstoreLog {
  readonly store: EventStore;

  constructor(readonly log: EventLog) {
    this.store = new EventStore(log.js, log.jsm);
  }

  /** Last event of an aggregate (its current state), null when it has none. */
  async last(kind: Kind, id: string): Promise<Last | null> {
    const msg = await lastMessage(this.log.jsm, STREAMS.events, subjectOf(kind, id));
    if (!msg) return null;
    const events = decodeCommit(msg.data).events;
    return { seq: msg.seq, event: events[events.length - 1] as BlobstoreEvent };
  }

  /** Stream sequence of the last event matching a subject filter (e.g. `evt.bs_blob.>`), 0 when none. */
  async lastSeq(filter: string): Promise<number> {
    return lastEventSeq(this.log.jsm, filter);
  }

  /**
   * Optimistic command loop: `decide` sees the aggregate's current state and returns the events to append (or
   * throws an HttpError); the append expects that state's sequence, and a concurrent writer makes it decide again.
   * Returns null when `decide` returned no events (nothing to do).
   */
  async decide(
    kind: Kind,
    id: string,
    decide: (last: Last | null) => NewEvent[],
    ctx: { correlationId: string; causationId?: string },
    maxAttempts = 8,
  ): Promise<{ seq: number; last: Last | null } | null> {
    for (let attempt = 1; ; attempt++) {
      const last = await this.last(kind, id);
      const events = decide(last);
      if (!events.length) return null;
      try {
        const r = await this.store.append(aggregateOf(kind, id), events, last?.seq ?? 0, {
          correlationId: ctx.correlationId,
          causationId: ctx.causationId ?? ctx.correlationId,
        });
        return { seq: r.seq, last };
      } catch (err) {
        if (!(err instanceof ConcurrencyConflict) || attempt >= maxAttempts) throw err;
        await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
      }
    }
  }

  /** Appends whatever the aggregate's state (last writer wins); returns the sequence. */
  async appendAny(kind: Kind, id: string, events: NewEvent[], ctx: { correlationId: string }): Promise<number> {
    const r = await this.store.append(aggregateOf(kind, id), events, "any", { correlationId: ctx.correlationId, causationId: ctx.correlationId });
    return r.seq;
  }

  /** Appends to an aggregate that must not exist yet; false when it already does. */
  async create(kind: Kind, id: string, events: NewEvent[], ctx: { correlationId: string }): Promise<number | null> {
    try {
      const r = await this.store.append(aggregateOf(kind, id), events, 0, { correlationId: ctx.correlationId, causationId: ctx.correlationId });
      return r.seq;
    } catch (err) {
      if (err instanceof ConcurrencyConflict) return null;
      throw err;
    }
  }
}
