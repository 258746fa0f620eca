// The console's access to the event log. Directory aggregates (users, spaces, name claims) carry their whole state
// in each event: the last commit on an aggregate's subject is its current state, read straight from JetStream, so
// decisions never depend on a lagging read model. Lifecycles with effects (keys, buckets, uploads, files,
// sponsorships) are actors: the gateway publishes their commands and, where the spec answers synchronously, awaits
// the outcome event on the aggregate's subject.
import { createHash, randomUUID } from "node:crypto";
import type { EventLog } from "../../eventlog/connection.ts";
import { ConcurrencyConflict, EventStore, newEvent, type NewEvent } from "../../eventlog/event-store.ts";
import { STREAMS, commandSubject, eventSubject } from "../../eventlog/subjects.ts";
import { dispatchAndAwait, lastCommit, publishCommand, type LastCommit } from "../../eventlog/command-bus.ts";
import { lastEventSeq, lastMessage } from "../../eventlog/last-message.ts";
import type { CommandEnvelope, EventEnvelope } from "../../schemas/envelope.ts";
import { AGG, EV, type AggregateType, type ClaimHeld } from "../../schemas/console/events.ts";
import { CODE, ConsoleHttpError } from "../../schemas/console/http.ts";

export class ConsoleLog {
  readonly store: EventStore;

  constructor(readonly log: EventLog) {
    this.store = new EventStore(log.js, log.jsm);
  }

  /** The last commit of an aggregate, null when it has none. */
  last(type: AggregateType, id: string): Promise<LastCommit | null> {
    return lastCommit(this.log, eventSubject(type, id));
  }

  /** The last event of an aggregate (its state, for state-carrying aggregates). */
  async lastEvent(type: AggregateType, id: string): Promise<(EventEnvelope & { seq: number }) | null> {
    const c = await this.last(type, id);
    return c && c.events.length ? { ...c.events[c.events.length - 1], seq: c.seq } : null;
  }

  /** Stream sequence of the last event on a subject filter, 0 when none. */
  lastSeq(filter: string): Promise<number> {
    return lastEventSeq(this.log.jsm, filter);
  }

  /** Optimistic decide-and-append on a state-carrying aggregate; null when the decision produced no events. */
  async decide(type: AggregateType, id: string, decide: (last: LastCommit | null) => NewEvent[], correlationId = randomUUID(), maxAttempts = 8): Promise<{ seq: number } | null> {
    for (let attempt = 1; ; attempt++) {
      const last = await this.last(type, id);
      const events = decide(last);
      if (!events.length) return null;
      try {
        const r = await this.store.append(`${type}.${id}`, events, last?.seq ?? 0, { correlationId, causationId: correlationId });
        return { seq: r.seq };
      } catch (err) {
        if (!(err instanceof ConcurrencyConflict) || attempt >= maxAttempts) throw err;
        await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
      }
    }
  }

  // ---------------------------------------------------------------- unique names

  /**
   * Claims a name (case-insensitive) within a scope for `ownerId`: 409 when another owner holds it. Claiming a name
   * one already holds is a no-op, so a retried request converges.
   */
  async claim(scope: ClaimScope, scopeId: string, name: string, ownerId: string): Promise<string> {
    const id = claimId(scope, scopeId, name);
    // Most names are new: try to create the claim outright (one round trip); an existing one is decided upon.
    try {
      await this.store.append(`${AGG.claim}.${id}`, [newEvent<ClaimHeld>(EV.claimHeld, { owner_id: ownerId, name })], 0, { correlationId: ownerId, causationId: ownerId });
      return id;
    } catch (err) {
      if (!(err instanceof ConcurrencyConflict)) throw err;
    }
    await this.decide(AGG.claim, id, (last) => {
      const held = heldBy(last);
      if (held === ownerId) return [];
      if (held) {
        const what = { bucket: `a bucket named ${JSON.stringify(name)} already exists in this space`, file: `a file named ${JSON.stringify(name)} already exists in this bucket`, email: `${name} has already signed up` }[scope];
        throw new ConsoleHttpError(409, what, CODE.conflict);
      }
      return [newEvent<ClaimHeld>(EV.claimHeld, { owner_id: ownerId, name })];
    });
    return id;
  }

  /** Releases a claim if `ownerId` holds it (idempotent). */
  async release(claim: string, ownerId: string): Promise<void> {
    await this.decide(AGG.claim, claim, (last) => (heldBy(last) === ownerId ? [newEvent(EV.claimReleased, { owner_id: ownerId })] : []));
  }

  // ---------------------------------------------------------------- commands

  publish(type: AggregateType, id: string, command: CommandEnvelope): Promise<void> {
    return publishCommand(this.log, commandSubject(type, id), command);
  }

  /**
   * Publishes a command and waits for the first event on the aggregate's subject that `until` maps to a value
   * (eventlog/command-bus.ts); a timeout answers 503. Returns the value and a stream sequence at or after the outcome.
   */
  async dispatch<T>(
    type: AggregateType,
    id: string,
    command: CommandEnvelope,
    until: (e: EventEnvelope) => T | undefined,
    timeoutMs = 15_000,
    acceptExisting = false,
  ): Promise<{ value: T; seq: number }> {
    const r = await dispatchAndAwait(this.log, { commandSubject: commandSubject(type, id), eventSubject: eventSubject(type, id), command, until, timeoutMs, acceptExisting });
    if (!r) throw new ConsoleHttpError(503, "the service is busy; retry shortly", undefined, {}, { "retry-after": "1" });
    return r;
  }

  /** The command still waiting on the work queue for an aggregate, if any. */
  async pendingCommand<D>(type: AggregateType, id: string): Promise<CommandEnvelope<string, D> | null> {
    const msg = await lastMessage(this.log.jsm, STREAMS.commands, commandSubject(type, id)).catch(() => null);
    return msg ? (msg.json() as CommandEnvelope<string, D>) : null;
  }
}

export type ClaimScope = "bucket" | "file" | "email";

export function claimId(scope: ClaimScope, scopeId: string, name: string): string {
  const h = createHash("sha256").update(name.normalize("NFC").toLowerCase()).digest("hex").slice(0, 32);
  return `${scope[0]}-${scopeId}-${h}`;
}

function heldBy(last: LastCommit | null): string | null {
  const e = last?.events[last.events.length - 1];
  return e?.type === EV.claimHeld ? (e.data as ClaimHeld).owner_id : null;
}
