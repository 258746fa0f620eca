// Black-box: a relayer whose recall, ask, stats and job lookups may read from a real PostgreSQL hot standby
// (DATABASE_READ_URLS; a primary and a standby of the test's own, scripts/pg-standby.sh). "Done means recallable"
// holds on the standby, on a standby whose replay is paused (the reads wait for it or go to the primary, and stay
// fast), on a frozen standby (SIGSTOP) and with the standby stopped; `/metrics` says which pool served the reads and how far the standby lags.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import parse from "parse-prometheus-text-format";
import { request } from "undici";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { startPrimaryWithStandby, standbyDatabaseUrl, type PrimaryWithStandby } from "./support/pg-standby.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";
import type { TestDatabase } from "./support/postgres.ts";

const WAIT_MS = 200;
const MAX_LAG_MS = 1_000;
/** Room for this shared 2-core machine's noise in a latency bound: a recall takes 5–50 ms here, under load up to a second. */
const NOISE_MS = 2_000;
/** The read pool's query timeout on a replica (db/read-pool.ts REPLICA_TIMEOUTS). */
const REPLICA_QUERY_TIMEOUT_MS = 2_000;

let pg: PrimaryWithStandby;
let t: TestStack;
let alice: MemrelayClient;

beforeAll(async () => {
  pg = await startPrimaryWithStandby();
  let db: TestDatabase | undefined;
  try {
    db = await pg.database();
    const database = db;
    t = await startTestStack(
      { DATABASE_READ_URLS: standbyDatabaseUrl(pg, database), DATABASE_READ_WAIT_MS: String(WAIT_MS), DATABASE_READ_MAX_LAG_MS: String(MAX_LAG_MS) },
      { database: async () => database },
    );
    alice = await t.client();
  } catch (err) {
    pg.remove();
    throw err;
  }
}, 180_000);
afterAll(async () => {
  await t?.teardown();
  pg?.remove();
});

interface Scrape {
  reads(pool: "primary" | "replica", reason?: string): number;
  gauge(name: string): number | undefined;
}

async function scrape(): Promise<Scrape> {
  const r = await request(t.stack.relayerUrl + "/metrics");
  const families = parse(await r.body.text());
  const metrics = (name: string) => families.find((f) => f.name === name)?.metrics ?? [];
  return {
    reads: (pool, reason) =>
      (metrics("memrelay_db_reads_total") as { labels?: Record<string, string>; value: string }[])
        .filter((m) => (pool === "primary" ? m.labels?.pool === "primary" : m.labels?.pool !== "primary") && (!reason || m.labels?.reason === reason))
        .reduce((n, m) => n + Number(m.value), 0),
    gauge: (name) => {
      const m = metrics(name)[0] as { value: string } | undefined;
      return m === undefined ? undefined : Number(m.value);
    },
  };
}

const stats = (ns: string) => alice.call<{ memory_count: number }>("POST", "/api/stats", { namespace: ns });

/** Remembers `n` memories one after the other; after each `done`, recall, the job and stats must show it at once. */
async function rememberThenReadEach(ns: string, n: number, tag: string): Promise<number[]> {
  const recallMs: number[] = [];
  for (let i = 0; i < n; i++) {
    const text = `${tag} memory number ${i} about the ${["harbour", "orchard", "station", "library"][i % 4]} at dawn`;
    const job = await alice.rememberAndWait(text, ns);
    expect(job.status).toBe("done");
    const t0 = performance.now();
    const r = await alice.recall(text, { namespace: ns, limit: 1 });
    recallMs.push(performance.now() - t0);
    expect(r.results.map((x) => x.text)).toEqual([text]);
    expect((await alice.job(job.job_id)).status).toBe("done");
    expect((await stats(ns)).memory_count).toBe(i + 1);
  }
  return recallMs;
}

describe("reads from a streaming replica (DATABASE_READ_URLS)", () => {
  it("recall, the job and stats right after done see the memory every time, and the replica serves reads", async () => {
    const before = await scrape();
    await rememberThenReadEach("fresh", 40, "fresh");
    // several agents at once: each one's recall right after its own done
    await Promise.all(Array.from({ length: 8 }, async (_, a) => {
      for (let i = 0; i < 5; i++) {
        const text = `agent ${a} fact ${i}: the kettle is in cupboard ${a * 10 + i}`;
        expect((await alice.rememberAndWait(text, `agent-${a}`)).status).toBe("done");
        const r = await alice.recall(text, { namespace: `agent-${a}`, limit: 1 });
        expect(r.results[0]?.text).toBe(text);
      }
    }));
    const after = await scrape();
    const byReplica = after.reads("replica") - before.reads("replica");
    const byPrimary = after.reads("primary") - before.reads("primary");
    console.log(`fresh reads: ${byReplica} by the replica, ${byPrimary} by the primary`);
    // 40 × (recall, job, stats) + 40 recalls, plus the long polls' job reads: most of them on the replica
    expect(byReplica).toBeGreaterThan(100);
    expect(after.gauge("memrelay_db_replica_up")).toBe(1);
    expect(after.gauge("memrelay_db_replica_lag_seconds")).toBeLessThan(MAX_LAG_MS / 1000);
    expect(after.gauge("memrelay_db_replica_lag_bytes")).toBeGreaterThanOrEqual(0);
  }, 180_000);

  it("a standby that lags by seconds (replay paused): reads stay correct and fast, then skip it", async () => {
    await pg.pauseReplay();
    try {
      const before = await scrape();
      const ms = await rememberThenReadEach("paused", 12, "paused");
      // every recall waited at most DATABASE_READ_WAIT_MS for the standby before the primary answered
      console.log(`recall with replay paused: max ${Math.max(...ms).toFixed(0)} ms, median ${[...ms].sort((a, b) => a - b)[ms.length >> 1].toFixed(0)} ms`);
      expect(Math.max(...ms)).toBeLessThan(WAIT_MS + NOISE_MS);
      // its lag in seconds grows while replay stays paused; past DATABASE_READ_MAX_LAG_MS it is skipped
      await expect.poll(async () => (await scrape()).gauge("memrelay_db_replica_lag_seconds"), { timeout: 10_000, interval: 200 }).toBeGreaterThan(MAX_LAG_MS / 1000);
      const lagging = await scrape();
      expect(lagging.reads("primary", "replay_wait_timeout") + lagging.reads("primary", "no_healthy_replica")).toBeGreaterThan(before.reads("primary", "replay_wait_timeout") + before.reads("primary", "no_healthy_replica"));
      expect(lagging.gauge("memrelay_db_replica_lag_bytes")).toBeGreaterThan(0);
      const quick = await rememberThenReadEach("paused-skipped", 5, "skipped");
      expect(Math.max(...quick)).toBeLessThan(WAIT_MS + NOISE_MS);
      // skipped: no read waited for it any more
      const skipped = await scrape();
      expect(skipped.reads("primary", "no_healthy_replica")).toBeGreaterThanOrEqual(lagging.reads("primary", "no_healthy_replica") + 15);
      expect(skipped.reads("primary", "replay_wait_timeout")).toBe(lagging.reads("primary", "replay_wait_timeout"));
      expect(skipped.reads("replica")).toBe(lagging.reads("replica"));
    } finally {
      await pg.resumeReplay();
    }
    // caught up again, the replica serves reads again
    await expect.poll(async () => (await scrape()).gauge("memrelay_db_replica_lag_seconds"), { timeout: 10_000, interval: 200 }).toBeLessThan(MAX_LAG_MS / 1000);
    const resumed = await scrape();
    await rememberThenReadEach("resumed", 3, "resumed");
    expect((await scrape()).reads("replica")).toBeGreaterThan(resumed.reads("replica"));
  }, 180_000);

  it("a frozen standby (every process SIGSTOPped, a gray failure): reads answer from the primary, not held", async () => {
    await rememberThenReadEach("before-freeze", 2, "before-freeze");
    const before = await scrape();
    pg.freezeStandby();
    try {
      const ms = await rememberThenReadEach("frozen", 10, "frozen");
      console.log(`recall with the standby frozen: max ${Math.max(...ms).toFixed(0)} ms, median ${[...ms].sort((a, b) => a - b)[ms.length >> 1].toFixed(0)} ms`);
      // a read caught on the frozen standby gives up after its query timeout (2 s) and the primary answers; the
      // checks skip the standby within a second, and the reads after that do not touch it
      expect(Math.max(...ms)).toBeLessThan(REPLICA_QUERY_TIMEOUT_MS + WAIT_MS + NOISE_MS);
      const frozen = await scrape();
      expect(frozen.gauge("memrelay_db_replica_up")).toBe(0);
      expect(frozen.reads("primary") - before.reads("primary")).toBeGreaterThan(30);
      const quick = await rememberThenReadEach("frozen-skipped", 3, "frozen-skipped");
      expect(Math.max(...quick)).toBeLessThan(WAIT_MS + NOISE_MS);
      expect((await scrape()).reads("replica")).toBe(frozen.reads("replica"));
    } finally {
      pg.thawStandby();
    }
    await expect.poll(async () => (await scrape()).gauge("memrelay_db_replica_up"), { timeout: 15_000, interval: 200 }).toBe(1);
  }, 180_000);

  it("a stopped standby: recall, ask, job lookups and stats still answer, from the primary", async () => {
    const before = await scrape();
    pg.stopStandby();
    try {
      // at once, before a health check has seen it go: the first reads find it gone and fall back
      const ms = await rememberThenReadEach("stopped", 10, "stopped");
      expect(Math.max(...ms)).toBeLessThan(WAIT_MS + NOISE_MS);
      const a = await alice.ask("what is at the harbour at dawn?", { namespace: "stopped" });
      expect(a.memories_used).toBeGreaterThan(0);
      const bulk = await alice.rememberBulk([{ text: "bulk one while the standby is down", namespace: "stopped-bulk" }, { text: "bulk two while the standby is down", namespace: "stopped-bulk" }]);
      for (const id of bulk.job_ids) expect((await alice.waitForJob(id)).status).toBe("done");
      expect((await alice.bulkStatus(bulk.job_ids)).results.map((r) => r.status)).toEqual(["done", "done"]);
      expect((await stats("stopped-bulk")).memory_count).toBe(2);
      const down = await scrape();
      expect(down.gauge("memrelay_db_replica_up")).toBe(0);
      expect(down.reads("primary") - before.reads("primary")).toBeGreaterThan(30);
    } finally {
      pg.startStandby();
    }
    await expect.poll(async () => (await scrape()).gauge("memrelay_db_replica_up"), { timeout: 15_000, interval: 200 }).toBe(1);
    const back = await scrape();
    await rememberThenReadEach("restarted", 3, "restarted");
    expect((await scrape()).reads("replica")).toBeGreaterThan(back.reads("replica"));
  }, 180_000);
});
