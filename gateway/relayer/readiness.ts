// Readiness of the relayer (`GET /ready`, and two gauges in `/metrics`): unlike `/health` (liveness: NATS and
// Postgres answer), it says whether work is moving. A remember job whose command has waited on the work queue longer
// than READY_MAX_WAIT_SECS, or an embedding of this process waiting that long, makes the relayer not ready (503 with
// the reasons), so a load balancer or an operator sees a stalled pipeline that `/health` would report as ok.
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
  /** Seconds the oldest remember-job command has been on the work queue (waiting or in progress); 0 when none. */
  readonly oldest_remember_job_wait_secs: number;
  /** Seconds the oldest embedding of this process has been waiting or running; 0 when none. */
  readonly oldest_embedding_wait_secs: number;
  readonly max_wait_secs: number;
  readonly reasons: readonly string[];
}

/**
 * The oldest remember-job command still on the CMD work queue: a command leaves it when its job is acknowledged
 * (done, failed or set aside), so its age is how long the oldest unfinished job has waited.
 */
export async function oldestRememberJobWaitSecs(log: EventLog, now = Date.now()): Promise<number> {
  // `next_by_subj` (nats-server 2.9+): the first message of the subject filter at or after `seq`.
  // (nats.js answers "no message" with null)
  const m = await log.jsm.streams.getMessage(STREAMS.commands, { seq: 1, next_by_subj: commandFilter(JOB) } as never);
  return m ? Math.max(0, (now - m.time.getTime()) / 1000) : 0;
}

export async function readiness(src: ReadinessSources): Promise<Readiness> {
  const job = await oldestRememberJobWaitSecs(src.log);
  const embedding = (src.embedding?.oldestWaitMs() ?? 0) / 1000;
  const reasons: string[] = [];
  if (job > src.maxWaitSecs) reasons.push(`the oldest remember job has waited ${Math.round(job)} s (more than ${src.maxWaitSecs} s)`);
  if (embedding > src.maxWaitSecs) reasons.push(`the oldest embedding has waited ${Math.round(embedding)} s (more than ${src.maxWaitSecs} s)`);
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return { ready: reasons.length === 0, oldest_remember_job_wait_secs: round(job), oldest_embedding_wait_secs: round(embedding), max_wait_secs: src.maxWaitSecs, reasons };
}
