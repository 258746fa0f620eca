// Black-box, with the default configuration (USE-lite, default workers and windows): a long memory is found by a
// sentence in its middle, and one long remember in flight does not hold other owners' remembers and recalls behind
// it (issue 28, section 1). Before windows and the linear tokenizer, a 64 KiB text took 30 s and more of the single
// model thread and every other embedding waited behind it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../config/env.ts";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { PARAPHRASE_SET } from "../bench/paraphrase-set.ts";
import { longText } from "./support/long-text.ts";

const NEEDLE = "The harbour ferry to Lindholm island leaves at seven forty from pier nine on Tuesdays.";
let t: TestStack;

beforeAll(async () => {
  t = await startTestStack({ MEMRELAY_EMBEDDER: loadConfig({}).embedder });
}, 180_000);
afterAll(async () => t?.teardown());

describe("a long memory with the default embedder", () => {
  it("is found by a sentence in the middle of 100 KiB among four dozen other memories", { timeout: 180_000 }, async () => {
    expect(t.stack.embedder.name).toBe("use-lite-512");
    const alice = await t.client();
    const others: string[] = [];
    for (let i = 0; i < PARAPHRASE_SET.length; i += 20) others.push(...(await alice.rememberBulk(PARAPHRASE_SET.slice(i, i + 20).map((c) => ({ text: c.fact, namespace: "life" })))).job_ids);
    const text = longText(100 * 1024, NEEDLE);
    expect(text.length).toBeGreaterThanOrEqual(100 * 1024);
    expect(text.indexOf(NEEDLE)).toBeGreaterThan(40 * 1024);
    expect(text.indexOf(NEEDLE)).toBeLessThan(60 * 1024);
    const long = await alice.rememberAndWait(text, "life", 120_000);
    expect(long.status).toBe("done");
    for (const id of others) expect((await alice.waitForJob(id, 120_000)).status).toBe("done");
    while (t.stack.relayer.projections.some((p) => p.pending > 0)) await new Promise((r) => setTimeout(r, 50));

    const r = await alice.recall("What time does the ferry to Lindholm island depart?", { namespace: "life", limit: 5 });
    const hit = r.results.findIndex((m) => m.text === text);
    expect(hit, `top 5: ${r.results.map((m) => m.text.slice(0, 40)).join(" | ")}`).toBeGreaterThanOrEqual(0);
  });

  it("keeps other owners' remembers and recalls moving while a 128 KiB remember is embedded", { timeout: 180_000 }, async () => {
    const bob = await t.client();
    const owners = await Promise.all(Array.from({ length: 4 }, () => t.client()));
    // Warm each owner's path once (sessions, decryption keys, namespaces), so the timings below are about embedding.
    await Promise.all(owners.map(async (c, i) => {
      await c.rememberAndWait(`warm-up note ${i}`, "daily");
      await c.recall("warm-up", { namespace: "daily", limit: 1 });
    }));

    const t0 = performance.now();
    const long = bob.rememberAndWait(longText(128 * 1024, "", 7), "archive", 170_000).then((j) => ({ j, secs: (performance.now() - t0) / 1000 }));
    await new Promise((r) => setTimeout(r, 300)); // the long text's windows are queued
    const timings: number[] = [];
    await Promise.all(owners.map(async (c, i) => {
      for (let k = 0; k < 3; k++) {
        const s = performance.now();
        const j = await c.rememberAndWait(`owner ${i} note ${k}: bought ${k + 2} lemons at the market`, "daily", 60_000);
        expect(j.status).toBe("done");
        const found = await c.recall("lemons from the market", { namespace: "daily", limit: 3 });
        expect(found.results.length).toBeGreaterThan(0);
        timings.push((performance.now() - s) / 1000);
      }
    }));
    const { j, secs } = await long;
    expect(j.status).toBe("done");
    const slowest = Math.max(...timings);
    // Each short remember + recall is served between the long text's windows: far sooner than the long text.
    expect(slowest, `short remember+recall took ${timings.map((x) => x.toFixed(2)).join(", ")} s while the 128 KiB remember took ${secs.toFixed(2)} s`).toBeLessThan(Math.max(2, secs / 2));
  });
});
