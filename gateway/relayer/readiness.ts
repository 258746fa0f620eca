// Readiness of the relayer (`GET /ready`, and two gauges in `/metrics`): unlike `/health` (liveness: NATS and
// Postgres answer), it says whether work is moving. The relayer is not ready (503 with the reasons) when, for longer
// than READY_MAX_WAIT_SECS,
// - a remember job has waited on the work queue without an actor host taking it, or
// - an embedding of this process has gone without progress (a query not yet embedded, a document none of whose
//   windows came back).
// A job an actor host has taken is in progress, not stalled, however long it takes: a load balancer must not take a
// relayer out of service for doing its work. Jobs handed back for another attempt are counted (remember_jobs_retried)
// but are no reason: from here a retry that joins its long embedding still running (its store effect outlived its
// wall-clock budget on a busy machine: bench 2d, 363 of 377 samples) looks the same as one failing on a service.
import type { EventLog } from "../../eventlog/connection.ts";
import { STREAMS, commandFilter } from "../../eventlog/subjects.ts";
import { JOB } from "../../schemas/relayer/remember-job.ts";

export interface ReadinessSources {
  readonly log: EventLog;
  /** The process's embedding scheduler (queries here; documents too where the actor host runs in this process). */
  readonly embedding?: { oldestWaitMs(): number };
  readonly maxWaitSecs: number;
}

export interface Readiness {
  readonly ready: boolean;
  /** Seconds the oldest remember job has waited on the queue for an actor host to take it; 0 when none. */
  readonly oldest_remember_job_wait_secs: number;
  /** Remember jobs handed back for another attempt and not finished yet. */
  readonly remember_jobs_retried: number;
  /** Seconds the longest-stalled embedding of this process has gone without progress; 0 when none. */
  readonly oldest_embedding_wait_secs: number;
  readonly max_wait_secs: number;
  readonly reasons: readonly string[];
}

/** What the remember jobs' work queue shows (the actor host's durable consumer on it). */
export interface RememberQueue {
  /** Seconds the oldest job no actor host has taken yet has been on the queue; 0 when none. */
  readonly waitingSecs: number;
  /** Jobs taken and handed back (a failed attempt, or its host died: no keep-alive within the ack wait), still unfinished. */
  readonly retried: number;
}

/** The actor host's consumer of remember-job commands (actors/host.ts names it after the aggregate type). */
const JOB_CONSUMER = `actor-${JOB}`;

/** The first remember-job command at or after stream sequence `seq`, or null. */
async function firstJobFrom(log: EventLog, seq: number) {
  // `next_by_subj` (nats-server 2.9+): the first message of the subject filter at or after `seq` (nats.js answers "no message" with null).
  return log.jsm.streams.getMessage(STREAMS.commands, { seq, next_by_subj: commandFilter(JOB) } as never);
}

/** A command leaves the work queue when its job is acknowledged (done, failed or set aside). */
export async function rememberQueue(log: EventLog, now = Date.now()): Promise<RememberQueue> {
  // No consumer yet (no actor host ever started): every job is waiting.
  const consumer = await log.jsm.consumers.info(STREAMS.commands, JOB_CONSUMER).catch(() => undefined);
  const age = (m: { time: Date } | null) => (m ? Math.max(0, (now - m.time.getTime()) / 1000) : 0);
  const waiting = await firstJobFrom(log, (consumer?.delivered.stream_seq ?? 0) + 1);
  return { waitingSecs: age(waiting), retried: consumer?.num_redelivered ?? 0 };
}

export async function readiness(src: ReadinessSources): Promise<Readiness> {
  const queue = await rememberQueue(src.log);
  const embedding = (src.embedding?.oldestWaitMs() ?? 0) / 1000;
  const max = src.maxWaitSecs;
  const reasons: string[] = [];
  if (queue.waitingSecs > max) reasons.push(`the oldest remember job has waited ${Math.round(queue.waitingSecs)} s for an actor host to take it (more than ${max} s)`);
  if (embedding > max) reasons.push(`the oldest embedding has waited ${Math.round(embedding)} s without progress (more than ${max} s)`);
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return { ready: reasons.length === 0, oldest_remember_job_wait_secs: round(queue.waitingSecs), remember_jobs_retried: queue.retried, oldest_embedding_wait_secs: round(embedding), max_wait_secs: max, reasons };
}
