// Fault tests: a killed actor host, a NATS outage, a Postgres outage and a dropped index. Nothing acknowledged is
// lost, nothing is duplicated, and the services recover without a restart.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "undici";
import { startStackWithoutActorHost, startTestStack, type TestStack } from "./support/stack.ts";
import { startWorkerProcess } from "./support/worker-process.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";
import { resetProjection } from "../projections/runtime.ts";
import { MEMORY_INDEX } from "../projections/relayer/memory-index.ts";

const startWorker = (env: Record<string, string>, roles: string) => startWorkerProcess(env, roles);

async function until(cond: () => Promise<boolean>, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("actor host killed with -9 while 1,000 jobs are in flight", () => {
  let t: TestStack;
  let client: MemrelayClient;
  let owner: string;
  beforeAll(async () => void ({ t, client, owner } = await startStackWithoutActorHost()), 120_000);
  afterAll(async () => t?.teardown());

  it("ends every job done exactly once after a restart", async () => {
    const jobIds: string[] = [];
    for (let i = 0; i < 50; i++) {
      const r = await client.rememberBulk(Array.from({ length: 20 }, (_, k) => ({ text: `fact number ${i * 20 + k} about the crash test`, namespace: "crash" })));
      jobIds.push(...r.job_ids);
    }
    const done = async () => Number((await t.stack.db.query("SELECT count(*) FROM remember_jobs WHERE owner = $1 AND status = 'done'", [owner])).rows[0].count);
    const first = await startWorker(t.stack.workerEnv, "actors");
    await until(async () => (await done()) >= 50, 60_000, "the first jobs to finish");
    first.kill("SIGKILL");
    const before = await done();
    expect(before).toBeLessThan(1000);
    const second = await startWorker(t.stack.workerEnv, "actors");
    try {
      await until(async () => (await done()) === 1000, 120_000, "all 1,000 jobs to be done");
      // job_status and memory_index are separate projections: the index may still be applying the last commits.
      const indexed = async () => Number((await t.stack.db.query("SELECT count(*) FROM memories WHERE owner = $1 AND namespace = 'crash'", [owner])).rows[0].count);
      await until(async () => (await indexed()) >= 1000, 60_000, "the memory index to hold all 1,000");
      const rows = await t.stack.db.query("SELECT id::text FROM memories WHERE owner = $1 AND namespace = 'crash'", [owner]);
      expect(rows.rowCount).toBe(1000);
      expect(new Set(rows.rows.map((r) => r.id))).toEqual(new Set(jobIds));
      const st = await client.bulkStatus(jobIds.slice(0, 100));
      expect(st.results.every((r) => r.status === "done")).toBe(true);
      // Exactly one blob object on chain per job: the chain record is idempotent per (owner, blob id).
      const objects = await t.stack.chain.listBlobs(owner, { namespace: "crash", limit: 5000 });
      expect(objects.length).toBe(1000);
    } finally {
      second.kill("SIGTERM");
    }
  }, 240_000);
});

describe("outages", () => {
  let t: TestStack;
  let client: MemrelayClient;
  beforeAll(async () => {
    t = await startTestStack({}, { viaProxy: true });
    client = await t.client();
  }, 120_000);
  afterAll(async () => t?.teardown());

  it("answers 503 with {error} while nats-server is down and recovers without a restart", async () => {
    const ok = await client.remember("before the outage");
    await client.waitForJob(ok.job_id);
    await t.nats.stop();
    const err = await client.remember("during the outage").catch((e) => e);
    expect(err.status).toBe(503);
    expect(typeof err.body.error).toBe("string");
    const health = await request(t.stack.relayerUrl + "/health");
    expect(health.statusCode).toBe(503);
    await health.body.dump();
    await t.nats.restart();
    await until(async () => client.remember("after the outage").then(() => true, () => false), 30_000, "the relayer to accept again");
    const again = await client.remember("after the outage, polled");
    expect((await client.waitForJob(again.job_id)).status).toBe("done");
  }, 90_000);

  it("accepts remembers while Postgres is down, indexes them once it is back, and answers recall with 503 meanwhile", async () => {
    t.proxy!.cut();
    let accepted;
    try {
      accepted = await Promise.all(["written while the database was down", "another one during the outage"].map((x) => client.remember(x, "pgdown")));
      const recall = await client.recall("database", { namespace: "pgdown" }).catch((e) => e);
      expect(recall.status).toBe(503);
      expect(typeof recall.body.error).toBe("string");
      const poll = await client.job(accepted[0].job_id).catch((e) => e);
      // Polling still answers from the log while the read model is unreachable, or says 503; never a 404 or 500.
      expect([200, 503]).toContain(poll.status ?? 200);
    } finally {
      t.proxy!.restore();
    }
    const done = await Promise.all(accepted.map((a) => client.waitForJob(a.job_id, 60_000)));
    expect(done.every((j) => j.status === "done")).toBe(true);
    const r = await client.recall("written while the database was down", { namespace: "pgdown" });
    expect(r.results.map((x) => x.text)).toContain("written while the database was down");
  }, 90_000);

  it("rebuilds the same index rows after the index is dropped and replayed", async () => {
    const jobs = await client.rememberBulk(Array.from({ length: 20 }, (_, i) => ({ text: `replay fact ${i}`, namespace: "replay" })));
    await Promise.all(jobs.job_ids.map((id) => client.waitForJob(id)));
    const snapshot = async () =>
      (await t.stack.db.query("SELECT id, blob_id, owner, namespace, vector::text AS v, created_at, importance, size FROM memories ORDER BY id")).rows;
    const before = await snapshot();
    const runner = t.stack.relayer.projections.find((p) => p.projection.name === MEMORY_INDEX)!;
    await resetProjection(t.stack.db, runner.projection);
    expect((await t.stack.db.query("SELECT count(*) FROM memories")).rows[0].count).toBe("0");
    await until(async () => (await snapshot()).length === before.length, 60_000, "the replay");
    expect(await snapshot()).toEqual(before);
  }, 90_000);
});
