// The console's access to the event log. Directory aggregates (users, spaces, name claims) carry their whole state
// in each event: the last commit on an aggregate's subject is its current state, read straight from JetStream, so
// decisions never depend on a lagging read model. Lifecycles with effects (keys, buckets, uploads, files,
// sponsorships) are actors: the gateway publishes their commands and, where the spec answers synchronously, awaits
// the outcome event on the aggregate's subject.
import { createHash } from "node:crypto";
import type { EventLog } from "../../eventlog/connection.ts";
import { EventStore } from "../../eventlog/event-store.ts";
import { AggregateStore, JetStreamCommitLog, type Result } from "../../eventlog/aggregate-store.ts";
import { STREAMS, commandSubject, eventSubject } from "../../eventlog/subjects.ts";
import { commandEnvelope, dispatchAndAwait, lastCommit, publishCommand, type LastCommit } from "../../eventlog/command-bus.ts";
import { lastEventSeq, lastMessage } from "../../eventlog/last-message.ts";
import type { CommandEnvelope, EventEnvelope } from "../../schemas/envelope.ts";
import { AGG, isConsoleEvent, type AggregateType, type ConsoleEvent, type ConsoleEventData } from "../../schemas/console/events.ts";
import { COMMAND_AGGREGATE, isConsoleCommand, type ConsoleCommand, type NewConsoleCommand } from "../../schemas/console/commands.ts";
import { systemClock, type Clock } from "../clock.ts";
import { ConsoleHttpError } from "../../schemas/console/http.ts";
import { CLAIM, claim, release } from "./deciders.ts";
import type { ClaimScope, ConsoleError } from "./errors.ts";

export class ConsoleLog {
  readonly store: EventStore<ConsoleEventData>;
  /** Decisions on the directory's state-carrying aggregates (users, spaces, name claims): actors/console/deciders.ts. */
  readonly aggregates: AggregateStore;

  constructor(
    readonly log: EventLog,
    /** Stamps the commands it publishes (`issued_at`) and the directory's decisions. */
    readonly clock: Clock = systemClock,
  ) {
    this.store = new EventStore<ConsoleEventData>(log.js, log.jsm);
    this.aggregates = new AggregateStore(new JetStreamCommitLog(log));
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

  // ---------------------------------------------------------------- unique names

  /**
   * Claims a name (case-insensitive) within a scope for `ownerId`; name_taken when another owner holds it. Claiming
   * a name one already holds is a no-op, so a retried request converges. Most names are new, so the claim is first
   * appended as if it were (one round trip) and decided on the claim's state only when it exists.
   */
  async claim(scope: ClaimScope, scopeId: string, name: string, ownerId: string): Promise<Result<string, ConsoleError>> {
    const id = claimId(scope, scopeId, name);
    const o = await this.aggregates.handle(`${AGG.claim}.${id}`, CLAIM, claim({ scope, name, ownerId }), { assumeNew: true, correlationId: ownerId });
    return o.ok ? { ok: true, result: id } : o;
  }

  /** Releases a claim if `ownerId` holds it (idempotent). */
  async release(claimId: string, ownerId: string): Promise<void> {
    await this.aggregates.handle(`${AGG.claim}.${claimId}`, CLAIM, release(ownerId));
  }

  // ---------------------------------------------------------------- commands

  /** A command for the aggregate `id` of the type it addresses, enveloped and stamped with this log's clock. */
  envelope<C extends NewConsoleCommand>(id: string, c: C): CommandEnvelope<C["type"], C["data"]> {
    return commandEnvelope<C["type"], C["data"]>(c, `${COMMAND_AGGREGATE[c.type]}.${id}`, this.clock.now());
  }

  publish(id: string, c: NewConsoleCommand): Promise<void> {
    return publishCommand(this.log, commandSubject(COMMAND_AGGREGATE[c.type], id), this.envelope(id, c));
  }

  /**
   * Publishes a command and waits for the first event on the aggregate's subject that `until` maps to a value
   * (eventlog/command-bus.ts); a timeout answers 503. Returns the value and a stream sequence at or after the outcome.
   */
  async dispatch<T>(id: string, c: NewConsoleCommand, until: (e: ConsoleEvent) => T | undefined, timeoutMs = 15_000, acceptExisting = false): Promise<{ value: T; seq: number }> {
    const type = COMMAND_AGGREGATE[c.type];
    const outcome = (e: EventEnvelope) => (isConsoleEvent(e) ? until(e) : undefined);
    const r = await dispatchAndAwait(this.log, { commandSubject: commandSubject(type, id), eventSubject: eventSubject(type, id), command: this.envelope(id, c), until: outcome, timeoutMs, acceptExisting });
    if (!r) throw new ConsoleHttpError(503, "the service is busy; retry shortly", undefined, {}, { "retry-after": "1" });
    return r;
  }

  /** The command still waiting on the work queue for an aggregate, if any. */
  async pendingCommand(type: AggregateType, id: string): Promise<ConsoleCommand | null> {
    const msg = await lastMessage(this.log.jsm, STREAMS.commands, commandSubject(type, id)).catch(() => null);
    const command: unknown = msg?.json();
    return isConsoleCommand(command) ? command : null;
  }
}

export function claimId(scope: ClaimScope, scopeId: string, name: string): string {
  const h = createHash("sha256").update(name.normalize("NFC").toLowerCase()).digest("hex").slice(0, 32);
  return `${scope[0]}-${scopeId}-${h}`;
}
