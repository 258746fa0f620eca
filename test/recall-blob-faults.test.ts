// Black-box (issue 32 §3, "done means recallable"): recall and ask over HTTP against a started stack whose aggregator
// (test/support/fault-aggregator.ts) fails blob reads on purpose. A read that fails for a moment (a 5xx, a reset
// connection) is tried again within the request and the memory is recalled; one that keeps failing answers 503 with
// Retry-After, never a 200 short of the memory; a blob the store says is gone (404) is dropped and counted as before.
// The ciphertext cache is off (BLOB_CACHE_TTL_SECS=0), so every recall reads its blobs through the aggregator.
// And with the blob store itself answering: while its blobs read model is behind the event log (rebuilt, or its
// projection stalled as after a NATS node kill), the memory is refused with 503, not dropped as gone.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { TestStack } from "./support/stack.ts";
import { startStackBehindFaultAggregator, type FaultAggregator } from "./support/fault-aggregator.ts";
import { holdBlobsReadModelBehind } from "./support/blobstore-read-models.ts";
import { RelayerError, type MemrelayClient } from "../client/memrelay-client.ts";

const TEXT = "the spare key to the boat shed hangs behind the third fence post";
const NS = "blob-faults";

describe("recall when blob reads fail", () => {
  let t: TestStack;
  let aggregator: FaultAggregator;
  let client: MemrelayClient;

  beforeAll(async () => {
    ({ t, aggregator } = await startStackBehindFaultAggregator());
    client = await t.client();
    expect((await client.rememberAndWait(TEXT, NS)).status).toBe("done");
  }, 180_000);
  afterAll(async () => {
    await t?.teardown();
    await aggregator?.close();
  });

  beforeEach(() => aggregator.reset());

  const recallIt = () => client.recall(TEXT, { namespace: NS, limit: 1 });
  const refusal = (p: Promise<unknown>) => p.then(() => undefined, (err: unknown) => err as RelayerError);

  it("recalls the memory when its first reads fail for a moment (a 503, then a reset connection)", async () => {
    aggregator.fault = (n) => (n === 1 ? { status: 503 } : n === 2 ? "reset" : "pass");
    try {
      const r = await recallIt();
      expect(r.results.map((m) => m.text)).toEqual([TEXT]);
      expect(r.dropped_count).toBeUndefined();
      expect(aggregator.reads).toBe(3);
    } finally {
      aggregator.reset();
    }
  });

  it("answers 503 with Retry-After, naming no plaintext, while the blob store keeps failing; never a 200 without the memory", async () => {
    aggregator.fault = () => ({ status: 502 });
    try {
      const refused = await Promise.all([refusal(recallIt()), refusal(client.ask(TEXT, { namespace: NS, limit: 1 }))]);
      for (const err of refused) {
        expect(err).toBeInstanceOf(RelayerError);
        expect(err!.status).toBe(503);
        expect(Number(err!.headers["retry-after"])).toBeGreaterThan(0);
        expect(JSON.stringify(err!.body)).toMatch(/the blob store is unavailable/);
        expect(JSON.stringify(err!.body)).not.toContain("boat");
      }
      // bounded: a few reads per request, not a loop
      expect(aggregator.reads).toBeGreaterThan(2);
      expect(aggregator.reads).toBeLessThanOrEqual(8);
    } finally {
      aggregator.reset();
    }
    expect((await recallIt()).results.map((m) => m.text)).toEqual([TEXT]);
  });

  it("drops a memory whose blob the store says is gone (404) and counts it, as before", async () => {
    aggregator.fault = () => ({ status: 404 });
    try {
      const r = await recallIt();
      expect(r).toEqual({ results: [], total: 0, dropped_count: 1 });
      expect(aggregator.reads).toBe(1);
    } finally {
      aggregator.reset();
    }
  });

  /**
   * Puts the blob store's blobs read model behind the log and holds it there until `release`: emptied and rewound
   * as a replay leaves it, its projection then blocked on the locked checkpoint row, as a stall leaves it.
   */
  async function blobsReadModelHeldBehind(): Promise<{ release(): Promise<void> }> {
    const held = await holdBlobsReadModelBehind(t.database.url);
    // the blob store's runner has noticed the rewind (its readiness shows where it stands)
    for (let i = 0; i < 100; i++) {
      const ready = await fetch(`${t.stack.blobstoreUrl}/ready`).then((r) => r.json() as Promise<any>);
      if (ready.projections?.blobstore_blobs?.checkpoint === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    return held;
  }

  it("answers 503, never drops the memory, while the blob store's read model is behind; recalls it once caught up", async () => {
    const held = await blobsReadModelHeldBehind();
    try {
      const err = await refusal(recallIt());
      expect(err).toBeInstanceOf(RelayerError);
      expect(err!.status).toBe(503);
      expect(Number(err!.headers["retry-after"])).toBeGreaterThan(0);
    } finally {
      await held.release();
    }
    let r = await recallIt().catch(() => undefined);
    for (let i = 0; i < 50 && r?.results.length !== 1; i++) {
      await new Promise((res) => setTimeout(res, 200));
      r = await recallIt().catch(() => undefined);
    }
    expect(r?.results.map((m) => m.text)).toEqual([TEXT]);
  });
});
