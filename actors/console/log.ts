// The console's access to the event log. Directory aggregates (users, spaces, name claims) carry their whole state
// in each event: the last commit on an aggregate's subject is its current state, read straight from JetStream, so
// decisions never depend on a lagging read model. Lifecycles with effects (keys, buckets, uploads, files,
// sponsorships) are actors: the gateway publishes their commands and, where the spec answers synchronously, awaits
// the outcome event on the aggregate's subject.
import { createHash, randomUUID } from "node:crypto";
import type { EventLog } from "../../eventlog/connection.ts";
import { ConcurrencyConflict, EventStore, decodeCommit, type NewEvent } from "../../eventlog/event-store.ts";
import { STREAMS } from "../../eventlog/subjects.ts";
import type { CommandEnvelope, EventEnvelope } from "../../schemas/envelope.ts";
import { AGG, EV, type AggregateType, type ClaimHeld } from "../../schemas/console/events.ts";
import { CODE, ConsoleHttpError } from "../../schemas/console/http.ts";

export interface LastCommit {
  readonly seq: number;
  readonly events: readonly EventEnvelope[];
}

const notFound = (err: unknown) => /no message found|10037|not found/i.test(String((err as Error)?.message ?? err));

export const newEvent = <D>(type: string, data: D): NewEvent<D> => ({ type, version: 1, data });

export class ConsoleLog {
  readonly store: EventStore;

  constructor(readonly log: EventLog) {
    this.store = new EventStore(log.js, log.jsm);
  }

  /** The last commit of an aggregate, null when it has none. */
  async last(type: AggregateType, id: string): Promise<LastCommit | null> {
    const msg = await this.log.jsm.streams.getMessage(STREAMS.events, { last_by_subj: `evt.${type}.${id}` }).catch((err) => {
      if (notFound(err)) return null;
      throw err;
    });
    return msg ? { seq: msg.seq, events: decodeCommit(msg.data).events } : null;
  }

  /** The last event of an aggregate (its state, for state-carrying aggregates). */
  async lastEvent(type: AggregateType, id: string): Promise<(EventEnvelope & { seq: number }) | null> {
    const c = await this.last(type, id);
    return c && c.events.length ? { ...c.events[c.events.length - 1], seq: c.seq } : null;
  }

  /** Stream sequence of the last event on a subject filter, 0 when none. */
  async lastSeq(filter: string): Promise<number> {
    const msg = await this.log.jsm.streams.getMessage(STREAMS.events, { last_by_subj: filter }).catch((err) => {
      if (notFound(err)) return null;
      throw err;
    });
    return msg?.seq ?? 0;
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

  async publish(type: AggregateType, id: string, command: CommandEnvelope): Promise<void> {
    await this.log.js.publish(`cmd.${type}.${id}`, JSON.stringify(command), { msgID: command.id, timeout: 5_000 });
  }

  /**
   * Publishes a command and waits for the first event on the aggregate's subject that `until` maps to a value.
   * The subscription is made before the command is published, so the outcome cannot be missed; on timeout the last
   * commit is checked once more. Returns the value and a stream sequence at or after the outcome (for read models).
   */
  async dispatch<T>(
    type: AggregateType,
    id: string,
    command: CommandEnvelope,
    until: (e: EventEnvelope) => T | undefined,
    timeoutMs = 15_000,
    /** an idempotent command: an outcome already in the log (a concurrent duplicate's) answers it too */
    acceptExisting = false,
  ): Promise<{ value: T; seq: number }> {
    const subject = `evt.${type}.${id}`;
    const sub = this.log.nc.subscribe(subject);
    try {
      const startSeq = acceptExisting ? 0 : await this.lastSeq(subject);
      await this.publish(type, id, command);
      const found = await new Promise<T | undefined>((resolve) => {
        let done = false;
        const finish = (v: T | undefined) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          clearInterval(poll);
          resolve(v);
        };
        const timer = setTimeout(() => finish(undefined), timeoutMs);
        // A command the actor finds already reflected appends nothing (a concurrent duplicate): the aggregate's
        // state then answers, so the last commit is checked now and then too.
        const poll = setInterval(() => {
          this.last(type, id).then((last) => {
            if (!last || last.seq <= startSeq) return;
            for (const e of last.events) {
              const v = until(e);
              if (v !== undefined) return finish(v);
            }
          }, () => undefined);
        }, 250);
        void (async () => {
          for await (const m of sub) {
            for (const e of decodeCommit(m.data).events) {
              const v = until(e);
              if (v !== undefined) return finish(v);
            }
          }
        })().catch(() => undefined);
      });
      if (found !== undefined) return { value: found, seq: await this.lastSeq(subject) };
      const last = await this.last(type, id);
      for (const e of last && last.seq > startSeq ? last.events : []) {
        const v = until(e);
        if (v !== undefined) return { value: v, seq: last!.seq };
      }
      throw new ConsoleHttpError(503, "the service is busy; retry shortly", undefined, {}, { "retry-after": "1" });
    } finally {
      sub.unsubscribe();
    }
  }

  /** The command still waiting on the work queue for an aggregate, if any. */
  async pendingCommand<D>(type: AggregateType, id: string): Promise<CommandEnvelope<string, D> | null> {
    const msg = await this.log.jsm.streams.getMessage(STREAMS.commands, { last_by_subj: `cmd.${type}.${id}` }).catch(() => null);
    return msg ? (msg.json() as CommandEnvelope<string, D>) : null;
  }
}

export function command<D>(type: string, aggregateType: AggregateType, aggregateId: string, data: D, correlationId = randomUUID()): CommandEnvelope<string, D> {
  return { type, version: 1, id: randomUUID(), aggregate: `${aggregateType}.${aggregateId}`, issued_at: new Date().toISOString(), correlation_id: correlationId, data };
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
