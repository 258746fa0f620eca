// Black-box: with the default configuration (no key: the shipped USE-lite embedder and the hybrid ranking), a query
// that shares no content word with a memory recalls it first — over HTTP against the started stack.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../config/env.ts";
import { startTestStack, type TestStack } from "./support/stack.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";
import { PARAPHRASE_SET } from "../bench/paraphrase-set.ts";

const CASES = PARAPHRASE_SET.slice(0, 8);
let t: TestStack;
let alice: MemrelayClient;

beforeAll(async () => {
  // The stack's embedder as an operator gets it without setting anything.
  t = await startTestStack({ MEMRELAY_EMBEDDER: loadConfig({}).embedder });
  alice = await t.client();
  const accepted = await alice.rememberBulk(CASES.map((c) => ({ text: c.fact, namespace: "facts" })));
  await Promise.all(accepted.job_ids.map((id) => alice.waitForJob(id, 120_000)));
  while (t.stack.relayer.projections.some((p) => p.pending > 0)) await new Promise((r) => setTimeout(r, 50));
}, 180_000);
afterAll(async () => t?.teardown());

describe("paraphrase recall with the default configuration", () => {
  it("embeds with USE-lite when no key is set", () => {
    expect(loadConfig({}).embedder).toBe("use-lite");
    expect(loadConfig({ EMBEDDING_API_KEY: "sk-x" }).embedder).toBe("openai");
    expect(loadConfig({ MEMRELAY_EMBEDDER: "hashing" }).embedder).toBe("hashing");
    expect(t.stack.embedder.name).toBe("use-lite-512");
  });

  it.each(CASES.map((c) => [c.query, c.fact]))("%s → %s first", async (query, fact) => {
    const r = await alice.recall(query, { namespace: "facts", limit: 3 });
    expect(r.results[0].text).toBe(fact);
  });
});
