// The job status read model's batch write against a real Postgres: jobs without a row are copied (batches of
// COPY_MIN_ROWS or more), jobs with one are merged by the upsert, and both end as the upsert alone would leave them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { createPool, inTransaction, type Db } from "../db/pool.ts";
import { jobStatusProjection } from "../projections/relayer/job-status.ts";
import { COPY_MIN_ROWS } from "../db/copy-binary.ts";
import type { StoredEvent } from "../schemas/envelope.ts";
import type { IndexLogEvent } from "../schemas/relayer/memory-maintenance.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";

let database: TestDatabase;
let db: Db;
let seq = 0;

// (partial data, cast once here: the status model reads only the fields given)
const ev = (job: string, type: IndexLogEvent["type"], data: Record<string, unknown>): StoredEvent<IndexLogEvent> => ({
  seq: ++seq,
  subject: `evt.job.${job}`,
  event: { type, version: 1, id: randomUUID(), aggregate: `job.${job}`, occurred_at: new Date().toISOString(), causation_id: job, correlation_id: job, data } as unknown as IndexLogEvent,
});
const accepted = (job: string) => ev(job, "job.accepted", { owner: "0xowner", namespace: "ns", accepted_at: new Date().toISOString() });
const status = async () =>
  new Map((await db.query<{ id: string; owner: string; namespace: string; status: string; blob_id: string | null; done_seq: string | null }>(
    "SELECT job_id::text AS id, owner, namespace, status, blob_id, done_seq FROM remember_jobs")).rows.map((r) => [r.id, r] as const));

beforeAll(async () => {
  database = await createTestDatabase();
  db = createPool(database.url, 2);
  await jobStatusProjection.migrate(db);
}, 30_000);

afterAll(async () => {
  await db?.end();
  await database?.drop();
});

describe("job status batch write", () => {
  it("copies new jobs and merges known ones as the upsert does", async () => {
    const first = Array.from({ length: COPY_MIN_ROWS }, () => randomUUID());
    await inTransaction(db, (tx) => jobStatusProjection.apply(tx, first.map(accepted)));
    const fresh = Array.from({ length: COPY_MIN_ROWS }, () => randomUUID());
    // known jobs move on (uploaded, then indexed); new ones arrive whole (accepted … indexed) or only uploaded
    const batch = [
      ...first.flatMap((j) => [ev(j, "job.uploaded", { blob_id: `b-${j}` }), ev(j, "job.indexed", {})]),
      ...fresh.slice(1).flatMap((j) => [accepted(j), ev(j, "job.uploaded", { blob_id: `b-${j}` }), ev(j, "job.indexed", {})]),
      ev(fresh[0], "job.uploaded", { blob_id: "b-orphan" }),
    ];
    await inTransaction(db, (tx) => jobStatusProjection.apply(tx, batch));
    const rows = await status();
    expect(rows.size).toBe(2 * COPY_MIN_ROWS);
    for (const j of [...first, ...fresh.slice(1)]) expect(rows.get(j)).toMatchObject({ owner: "0xowner", namespace: "ns", status: "done", blob_id: `b-${j}` });
    expect(Number(rows.get(fresh[1])!.done_seq)).toBe(batch.find((e) => e.event.aggregate === `job.${fresh[1]}` && e.event.type === "job.indexed")!.seq);
    // a job first seen uploaded: the upsert's defaults (no owner yet, namespace "default")
    expect(rows.get(fresh[0])).toMatchObject({ owner: "", namespace: "default", status: "uploaded", blob_id: "b-orphan", done_seq: null });
  });
});
