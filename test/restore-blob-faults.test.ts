// Black-box: restore over HTTP against a started stack whose aggregator (test/support/fault-aggregator.ts) fails blob
// reads on purpose. A blob that cannot be read for a moment (a 5xx, a reset connection) is still there: the restore
// tries it again and restores it, never counting it failed. One that stays unreadable ends the restore with 503 and
// Retry-After, and the rows restored before it are kept (the next restore finds them indexed). A blob the store says
// is gone (404) is counted failed, as before. The ciphertext cache is off (BLOB_CACHE_TTL_SECS=0), so every restore
// reads its blobs through the aggregator.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { TestStack } from "./support/stack.ts";
import { startStackBehindFaultAggregator, type FaultAggregator } from "./support/fault-aggregator.ts";
import { RelayerError, type MemrelayClient } from "../client/memrelay-client.ts";
import { IndexLog } from "../projections/relayer/index-log.ts";

const NS = "restore-faults";

describe("restore when blob reads fail", () => {
  let t: TestStack;
  let aggregator: FaultAggregator;

  beforeAll(async () => {
    ({ t, aggregator } = await startStackBehindFaultAggregator());
  }, 180_000);
  afterAll(async () => {
    await t?.teardown();
    await aggregator?.close();
  });

  beforeEach(() => aggregator.reset());

  /** A new owner (its own restore rate window) with `count` memories in NS whose index rows are then lost. */
  async function ownerWithLostRows(count: number): Promise<MemrelayClient> {
    const who = await t.stack.createIdentity();
    const client = await t.client(who);
    const items = Array.from({ length: count }, (_, i) => ({ text: `note ${i}: the ferry leaves at ${i} past the hour`, namespace: NS }));
    for (let start = 0; start < count; start += 20) {
      const { job_ids } = await client.rememberBulk(items.slice(start, start + 20)); // a bulk request holds at most 20
      for (const id of job_ids) expect((await client.waitForJob(id)).status).toBe("done");
    }
    const index = new IndexLog(t.stack.log, t.stack.db);
    expect(await index.waitApplied(await index.lastIndexSeq(), 10_000)).toBe(true);
    await t.stack.db.query("DELETE FROM memories WHERE owner = $1 AND namespace = $2", [who.owner, NS]);
    return client;
  }
  const refusal = (p: Promise<unknown>) => p.then(() => undefined, (err: unknown) => err as RelayerError);

  it("restores every memory when the first reads of each blob fail for a moment (a 503, then a reset connection)", async () => {
    const client = await ownerWithLostRows(3);
    aggregator.fault = (n) => (n <= 3 ? { status: 503 } : n <= 6 ? "reset" : "pass");
    expect(await client.restore(NS)).toMatchObject({ restored: 3, skipped: 0, failed: 0, total: 3, truncated: false });
    expect(aggregator.reads).toBe(9);
    aggregator.reset();
    expect((await client.recall("when does the ferry leave?", { namespace: NS, limit: 5 })).total).toBe(3);
  });

  it("counts a blob the store says is gone (404) as failed, as before, and reads it once", async () => {
    const client = await ownerWithLostRows(3);
    aggregator.fault = (n) => (n === 1 ? { status: 404 } : "pass");
    expect(await client.restore(NS)).toMatchObject({ restored: 2, skipped: 0, failed: 1, total: 3 });
    expect(aggregator.reads).toBe(3);
  });

  it("answers 503 with Retry-After while the blob store keeps failing, and keeps what it restored before", async () => {
    // 33 missing blobs: the restore reads them 32 at a time, and the store fails from the 33rd read on.
    const client = await ownerWithLostRows(33);
    aggregator.fault = (n) => (n <= 32 ? "pass" : { status: 502 });
    const err = await refusal(client.restore(NS, 100));
    expect(err).toBeInstanceOf(RelayerError);
    expect(err!.status).toBe(503);
    expect(Number(err!.headers["retry-after"])).toBeGreaterThan(0);
    expect(JSON.stringify(err!.body)).not.toContain("ferry");
    // bounded: a few reads of the unreadable blob, not a loop
    expect(aggregator.reads).toBeGreaterThan(33);
    expect(aggregator.reads).toBeLessThanOrEqual(32 + 4);
    aggregator.reset();
    // The store is back: the next restore finds the first 32 indexed and restores the last one.
    expect(await client.restore(NS, 100)).toMatchObject({ restored: 1, skipped: 32, failed: 0, total: 33, truncated: false });
    expect(aggregator.reads).toBe(1);
  }, 120_000);
});
