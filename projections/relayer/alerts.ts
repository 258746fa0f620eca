// The alerts projection: turns `job.failed` events (a remember job that used its 5 wallet attempts) into
// `alerts.upload.failed` messages on the ALERTS stream, exactly once per job.
//
// Exactly once: the alert id (and Nats-Msg-Id) is derived from the event id, and the projection records every alert
// it publishes in `alerts_emitted`, in the same transaction that advances its checkpoint. A redelivered batch finds
// the record (or, if the publish succeeded but the commit did not, the stream drops the duplicate msg id).
//
// Replay does not re-alert history: `reset` keeps `alerts_emitted` (this projection has no read model to rebuild),
// so a replay from sequence 1 walks the log and publishes nothing it published before. A projection that has never
// run (a new database, or alerts added to a running deployment) starts at the end of the event log instead of
// sequence 1, and a failure older than `maxAgeSecs` when the projection reaches it is skipped, not alerted.
import type { JetStreamManager, JetStreamClient } from "@nats-io/jetstream";
import type { Projection } from "../runtime.ts";
import { migrateCheckpoints } from "../runtime.ts";
import type { Db, Tx } from "../../db/pool.ts";
import type { EventOfType, StoredEvent } from "../../schemas/envelope.ts";
import { decodeCommit } from "../../eventlog/event-store.ts";
import { STREAMS, eventFilter } from "../../eventlog/subjects.ts";
import { alertId, publishAlert } from "../../eventlog/alert-stream.ts";
import { JOB, JOB_EVENTS, MAX_WALLET_ATTEMPTS, type JobAccepted, type JobEventData, type JobUploaded } from "../../schemas/relayer/remember-job.ts";
import type { IndexLogEvent } from "../../schemas/relayer/memory-maintenance.ts";
import { ALERT_SOURCE, ALERT_SUBJECTS, ALERT_VERSIONS, type UploadAttempt, type UploadFailedAlert, type UploadFailedV1 } from "../../schemas/alerts.ts";

export const ALERTS_PROJECTION = "alerts";

export interface AlertsProjectionOptions {
  /** CHAIN_NETWORK, carried by every alert. */
  readonly network: string;
  /** Failures older than this when reached are not alerted (a rebuilt database, a long outage). Default one day. */
  readonly maxAgeSecs?: number;
  readonly publishTimeoutMs?: number;
}

const MAX_ERROR_CHARS = 1_000;
const FAILED_TYPE = Buffer.from(JSON.stringify(JOB_EVENTS.failed));

const clip = (s: string, n = MAX_ERROR_CHARS) => (s.length > n ? s.slice(0, n) + "…" : s);
const short = (addr: string) => (addr.length > 18 ? `${addr.slice(0, 10)}…${addr.slice(-6)}` : addr);

/** The job's events up to `uptoSeq`, read by subject (direct message gets: jobs have a handful of commits). */
async function jobHistory(jsm: JetStreamManager, subject: string, uptoSeq: number): Promise<IndexLogEvent[]> {
  const out: IndexLogEvent[] = [];
  let seq = 1;
  while (seq <= uptoSeq) {
    // `next_by_subj` (nats-server 2.9+): the first message of the subject at or after `seq`.
    // (nats.js answers "no message" with null)
    const m = await jsm.streams.getMessage(STREAMS.events, { seq, next_by_subj: subject } as never);
    if (!m || m.seq > uptoSeq) break;
    out.push(...(decodeCommit(m.data).events as IndexLogEvent[])); // a job's subject holds job events only
    seq = m.seq + 1;
  }
  return out;
}

/** The alert for a failed job, from the job's history (which ends with the failure). */
export function uploadFailedAlert(failed: StoredEvent<EventOfType<JobEventData, typeof JOB_EVENTS.failed>>, history: readonly IndexLogEvent[], network: string, now = new Date()): UploadFailedAlert {
  const jobId = failed.event.aggregate.slice(`${JOB}.`.length);
  let accepted: JobAccepted | undefined;
  let uploaded: JobUploaded | undefined;
  const attempts: UploadAttempt[] = [];
  for (const e of history) {
    if (e.type === JOB_EVENTS.accepted) accepted = e.data;
    else if (e.type === JOB_EVENTS.uploaded) uploaded = e.data;
    else if (e.type === JOB_EVENTS.uploadAttemptFailed) {
      const d = e.data;
      attempts.push({ attempt: d.attempt, wallet: d.wallet, error: clip(d.error) });
    }
  }
  const f = failed.event.data;
  const data: UploadFailedV1 = {
    job_id: jobId,
    owner: accepted?.owner ?? "",
    namespace: accepted?.namespace ?? "",
    stage: uploaded ? "record" : "store",
    ...(uploaded ? { blob_id: uploaded.blob_id } : {}),
    attempts: f.attempts,
    max_attempts: MAX_WALLET_ATTEMPTS,
    error: clip(f.error),
    wallet_attempts: attempts,
    ...(accepted?.accepted_at ? { accepted_at: accepted.accepted_at } : {}),
    event_id: failed.event.id,
    event_seq: failed.seq,
    correlation_id: failed.event.correlation_id,
  };
  const step = uploaded ? "chain record" : "blob upload";
  return {
    type: ALERT_SUBJECTS.uploadFailed,
    version: ALERT_VERSIONS[ALERT_SUBJECTS.uploadFailed],
    id: alertId(`${ALERT_SUBJECTS.uploadFailed}:${failed.event.id}`),
    occurred_at: failed.event.occurred_at,
    emitted_at: now.toISOString(),
    source: ALERT_SOURCE,
    network,
    severity: "critical",
    text: `[${network}] remember job ${jobId} failed after ${f.attempts}/${MAX_WALLET_ATTEMPTS} wallet attempts (${step}; owner ${short(data.owner)}, namespace ${data.namespace}): ${clip(f.error, 300)}`,
    data,
  };
}

export function alertsProjection(log: { readonly js: JetStreamClient; readonly jsm: JetStreamManager }, opts: AlertsProjectionOptions): Projection<IndexLogEvent> {
  const maxAgeMs = (opts.maxAgeSecs ?? 86_400) * 1000;
  return {
    name: ALERTS_PROJECTION,
    filter: eventFilter(JOB),
    migrate: async (db: Db) => {
      await db.query(`CREATE TABLE IF NOT EXISTS alerts_emitted (
        alert_id uuid PRIMARY KEY, type text NOT NULL, source_event_id text NOT NULL, source_seq bigint NOT NULL,
        stream_seq bigint, emitted_at timestamptz NOT NULL DEFAULT now())`);
      // First run: start at the end of the log, so a new deployment does not alert on history. (The stream's
      // identity is recorded with it, or the runtime would take the checkpoint for another log's and rebuild.)
      await migrateCheckpoints(db);
      const info = await log.jsm.streams.info(STREAMS.events);
      await db.query("INSERT INTO projection_checkpoints (name, seq, stream_created) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING", [
        ALERTS_PROJECTION,
        info.state.last_seq,
        info.created,
      ]);
    },
    // Job commits carry vectors: only the rare one holding a failure is worth decoding.
    wants: (raw) => Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).indexOf(FAILED_TYPE) >= 0,
    // Nothing to empty: `alerts_emitted` is the memory of what was already said, and survives a replay.
    reset: async () => undefined,
    apply: async (tx: Tx, events) => {
      for (const stored of events) {
        const { event } = stored;
        if (event.type !== JOB_EVENTS.failed) continue;
        // A command the actor host set aside raised its own alert (alerts.deadletter.actor).
        if (event.data.set_aside) continue;
        if (Date.now() - Date.parse(stored.event.occurred_at) > maxAgeMs) continue;
        const id = alertId(`${ALERT_SUBJECTS.uploadFailed}:${stored.event.id}`);
        const claimed = await tx.query(
          `INSERT INTO alerts_emitted (alert_id, type, source_event_id, source_seq) VALUES ($1, $2, $3, $4) ON CONFLICT (alert_id) DO NOTHING`,
          [id, ALERT_SUBJECTS.uploadFailed, stored.event.id, stored.seq],
        );
        if (!claimed.rowCount) continue;
        const history = await jobHistory(log.jsm, stored.subject, stored.seq);
        // A publish failure throws: the transaction rolls back and the batch is retried from the checkpoint.
        const { seq } = await publishAlert(log.js, uploadFailedAlert({ ...stored, event }, history, opts.network), opts.publishTimeoutMs);
        await tx.query("UPDATE alerts_emitted SET stream_seq = $2 WHERE alert_id = $1", [id, seq]);
      }
    },
  };
}
