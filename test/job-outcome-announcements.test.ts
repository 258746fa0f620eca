// The job-status read model announces, after each batch it commits, the jobs that finished in it (JOB_OUTCOMES), and
// the gateway's long polls wait on that announcement. Jobs are written straight into the event log here (no actor
// host runs), so each outcome appears exactly when the test appends it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { startStackWithoutActorHost, type TestStack } from "./support/stack.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";
import { EventStore } from "../eventlog/event-store.ts";
import { JOB_OUTCOMES } from "../eventlog/subjects.ts";
import { JOB_EVENTS, JOB_VECTOR_EVENT_VERSION, type JobOutcome } from "../schemas/relayer/remember-job.ts";
import { encodeVectorF32 } from "../schemas/vector-wire.ts";

let t: TestStack;
let client: MemrelayClient;
let owner: string;
let store: EventStore;
const announced: JobOutcome[] = [];

beforeAll(async () => {
  ({ t, client, owner } = await startStackWithoutActorHost());
  store = new EventStore(t.stack.log.js, t.stack.log.jsm);
  t.stack.log.nc.subscribe(JOB_OUTCOMES, {
    callback: (err, m) => {
      if (!err) announced.push(...(JSON.parse(m.string()) as JobOutcome[]));
    },
  });
  await t.stack.log.nc.flush();
}, 120_000);
afterAll(async () => t?.teardown());

const namespace = "announced";
const ctxOf = (jobId: string) => ({ causationId: jobId, correlationId: jobId });

async function accept(jobId: string): Promise<number> {
  const data = { owner, namespace, accepted_at: new Date().toISOString(), text_bytes: 5 };
  return (await store.append(`job.${jobId}`, [{ type: JOB_EVENTS.accepted, version: 1, data }], 0, ctxOf(jobId))).seq;
}

async function index(jobId: string, after: number): Promise<number> {
  const vector = new Float32Array(t.stack.embedder.dims);
  vector[0] = 1;
  const blob_id = `blob-${jobId}`;
  const vector_f32 = encodeVectorF32(vector);
  const events = [
    { type: JOB_EVENTS.uploaded, version: JOB_VECTOR_EVENT_VERSION, data: { blob_id, size: 5, vector_f32, embedder: t.stack.embedder.name } },
    {
      type: JOB_EVENTS.indexed,
      version: JOB_VECTOR_EVENT_VERSION,
      data: { object_id: `0x${"a".repeat(64)}`, wallet: `0x${"b".repeat(64)}`, owner, namespace, blob_id, vector_f32, importance: 0.5, size: 5, created_at: new Date().toISOString() },
    },
  ];
  return (await store.append(`job.${jobId}`, events, after, ctxOf(jobId))).seq;
}

async function fail(jobId: string, after: number): Promise<number> {
  const data = { error: "upload failed after 5 wallet attempts: test", attempts: 5 };
  return (await store.append(`job.${jobId}`, [{ type: JOB_EVENTS.failed, version: 1, data }], after, ctxOf(jobId))).seq;
}

const until = async <T>(what: string, fn: () => T | undefined, timeoutMs = 15_000): Promise<T> => {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe("job outcome announcements", () => {
  it("name each finished job with the commit that finished it, done or failed, and nothing for running ones", async () => {
    const [done, failed, running] = [randomUUID(), randomUUID(), randomUUID()];
    const doneSeq = await index(done, await accept(done));
    const failedSeq = await fail(failed, await accept(failed));
    await accept(running);
    expect(await until("the done job's announcement", () => announced.find((o) => o.job_id === done))).toEqual({ job_id: done, status: "done", seq: doneSeq });
    expect(await until("the failed job's announcement", () => announced.find((o) => o.job_id === failed))).toEqual({ job_id: failed, status: "failed", seq: failedSeq });
    expect((await client.job(running)).status).toBe("running");
    expect(announced.find((o) => o.job_id === running)).toBeUndefined();
  });

  it("end a long poll with the failure and its reason", async () => {
    const jobId = randomUUID();
    const accepted = await accept(jobId);
    const poll = client.job(jobId, 20);
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    await fail(jobId, accepted);
    const j = await poll;
    expect(j).toMatchObject({ job_id: jobId, status: "failed", error: "upload failed after 5 wallet attempts: test" });
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it("end a long poll as done only once the recall indexes hold the memory", async () => {
    const jobId = randomUUID();
    const accepted = await accept(jobId);
    const poll = client.job(jobId, 20);
    await new Promise((r) => setTimeout(r, 300));
    const seq = await index(jobId, accepted);
    const j = await poll;
    expect(j).toMatchObject({ job_id: jobId, status: "done", blob_id: `blob-${jobId}` });
    const r = await t.stack.db.query<{ name: string; seq: string }>("SELECT name, seq FROM projection_checkpoints WHERE name IN ('memory_index', 'lexical_index')");
    expect(r.rows).toHaveLength(2);
    for (const row of r.rows) expect(Number(row.seq)).toBeGreaterThanOrEqual(seq);
    expect((await t.stack.db.query("SELECT 1 FROM memories WHERE blob_id = $1", [`blob-${jobId}`])).rowCount).toBe(1);
  });
});
