// Black-box (issue 12): POST /api/analyze and POST /api/ask over HTTP against started stacks — with the local
// extractor and answerer (no key), and with an OpenAI-compatible chat completions server started here (including a
// malformed and a slow answer: a clear error, nothing stored).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import http from "node:http";
import { startTestStack, type TestStack } from "./support/stack.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";

const analyze = (c: MemrelayClient, { text, ...opts }: { text: string; namespace?: string; occurred_at?: string }) => c.analyze(text, opts);
const ask = (c: MemrelayClient, { question, ...opts }: { question: string; namespace?: string; limit?: number }) => c.ask(question, opts);

async function status(c: MemrelayClient, body: Record<string, unknown>, path = "/api/analyze"): Promise<{ status: number; error: string }> {
  try {
    await c.call("POST", path, body);
    return { status: 200, error: "" };
  } catch (err) {
    const e = err as { status: number; body: { error: string } };
    return { status: e.status, error: e.body.error };
  }
}

describe("with the local extractor and answerer (no provider key)", () => {
  let t: TestStack;
  let alice: MemrelayClient;
  beforeAll(async () => {
    t = await startTestStack();
    alice = await t.client();
  }, 120_000);
  afterAll(async () => t?.teardown());

  it("extracts facts (dates anchored on occurred_at), remembers each as its own job, and skips what is already known", async () => {
    const text = "Hi! Yesterday I adopted a cat named Miso. My sister lives in Porto; I work as a baker.";
    const first = await analyze(alice, { text, namespace: "life", occurred_at: "2026-03-11T10:00:00Z" });
    expect(first).toMatchObject({ status: "pending", fact_count: 3, skipped: [] });
    expect(first.facts.map((f) => f.text)).toEqual(["On 2026-03-10 User adopted a cat named Miso.", "User's sister lives in Porto.", "User works as a baker."]);
    expect(first.job_ids).toEqual(first.facts.map((f) => f.job_id));
    for (const f of first.facts) expect(f.id).toBe(f.job_id);
    for (const id of first.job_ids) expect((await alice.waitForJob(id)).status).toBe("done");
    const r = await alice.recall("where does my sister live?", { namespace: "life", limit: 1 });
    expect(r.results[0].text).toBe("User's sister lives in Porto.");

    const again = await analyze(alice, { text, namespace: "life", occurred_at: "2026-03-11T10:00:00Z" });
    expect(again.fact_count).toBe(0);
    expect(again.skipped.map((s) => s.text).sort()).toEqual(first.facts.map((f) => f.text).sort());
    // Another namespace does not know them yet.
    expect((await analyze(alice, { text: "I work as a baker.", namespace: "elsewhere" })).fact_count).toBe(1);
  }, 60_000);

  it("answers a question from the recalled memories", async () => {
    const a = await ask(alice, { question: "What is my cat called?", namespace: "life", limit: 2 });
    expect(a.memories_used).toBe(2);
    expect(a.memories[0].text).toContain("Miso");
    expect(a.answer).toContain("Miso");
    const none = await ask(alice, { question: "anything?", namespace: "empty-ns" });
    expect(none).toMatchObject({ memories_used: 0, memories: [] });
    expect(none.answer).toMatch(/don't have any memories/);
  });

  it("refuses bad input with 400 naming the field", async () => {
    expect(await status(alice, { namespace: "x" })).toMatchObject({ status: 400, error: "text must be a string" });
    expect(await status(alice, { text: "   " })).toMatchObject({ status: 400, error: "text must not be empty" });
    expect(await status(alice, { text: "I like tea", occurred_at: "yesterday" })).toMatchObject({ status: 400, error: expect.stringMatching(/occurred_at must be an RFC 3339/) });
    expect(await status(alice, { text: "I like tea", namespace: "a\u0000" })).toMatchObject({ status: 400, error: "namespace contains U+0000" });
    expect(await status(alice, { question: "" }, "/api/ask")).toMatchObject({ status: 400 });
    expect(await status(alice, { question: "q", limit: 0 }, "/api/ask")).toMatchObject({ status: 400, error: "limit must be a positive integer" });
  });

  it("/health names the prompt versions", async () => {
    const h = (await (await fetch(t.stack.relayerUrl + "/health")).json()) as { prompt_versions: Record<string, string> };
    expect(h.prompt_versions).toEqual({ extract: "local-2", ask: "local-2" });
  });
});

describe("with an OpenAI-compatible chat completions endpoint", () => {
  let t: TestStack;
  let bob: MemrelayClient;
  let server: http.Server;
  const seen: { model: string; system: string; user: string }[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let raw = "";
      req.on("data", (d) => (raw += d));
      req.on("end", () => {
        if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
          res.writeHead(404).end();
          return;
        }
        const body = JSON.parse(raw) as { model: string; messages: { role: string; content: string }[] };
        const system = body.messages[0].content;
        const user = body.messages[1].content;
        seen.push({ model: body.model, system, user });
        const reply = (content: string) => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ id: "c1", object: "chat.completion", created: 0, model: body.model, choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content } }] }));
        };
        if (user.includes("SLOW")) return void setTimeout(() => reply('{"facts": ["User waited."]}'), 3_000);
        if (user.includes("MALFORMED")) return reply("Sure! The user likes tea and biscuits.");
        if (user.includes("GARBAGE")) return reply('{"facts": ["ok", 42]}');
        if (system.includes('"answer"')) return reply(JSON.stringify({ answer: "Your favourite tea is oolong." }));
        reply(JSON.stringify({ facts: ["User's favourite tea is oolong.", "User visited Kyoto on 2026-03-10."] }));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as { port: number }).port;
    t = await startTestStack({ MEMRELAY_LLM_API_BASE: `http://127.0.0.1:${port}/v1`, MEMRELAY_LLM_API_KEY: "test-key", MEMRELAY_LLM_MODEL: "tiny-chat", MEMRELAY_LLM_TIMEOUT_MS: "800" });
    bob = await t.client();
  }, 120_000);
  afterAll(async () => {
    await t?.teardown();
    server?.close();
  });

  it("stores the model's facts and answers with the model, sending the reference date", async () => {
    const r = await analyze(bob, { text: "I love oolong tea and I was in Kyoto yesterday.", namespace: "tea", occurred_at: "2026-03-11T09:00:00Z" });
    expect(r.facts.map((f) => f.text)).toEqual(["User's favourite tea is oolong.", "User visited Kyoto on 2026-03-10."]);
    expect(seen.at(-1)).toMatchObject({ model: "tiny-chat", user: expect.stringContaining("Reference date: 2026-03-11T09:00:00.000Z") });
    for (const id of r.job_ids) await bob.waitForJob(id);
    const a = await ask(bob, { question: "Which tea do I like?", namespace: "tea" });
    expect(a.answer).toBe("Your favourite tea is oolong.");
    expect(seen.at(-1)!.user).toContain("User's favourite tea is oolong.");
    const h = (await (await fetch(t.stack.relayerUrl + "/health")).json()) as { prompt_versions: Record<string, string> };
    expect(h.prompt_versions).toEqual({ extract: "openai-1", ask: "openai-1" });
  }, 60_000);

  it.each([
    ["malformed (prose instead of JSON)", "MALFORMED", 502, /the language model's answer was unusable \(the model's answer is not JSON\); nothing was stored/],
    ["garbage facts", "GARBAGE", 502, /unusable \(fact 1 is not a non-empty string\)/],
    ["slow (past MEMRELAY_LLM_TIMEOUT_MS)", "SLOW", 504, /the language model did not answer \(request timed out\); nothing was stored/],
  ])("a %s answer is a clear error and stores nothing", async (_, marker, code, message) => {
    const ns = `bad-${marker.toLowerCase()}`;
    const r = await status(bob, { text: `I like ${marker} things.`, namespace: ns });
    expect(r.status).toBe(code);
    expect(r.error).toMatch(message);
    await new Promise((res) => setTimeout(res, 300)); // a job, had one been published, would be indexed by now
    const stats = await bob.call<{ memory_count: number }>("POST", "/api/stats", { namespace: ns });
    expect(stats.memory_count).toBe(0);
  }, 30_000);
});
