// Publishing a command to an actor and awaiting its outcome event: how a gateway answers synchronously for work that
// an actor does (the console's bucket and file routes, the relayer's restore). Shared kernel of every service.
import { randomUUID } from "node:crypto";
import type { EventLog } from "./connection.ts";
import { decodeCommit } from "./event-store.ts";
import { lastEventSeq, lastMessage } from "./last-message.ts";
import { STREAMS } from "./subjects.ts";
import type { CommandEnvelope, EventEnvelope, NewCommand } from "../schemas/envelope.ts";

export interface LastCommit {
  readonly seq: number;
  readonly events: readonly EventEnvelope[];
}

/** The last commit on an event subject, null when it has none. */
export async function lastCommit(log: EventLog, subject: string): Promise<LastCommit | null> {
  const msg = await lastMessage(log.jsm, STREAMS.events, subject);
  return msg ? { seq: msg.seq, events: decodeCommit(msg.data).events } : null;
}

/** A version-1 command for an aggregate, with a fresh command id (its dedup id on the work queue). */
export function command<D>(type: string, aggregateType: string, aggregateId: string, data: D, correlationId: string = randomUUID()): CommandEnvelope<string, D> {
  return commandEnvelope({ type, version: 1, data }, `${aggregateType}.${aggregateId}`, new Date().toISOString(), correlationId);
}

/** The envelope of a command of a typed catalogue (`aggregate`: `<type>.<id>`), issued at `issuedAt`, with a fresh command id. */
export function commandEnvelope<T extends string, D>(c: NewCommand<T, D>, aggregate: string, issuedAt: string, correlationId: string = randomUUID()): CommandEnvelope<T, D> {
  return { type: c.type, version: c.version, id: randomUUID(), aggregate, issued_at: issuedAt, correlation_id: correlationId, data: c.data };
}

/** Publishes a command on the work queue; its id is the dedup id, so a re-published command is taken once. */
export async function publishCommand(log: EventLog, subject: string, command: CommandEnvelope): Promise<void> {
  await log.js.publish(subject, JSON.stringify(command), { msgID: command.id, timeout: 5_000 });
}

export interface Dispatch<T> {
  readonly commandSubject: string;
  readonly eventSubject: string;
  readonly command: CommandEnvelope;
  /** Maps an event of the aggregate to the outcome, undefined for events that are not one. */
  readonly until: (e: EventEnvelope) => T | undefined;
  readonly timeoutMs: number;
  /** An idempotent command: an outcome already in the log (a concurrent duplicate's) answers it too. */
  readonly acceptExisting?: boolean;
}

/**
 * Publishes a command and waits for the first event on the aggregate's subject that `until` maps to a value. The
 * subscription is made before the command is published, so the outcome cannot be missed; the last commit is also
 * polled (a command an actor finds already reflected appends nothing) and checked once more on timeout. Returns the
 * value and a stream sequence at or after the outcome (for read models), or undefined after `timeoutMs`.
 */
export async function dispatchAndAwait<T>(log: EventLog, d: Dispatch<T>): Promise<{ value: T; seq: number } | undefined> {
  const sub = log.nc.subscribe(d.eventSubject);
  const fromCommit = (c: LastCommit | null, after: number) => {
    for (const e of c && c.seq > after ? c.events : []) {
      const v = d.until(e);
      if (v !== undefined) return { value: v, seq: c!.seq };
    }
    return undefined;
  };
  try {
    const startSeq = d.acceptExisting ? 0 : await lastEventSeq(log.jsm, d.eventSubject);
    await publishCommand(log, d.commandSubject, d.command);
    const found = await new Promise<T | undefined>((resolve) => {
      let done = false;
      const finish = (v: T | undefined) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        clearInterval(poll);
        resolve(v);
      };
      const timer = setTimeout(() => finish(undefined), d.timeoutMs);
      const poll = setInterval(() => {
        lastCommit(log, d.eventSubject).then((c) => {
          const hit = fromCommit(c, startSeq);
          if (hit) finish(hit.value);
        }, () => undefined);
      }, 250);
      void (async () => {
        for await (const m of sub) {
          for (const e of decodeCommit(m.data).events) {
            const v = d.until(e);
            if (v !== undefined) return finish(v);
          }
        }
      })().catch(() => undefined);
    });
    if (found !== undefined) return { value: found, seq: await storedPast(log, d.eventSubject, startSeq) };
    return fromCommit(await lastCommit(log, d.eventSubject), startSeq);
  } finally {
    sub.unsubscribe();
  }
}

/**
 * How long the outcome's commit may take to show in the stream after a core subscriber saw it: nats-server 2.10 hands
 * a JetStream publish to core subscribers before its stream has stored it (2.9 stored it first).
 */
const STORED_WITHIN_MS = 2_000;

/**
 * The stream sequence of the last commit on `subject` once it is past `after`: the outcome the subscription saw, or a
 * later commit. Read models are waited for up to it, so an answer must never name an earlier one (a route that
 * answered with the sequence before the outcome's released its caller before the read model held the outcome: a
 * bucket just reserved, then 404 on its finalize). Past STORED_WITHIN_MS, whatever the stream says.
 */
async function storedPast(log: EventLog, subject: string, after: number): Promise<number> {
  const deadline = Date.now() + STORED_WITHIN_MS;
  for (;;) {
    const seq = await lastEventSeq(log.jsm, subject);
    if (seq > after || Date.now() > deadline) return seq;
    await new Promise((r) => setTimeout(r, 5));
  }
}
