// Black-box: a text whose embedding cannot finish within its deadline fails with a clear error, is set aside like a
// poison message (no retry), and does not hold other jobs; /health stays ok meanwhile, and /ready is 200 once it is
// set aside (what /ready says while a long embedding progresses: test/readiness.test.ts).
// The deadline here is short (2 s + 1 ms per window, one model thread, up to 1000 windows per text), so a 256 KiB
// text (≈ 620 windows, ≈ 2.6 s) cannot make it while short texts (one window, ≈ 2 s) do.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import parse from "parse-prometheus-text-format";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { longText } from "./support/long-text.ts";

let t: TestStack;
const get = async (path: string) => {
  const res = await fetch(t.stack.relayerUrl + path);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const gauge = async (name: string) => {
  const family = parse(await (await fetch(t.stack.relayerUrl + "/metrics")).text()).find((f) => f.name === name);
  return family?.metrics.reduce((n, m) => n + Number(m.value ?? 0), 0);
};

beforeAll(async () => {
  t = await startTestStack({
    MEMRELAY_EMBEDDER: "use-lite",
    EMBEDDING_WORKERS: "1",
    EMBEDDING_MAX_WINDOWS: "1000",
    EMBEDDING_DEADLINE_BASE_SECS: "2",
    EMBEDDING_DEADLINE_MS_PER_WINDOW: "1",
    READY_MAX_WAIT_SECS: "1",
  });
  await t.stack.embedder.warmUp?.();
}, 180_000);
afterAll(async () => t?.teardown());

describe("an embedding past its deadline", () => {
  it("fails its job with `text too long to embed within N s`, sets it aside at once, and lets the next jobs through", { timeout: 120_000 }, async () => {
    const alice = await t.client();
    const bob = await t.client();
    await bob.rememberAndWait("warm-up", "daily");
    expect((await get("/ready")).status).toBe(200);
    const deadBefore = (await gauge("memrelay_dead_letters")) ?? 0;

    const t0 = performance.now();
    const long = await alice.remember(longText(256 * 1024, "", 3), "archive");
    // Liveness is watched from the start: a long embedding is no outage.
    let settled = false;
    const watching = (async () => {
      while (!settled) {
        expect((await get("/health")).status).toBe(200);
        await new Promise((res) => setTimeout(res, 100));
      }
    })();
    // While the long text is embedded, another owner's short remembers finish.
    const short = await bob.rememberAndWait("bought lemons at the market", "daily", 30_000);
    expect(short.status).toBe("done");
    const shortSecs = (performance.now() - t0) / 1000;
    const failed = await alice.waitForJob(long.job_id, 60_000);
    settled = true;
    await watching;
    const failedSecs = (performance.now() - t0) / 1000;

    expect(failed.status).toBe("failed");
    expect(failed.error).toMatch(/text too long to embed within 2\.\d s/);
    expect(failed.error).not.toContain("lemon"); // nothing of any text in the error
    expect(failedSecs).toBeLessThan(30);
    expect(shortSecs).toBeLessThan(failedSecs + 1);

    // Set aside once: a dead letter, and the command has left the work queue (no redelivery, no retry storm).
    await expect.poll(async () => (await gauge("memrelay_dead_letters")) ?? 0, { timeout: 10_000 }).toBe(deadBefore + 1);
    await expect.poll(async () => (await get("/ready")).status, { timeout: 10_000 }).toBe(200);
    expect(await gauge("memrelay_oldest_remember_job_wait_seconds")).toBe(0);
    expect(await gauge("memrelay_oldest_embedding_wait_seconds")).toBe(0);
    const after = await bob.rememberAndWait("the next note after the long one", "daily", 30_000);
    expect(after.status).toBe("done");
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await alice.job(long.job_id)).status).toBe("failed");
    expect((await gauge("memrelay_dead_letters")) ?? 0).toBe(deadBefore + 1);
  });
});
