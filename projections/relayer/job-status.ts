// The remember-job status read model: latest status per job, for polling. Owner-scoped reads only.
import type { Projection } from "../runtime.ts";
import { prepared, type Db, type Tx } from "../../db/pool.ts";
import { JOB, JOB_EVENTS, type JobOutcome } from "../../schemas/relayer/remember-job.ts";
import { INITIAL_JOB, evolveJob, type JobState } from "../../schemas/relayer/job-view.ts";
import type { IndexLogEvent } from "../../schemas/relayer/memory-maintenance.ts";
import { JOB_OUTCOMES, eventFilter } from "../../eventlog/subjects.ts";
import { storableText } from "../../schemas/text.ts";
import { isUuid } from "../../schemas/relayer/http.ts";
import { COPY_MIN_ROWS, copyBinary, encodeBinaryCopy, isCanonicalUuid } from "../../db/copy-binary.ts";

export const JOB_STATUS = "job_status";

type Row = JobState & { readonly job_id: string };

/**
 * Jobs without a row yet (every job of a replay) written by binary COPY, as the upsert below would write them;
 * returns the rest, for the upsert. Small batches (live) and ids not in canonical form all go to the upsert.
 */
async function copyNewJobs(tx: Tx, list: Row[]): Promise<Row[]> {
  if (list.length < COPY_MIN_ROWS) return list;
  const text = (x: unknown) => x === undefined || typeof x === "string";
  if (!list.every((r) => isCanonicalUuid(r.job_id) && text(r.owner) && text(r.namespace) && text(r.blob_id) && text(r.error))) return list;
  const ids = list.map((r) => r.job_id.toLowerCase());
  const known = new Set((await tx.query<{ id: string }>("SELECT job_id::text AS id FROM remember_jobs WHERE job_id = ANY($1::uuid[])", [ids])).rows.map((r) => r.id));
  const fresh = list.filter((_, i) => !known.has(ids[i]));
  if (fresh.length) {
    // updated_at takes its default, now(): the transaction's time, as the upsert writes it
    await copyBinary(
      tx,
      "remember_jobs (job_id, owner, namespace, status, blob_id, error, done_seq)",
      encodeBinaryCopy(
        ["uuid", "text", "text", "text", "text", "text", "int8"],
        [fresh.map((r) => r.job_id), fresh.map((r) => r.owner ?? ""), fresh.map((r) => r.namespace ?? "default"), fresh.map((r) => r.status), fresh.map((r) => r.blob_id ?? null), fresh.map((r) => r.error ?? null), fresh.map((r) => r.done_seq ?? null)],
      ),
    );
  }
  return list.filter((_, i) => known.has(ids[i]));
}

export const jobStatusProjection: Projection<IndexLogEvent> = {
  name: JOB_STATUS,
  filter: eventFilter(JOB),
  migrate: async (db: Db) => {
    await db.query(`CREATE TABLE IF NOT EXISTS remember_jobs (
      job_id uuid PRIMARY KEY, owner text NOT NULL, namespace text NOT NULL, status text NOT NULL,
      blob_id text, error text, updated_at timestamptz NOT NULL DEFAULT now())`);
    // Sequence of the commit that indexed the job: "done" is reported only once the memory index applied it.
    await db.query("ALTER TABLE remember_jobs ADD COLUMN IF NOT EXISTS done_seq bigint");
  },
  reset: async (tx: Tx) => {
    await tx.query("TRUNCATE remember_jobs");
  },
  apply: async (tx: Tx, events) => {
    // Fold the batch per job first (schemas/relayer/job-view.ts): one upsert per job, whatever the number of its
    // events in the batch; the upsert merges what the batch did not say (owner, blob id) with the row.
    const rows = new Map<string, Row>();
    for (const { event, seq } of events) {
      const id = event.aggregate.slice("job.".length);
      const before = rows.get(id) ?? { job_id: id, ...INITIAL_JOB };
      const after = evolveJob(before, event, seq);
      if (after !== before) rows.set(id, { ...after, job_id: id });
    }
    if (!rows.size) return;
    const list = await copyNewJobs(tx, [...rows.values()]);
    if (!list.length) return;
    await tx.query(prepared(
      `INSERT INTO remember_jobs AS j (job_id, owner, namespace, status, blob_id, error, done_seq, updated_at)
       SELECT id, coalesce(o, ''), coalesce(ns, 'default'), st, b, e, ds, now()
       FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[]) AS u(id, o, ns, st, b, e, ds)
       ON CONFLICT (job_id) DO UPDATE SET
         owner = CASE WHEN EXCLUDED.owner <> '' THEN EXCLUDED.owner ELSE j.owner END,
         namespace = CASE WHEN EXCLUDED.owner <> '' THEN EXCLUDED.namespace ELSE j.namespace END,
         status = EXCLUDED.status, blob_id = coalesce(EXCLUDED.blob_id, j.blob_id), error = EXCLUDED.error,
         done_seq = coalesce(EXCLUDED.done_seq, j.done_seq), updated_at = now()`,
      [list.map((r) => r.job_id), list.map((r) => r.owner ?? null), list.map((r) => r.namespace ?? null), list.map((r) => r.status), list.map((r) => r.blob_id ?? null), list.map((r) => r.error ?? null), list.map((r) => r.done_seq ?? null)],
    ));
  },
  // The jobs this batch finished, for long polls (projections/relayer/job-lookup.ts).
  announce: (applied) => {
    const outcomes: JobOutcome[] = [];
    for (const { event, seq } of applied) {
      const status = event.type === JOB_EVENTS.indexed ? "done" : event.type === JOB_EVENTS.failed ? "failed" : undefined;
      if (status) outcomes.push({ job_id: event.aggregate.slice("job.".length), status, seq });
    }
    return outcomes.length ? { subject: JOB_OUTCOMES, data: Buffer.from(JSON.stringify(outcomes)) } : undefined;
  },
  // A job whose events could not be applied has failed: its owner polls `failed` with the reason, never a job stuck
  // in `running`. Only storable text is written (the set-aside data may hold what Postgres refused).
  setAside: async (tx: Tx, events, error) => {
    for (const { event } of events) {
      const id = event.aggregate.slice("job.".length);
      if (!isUuid(id)) continue;
      const d = (event.data ?? {}) as { owner?: unknown; namespace?: unknown };
      await tx.query(
        `INSERT INTO remember_jobs AS j (job_id, owner, namespace, status, error) VALUES ($1, $2, $3, 'failed', $4)
         ON CONFLICT (job_id) DO UPDATE SET status = 'failed', error = EXCLUDED.error,
           owner = CASE WHEN EXCLUDED.owner <> '' THEN EXCLUDED.owner ELSE j.owner END, updated_at = now()`,
        [id, typeof d.owner === "string" ? storableText(d.owner) : "", typeof d.namespace === "string" ? storableText(d.namespace) : "default", `set aside: ${error}`],
      );
    }
  },
};
