// The keyed lexical index and hybrid recall (DESIGN.md section 6), black-box over the started stack plus direct reads
// of the event log and the read models: no plaintext token in events or tables, ranking exact per namespace (against
// a plaintext reference computed here), owners isolated, forget and replay keep the index right.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { startTestStack, type TestStack } from "./support/stack.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";
import { STREAMS } from "../eventlog/subjects.ts";
import { LexicalKeyring, parseLexicalSecret } from "../adapters/lexical/keys.ts";
import { MAX_TERMS, documentTerms, queryTerms } from "../adapters/lexical/terms.ts";
import { contentTokens } from "../adapters/embeddings/hashing.ts";
import { DEFAULT_HYBRID, fusedLexical, rankHybrid, spreadContext, spreadCoverage, spreadScores, topPositions } from "../projections/relayer/hybrid-rank.ts";
import { LEXICAL_INDEX, lexicalIndexProjection } from "../projections/relayer/lexical-index.ts";
import { readCheckpoint, resetProjection } from "../projections/runtime.ts";
import { inTransaction } from "../db/pool.ts";
import { runProjectionsCommand } from "./support/projections-cli.ts";
import { HashingEmbedder } from "../adapters/embeddings/hashing.ts";
import { DEFAULT_WEIGHTS } from "../schemas/relayer/http.ts";
import type { StoredEvent } from "../schemas/envelope.ts";
import type { IndexLogEvent } from "../schemas/relayer/memory-maintenance.ts";
import { encodeVectorF32 } from "../schemas/vector-wire.ts";
import { randomUUID } from "node:crypto";

// A word that appears nowhere else: its plaintext (and its stem) must not be found in events or tables.
const RARE = "Quorbalith";
const RARE_STEM = contentTokens(RARE)[0];

let t: TestStack;
let alice: MemrelayClient;
let bob: MemrelayClient;
let aliceOwner: string;
let bobOwner: string;

beforeAll(async () => {
  t = await startTestStack();
  const [a, b] = await Promise.all([t.stack.createIdentity(), t.stack.createIdentity()]);
  [alice, bob] = await Promise.all([t.client(a), t.client(b)]);
  aliceOwner = a.owner;
  bobOwner = b.owner;
}, 120_000);
afterAll(async () => t?.teardown());

async function rememberAll(client: MemrelayClient, texts: string[], namespace: string): Promise<string[]> {
  const blobs: string[] = [];
  for (let i = 0; i < texts.length; i += 20) {
    const r = await client.rememberBulk(texts.slice(i, i + 20).map((text) => ({ text, namespace })));
    for (const id of r.job_ids) {
      const j = await client.waitForJob(id);
      expect(j.status).toBe("done");
      blobs.push(j.blob_id!);
    }
  }
  await caughtUp();
  return blobs;
}

/** Waits until every projection has applied everything appended so far. */
async function caughtUp(): Promise<void> {
  const last = (await t.stack.log.jsm.streams.info(STREAMS.events)).state.last_seq;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (t.stack.relayer.projections.every((p) => p.checkpoint >= last || p.pending === 0)) {
      if ((await readCheckpoint(t.stack.db, LEXICAL_INDEX)) >= last) return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("projections did not catch up");
}

/** Every message of the EVT stream, raw. */
async function eventBytes(): Promise<Buffer> {
  const info = await t.stack.log.jsm.streams.info(STREAMS.events);
  const parts: Buffer[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await t.stack.log.jsm.streams.getMessage(STREAMS.events, { seq }).catch(() => null);
    if (m) parts.push(Buffer.from(m.data), Buffer.from(m.subject));
  }
  return Buffer.concat(parts);
}

/** The EVT stream's files on disk (the JetStream store of the test's nats-server). */
function streamFiles(dir: string): Buffer {
  const out: Buffer[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(readFileSync(p));
    }
  };
  walk(dir);
  return Buffer.concat(out);
}

function findDir(root: string, name: string): string | undefined {
  for (const e of readdirSync(root)) {
    const p = join(root, e);
    if (!statSync(p).isDirectory()) continue;
    if (e === name) return p;
    const f = findDir(p, name);
    if (f) return f;
  }
  return undefined;
}

/** Every row of every table of the database, as text. */
async function tableText(): Promise<string> {
  const tables = await t.stack.db.query<{ t: string }>("SELECT quote_ident(table_name) AS t FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'");
  let out = "";
  for (const { t: name } of tables.rows) {
    const r = await t.stack.db.query<{ x: string }>(`SELECT x::text AS x FROM ${name} x`);
    out += r.rows.map((x) => x.x).join("\n");
  }
  return out;
}

const containsWord = (hay: Buffer | string, word: string) => {
  const s = (typeof hay === "string" ? hay : hay.toString("latin1")).toLowerCase();
  return s.includes(word.toLowerCase());
};

describe("keyed term hashes", () => {
  it("are keyed per owner, stable for one owner, and carry no token", () => {
    const ring = new LexicalKeyring(parseLexicalSecret("11".repeat(32)));
    const a = documentTerms(ring.forOwner("0xaa"), `${RARE} sailing, sailing and ${RARE}`);
    const again = documentTerms(ring.forOwner("0xAA"), `${RARE} sailing, sailing and ${RARE}`);
    const b = documentTerms(ring.forOwner("0xbb"), `${RARE} sailing, sailing and ${RARE}`);
    expect(again).toEqual(a);
    expect(a.len).toBe(4); // "and" is a stopword
    expect([...a.tf]).toEqual([2, 2]);
    expect(a.terms.filter((h) => b.terms.includes(h))).toEqual([]);
    expect(queryTerms(ring.forOwner("0xaa"), "sail").every((h) => a.terms.includes(h))).toBe(true);
    expect(JSON.stringify(a)).not.toMatch(/quorbal|sail/i);
    expect(() => parseLexicalSecret("abcd")).toThrow(/at least 32 bytes/);
    // A huge memory keeps its most frequent terms only, so its event stays small.
    const huge = documentTerms(ring.forOwner("0xaa"), Array.from({ length: 6_000 }, (_, i) => `w${i}`).join(" ") + " often often often");
    expect(huge.terms.length).toBe(MAX_TERMS);
    expect(huge.len).toBe(6_003);
    expect(huge.terms).toContain(ring.forOwner("0xaa").hash("often"));
  });

  it("context spread adds each neighbour's best score at distance k with weight context[k-1]", () => {
    const s = new Map([[5, 2], [6, 1], [20, 4]]);
    const out = spreadContext(s, [0.5, 0.25]);
    expect(out.get(5)).toBeCloseTo(2 + 0.5 * 1);
    expect(out.get(6)).toBeCloseTo(1 + 0.5 * 2);
    expect(out.get(4)).toBeCloseTo(0.5 * 2 + 0.25 * 1);
    expect(out.get(7)).toBeCloseTo(0.5 * 1 + 0.25 * 2);
    expect(out.get(18)).toBeCloseTo(0.25 * 4);
    expect(out.has(0)).toBe(false);
  });

  it("context spread equals the definition on random matches", () => {
    const n = 400;
    const pos = Int32Array.from(new Set(Array.from({ length: 120 }, () => Math.floor(Math.random() * n))));
    const scores = Float64Array.from(pos, () => Math.random() * 5 + 0.01);
    const s = new Float64Array(n);
    pos.forEach((p, i) => (s[p] = scores[i]));
    const context = [0.5, 0.3, 0.15];
    const out = spreadScores(pos, scores, n, context);
    for (let d = 0; d < n; d++) {
      let want = s[d];
      context.forEach((w, ki) => (want += w * Math.max(s[d - ki - 1] ?? 0, s[d + ki + 1] ?? 0)));
      expect(out[d]).toBeCloseTo(want, 12);
    }
  });

  it("top positions: the best ones plus every tie with the last, a prefix of the complete order", () => {
    const rel = Float64Array.from([0, 0.5, 1, 0.5, 0, 0.25, 0.5, 1, 0.1]);
    const all = topPositions(rel, Infinity);
    expect(all).toEqual([2, 7, 1, 3, 6, 5, 8]);
    expect(topPositions(rel, 1)).toEqual([2, 7]);
    expect(topPositions(rel, 3)).toEqual([2, 7, 1, 3, 6]);
    expect(topPositions(rel, 100)).toEqual(all);
    for (let want = 1; want <= 8; want++) {
      const top = topPositions(rel, want);
      expect(top).toEqual(all.slice(0, top.length));
      expect(top.length).toBeGreaterThanOrEqual(Math.min(want, all.length));
    }
    // Random values: the same prefix property.
    const r = Float64Array.from({ length: 5_000 }, (_, i) => (i % 3 ? Math.round(Math.random() * 50) / 50 : 0));
    const full = topPositions(r, Infinity);
    const part = topPositions(r, 18);
    expect(part).toEqual(full.slice(0, part.length));
    expect(r[part[part.length - 1]]).toBeGreaterThan(r[full[part.length]] ?? -1);
  });
});

describe("score fusion", () => {
  it("coverage: each position takes the larger of its own and its context neighbours' share of the query terms", () => {
    // matches at positions 2 (half the terms) and 6 (all); context reaches 2 places
    const c = spreadCoverage(Int32Array.from([2, 6]), Float64Array.from([0.5, 1]), 10, [0.5, 0.3]);
    expect(Array.from(c)).toEqual([0.5, 0.5, 0.5, 0.5, 1, 1, 1, 1, 1, 0]);
    // a context weight of 0 does not carry coverage
    expect(Array.from(spreadCoverage(Int32Array.from([1]), Float64Array.from([1]), 4, [0, 0.3]))).toEqual([0, 1, 0, 1]);
  });

  it("the lexical part is weighed by coverage: a one-word match of a five-word question counts a fifth of a full one", () => {
    const w = 0.25;
    const lex = fusedLexical(Float64Array.from([1, 0, 0.8]), Float64Array.from([0.2, 0, 1]), w);
    expect(lex[0]).toBeCloseTo(0.75 * 0.2, 12);
    expect(lex[1]).toBe(0);
    expect(lex[2]).toBeCloseTo(0.75 * 0.8, 12);
  });
});

describe("hybrid recall over the relayer", () => {
  // A small conversation: the answer ("the blue one, by far") shares no word with the question; its neighbours do.
  const convo = [
    "Alice: I went hiking on the ridge trail last weekend",
    "Bob: Which backpack did you take on the ridge trail?",
    "Alice: The blue one, by far the lightest I own",
    "Bob: Nice. My sister adopted a puppy named Biscuit",
    "Alice: Biscuit is a great name for a puppy",
    "Bob: We should go sailing on the lake in June",
    "Alice: Sailing sounds fun, I have never been on a sailboat",
    `Bob: My cousin collects ${RARE} stones from the beach`,
    "Alice: I bake sourdough bread every Sunday morning",
    "Bob: Sourdough needs a starter, right?",
    "Alice: Yes, mine is three years old",
    "Bob: I started learning the violin in March",
    "Alice: The violin is hard, keep practising every day",
    "Bob: My favourite painter is Monet, the water lilies",
    "Alice: I saw the water lilies in Paris once",
  ];
  let blobs: string[];

  beforeAll(async () => {
    blobs = await rememberAll(alice, convo, "chat");
    // The same words in another namespace of alice and in bob's: neither may change alice's "chat" ranking.
    await rememberAll(alice, ["ridge trail backpack sailing sailing sailing violin", "Biscuit sourdough Monet"], "elsewhere");
    await rememberAll(bob, convo.slice(0, 6), "chat");
  }, 120_000);

  /** The ranking computed here from plaintext: BM25 over the same tokens, context spread, normalised by its maximum. */
  function reference(query: string): { order: number[]; rel: Map<number, number> } {
    const docs = convo.map((x) => contentTokens(x));
    const n = docs.length;
    const avgdl = docs.reduce((s, d) => s + d.length, 0) / n;
    const q = [...new Set(contentTokens(query))];
    const scores = new Map<number, number>();
    for (const term of q) {
      const df = docs.filter((d) => d.includes(term)).length;
      if (!df) continue;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      docs.forEach((d, i) => {
        const tf = d.filter((x) => x === term).length;
        if (!tf) return;
        const { k1, b } = DEFAULT_HYBRID;
        scores.set(i, (scores.get(i) ?? 0) + (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * d.length) / avgdl)));
      });
    }
    const rel = spreadContext(scores, DEFAULT_HYBRID.context);
    const max = Math.max(...rel.values());
    for (const [k, v] of [...rel.entries()]) {
      if (k >= n) rel.delete(k);
      else rel.set(k, v / max);
    }
    return { order: [...rel.entries()].sort((a, b) => b[1] - a[1]).map((e) => e[0]), rel };
  }

  it("ranks exactly as the plaintext reference, lexical matches and their context first, then by distance", async () => {
    for (const query of ["which backpack did Alice take hiking?", "sailing on the lake", "how old is the sourdough starter?", "Monet water lilies", "violin practice"]) {
      const r = await alice.recall(query, { namespace: "chat", limit: convo.length });
      expect(r.total).toBe(convo.length);
      const got = r.results.map((x) => blobs.indexOf(x.blob_id));
      const ref = reference(query);
      const scored = ref.order.length;
      expect(scored).toBeGreaterThan(1);
      // Lexical part: same relevance, position by position (ties may swap only among equal relevance).
      const relGot = got.slice(0, scored).map((i) => ref.rel.get(i) ?? 0);
      expect(relGot.map((x) => x.toFixed(9))).toEqual(ref.order.map((i) => ref.rel.get(i)!.toFixed(9)));
      // The rest: no lexical relevance, in cosine order.
      const rest = r.results.slice(scored).map((x) => x.distance);
      expect([...rest].sort((a, b) => a - b)).toEqual(rest);
    }
  });

  it("composite scoring uses the hybrid relevance in place of cosine similarity", async () => {
    const query = "sailing on the lake";
    const ref = reference(query);
    const r = await alice.recall(query, { namespace: "chat", limit: ref.order.length, scoring_weights: { semantic: 1, importance: 1 } });
    // importance is 0.5 for every memory: score = rel + 0.5, in the reference's order.
    expect(r.results.map((x) => (x.score! - 0.5).toFixed(9))).toEqual(ref.order.map((i) => ref.rel.get(i)!.toFixed(9)));
  });

  it("with a dense weight, fuses normalised lexical relevance (weighed by query coverage) and cosine exactly over the namespace", async () => {
    const ring = new LexicalKeyring(parseLexicalSecret(t.stack.workerEnv.MEMRELAY_LEXICAL_KEY));
    const query = "how old is the sourdough starter?";
    const vector = new HashingEmbedder({ dims: t.stack.embedder.dims }).embedOne(query);
    const w = 0.3;
    const got = await rankHybrid(t.stack.db, { owner: aliceOwner, namespace: "chat", terms: queryTerms(ring.forOwner(aliceOwner), query), vector, limit: convo.length, weights: DEFAULT_WEIGHTS, composite: false }, { ...DEFAULT_HYBRID, denseWeight: w });
    const ref = reference(query);
    expect(got.length).toBe(convo.length);
    // The plaintext reference: coverage of the query's distinct tokens per memory, carried to context neighbours.
    const q = [...new Set(contentTokens(query))];
    const own = convo.map((x) => { const d = new Set(contentTokens(x)); return q.filter((t) => d.has(t)).length / q.length; });
    const matchedPos = own.map((c, i) => (c > 0 ? i : -1)).filter((i) => i >= 0);
    const cov = spreadCoverage(Int32Array.from(matchedPos), Float64Array.from(matchedPos.map((i) => own[i])), convo.length, DEFAULT_HYBRID.context);
    const dmin = Math.min(...got.map((h) => h.distance));
    const dmax = Math.max(...got.map((h) => h.distance));
    const fused = got.map((h) => {
      const i = blobs.indexOf(h.blob_id);
      return (1 - w) * cov[i] * (ref.rel.get(i) ?? 0) + (w * (dmax - h.distance)) / (dmax - dmin);
    });
    for (let i = 1; i < fused.length; i++) expect(fused[i - 1]).toBeGreaterThanOrEqual(fused[i] - 1e-3);
  });

  it("brings back the answer through its neighbours (the context spread)", async () => {
    const r = await alice.recall("which backpack did Alice take hiking?", { namespace: "chat", limit: 3 });
    expect(r.results.map((x) => x.text)).toContain(convo[2]);
  });

  it("stays inside the owner and the namespace", async () => {
    const r = await bob.recall(`${RARE} stones`, { namespace: "chat", limit: 10 });
    expect(r.results.map((x) => x.text)).not.toContain(convo[7]);
    expect(r.total).toBe(6);
    const other = await alice.recall("sailing", { namespace: "nobody-here" });
    expect(other.total).toBe(0);
    // Each owner's hashes are its own: alice's and bob's postings of the same words do not meet.
    const terms = async (owner: string) =>
      new Set((await t.stack.db.query<{ term: string }>(
        "SELECT p.term::text AS term FROM lexical_postings p JOIN lexical_namespaces n USING (ns_id) WHERE n.owner = $1 AND n.namespace = 'chat'", [owner])).rows.map((x) => x.term));
    const [a, b] = await Promise.all([terms(aliceOwner), terms(bobOwner)]);
    expect(a.size).toBeGreaterThan(20);
    expect(b.size).toBeGreaterThan(10);
    expect([...a].filter((x) => b.has(x))).toEqual([]);
  });

  it("stores no plaintext token: neither in the EVT stream nor in any table", async () => {
    const events = await eventBytes();
    expect(events.length).toBeGreaterThan(1000);
    expect(containsWord(events, "lexical")).toBe(true); // the field is there ...
    expect(containsWord(events, RARE)).toBe(false); // ... the word is not
    expect(containsWord(events, RARE_STEM)).toBe(false);
    expect(containsWord(events, "sourdough")).toBe(false);
    const evtDir = findDir(t.nats.storeDir, STREAMS.events);
    expect(evtDir).toBeDefined();
    const disk = streamFiles(evtDir!);
    expect(disk.length).toBeGreaterThan(1000);
    expect(containsWord(disk, RARE)).toBe(false);
    expect(containsWord(disk, RARE_STEM)).toBe(false);
    const tables = await tableText();
    expect(tables).toMatch(/lexical|[0-9]{6,}/);
    expect(containsWord(tables, RARE)).toBe(false);
    expect(containsWord(tables, RARE_STEM)).toBe(false);
    expect(containsWord(tables, "sourdough")).toBe(false);
  });

  it("forget removes the namespace's lexical rows; replay rebuilds the same index", async () => {
    await rememberAll(alice, ["to be forgotten: sailing and sourdough", "also forgotten"], "gone");
    await alice.call("POST", "/api/forget", { namespace: "gone" });
    await caughtUp();
    const gone = await t.stack.db.query("SELECT count(*)::int AS n FROM lexical_docs d JOIN lexical_namespaces n USING (ns_id) WHERE n.owner = $1 AND n.namespace = 'gone'", [aliceOwner]);
    expect(gone.rows[0].n).toBe(0);
    const snapshot = async () => ({
      docs: (await t.stack.db.query("SELECT n.owner, n.namespace, d.memory_id, d.pos, d.len, d.position FROM lexical_docs d JOIN lexical_namespaces n USING (ns_id) ORDER BY d.memory_id")).rows,
      postings: (await t.stack.db.query("SELECT n.owner, n.namespace, d.memory_id, p.term::text, p.pos, p.tf FROM lexical_postings p JOIN lexical_docs d USING (doc) JOIN lexical_namespaces n ON n.ns_id = p.ns_id ORDER BY d.memory_id, p.term")).rows,
      stats: (await t.stack.db.query("SELECT owner, namespace, docs, total_len FROM lexical_namespaces WHERE docs > 0 ORDER BY owner, namespace")).rows,
    });
    const before = await snapshot();
    // Postings carry their document's place in submission order.
    const stray = await t.stack.db.query("SELECT count(*)::int AS n FROM lexical_postings p JOIN lexical_docs d USING (doc) WHERE p.pos <> d.pos OR p.ns_id <> d.ns_id");
    expect(stray.rows[0].n).toBe(0);
    const ranked = await alice.recall("sailing on the lake", { namespace: "chat", limit: 5 });
    const runner = t.stack.relayer.projections.find((p) => p.projection.name === LEXICAL_INDEX)!;
    const cp = await readCheckpoint(t.stack.db, LEXICAL_INDEX);
    await resetProjection(t.stack.db, runner.projection);
    expect((await snapshot()).docs.length).toBe(0);
    const deadline = Date.now() + 30_000;
    while ((await readCheckpoint(t.stack.db, LEXICAL_INDEX)) < cp && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await snapshot()).toEqual(before);
    expect((await alice.recall("sailing on the lake", { namespace: "chat", limit: 5 })).results.map((x) => x.blob_id)).toEqual(ranked.results.map((x) => x.blob_id));
  }, 60_000);
});

describe("memrelay replay lexical_index", () => {
  it("rebuilds the same rows, with the same indexes", async () => {
    const db = t.stack.db;
    const rows = async () => ({
      docs: (await db.query("SELECT n.owner, n.namespace, d.memory_id, d.pos, d.len, d.position FROM lexical_docs d JOIN lexical_namespaces n USING (ns_id) ORDER BY d.memory_id")).rows,
      postings: (await db.query("SELECT d.memory_id, p.term::text, p.pos, p.tf, p.len FROM lexical_postings p JOIN lexical_docs d USING (doc) ORDER BY d.memory_id, p.term")).rows,
    });
    const indexes = async () => (await db.query("SELECT indexname, indexdef FROM pg_indexes WHERE tablename LIKE 'lexical_%' ORDER BY indexname")).rows;
    const [before, defs] = [await rows(), await indexes()];
    expect(defs.map((r) => r.indexname)).toEqual(expect.arrayContaining(["lexical_postings_doc", "lexical_postings_term"]));
    const env = { NATS_URL: t.nats.url, DATABASE_URL: t.database.url };
    expect((await runProjectionsCommand("replay", [LEXICAL_INDEX], env)).rc).toBe(0);
    expect(await indexes()).toEqual(defs);
    // (the stack's own runner rebuilds beside the command; either way the rows end as before)
    expect(await rows()).toEqual(before);
  }, 60_000);
});

describe("lexical index projection", () => {
  it("places memories in submission order whatever order they are indexed in, and moves their postings along", async () => {
    const owner = "0x" + "cd".repeat(32);
    const ring = new LexicalKeyring(parseLexicalSecret("22".repeat(32)));
    const at = (k: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, k)).toISOString();
    const ids: string[] = Array.from({ length: 9 }, () => randomUUID());
    let seq = 1_000_000;
    const ev = (k: number, position = 0): StoredEvent<IndexLogEvent> => ({
      seq: ++seq,
      subject: `evt.job.${ids[k]}`,
      event: {
        type: "job.indexed", version: 2, id: randomUUID(), aggregate: `job.${ids[k]}`, occurred_at: at(k), causation_id: ids[k], correlation_id: ids[k],
        data: { object_id: "0x1", wallet: "0x2", owner, namespace: "order", blob_id: `b${k}`, vector_f32: encodeVectorF32([1]), importance: 0.5, size: 1, created_at: at(100 + k),
          lexical: documentTerms(ring.forOwner(owner), `memory number ${k} word${k}`), submitted_at: at(position ? 6 : k), position },
      },
    });
    // Submitted 0..8 (6 and 7 in one bulk, positions 0 and 1); indexed 3, 1, 5, then 0, 7, 2, then 6, 4 (7 before 6),
    // then 2 again, then 8 twice in one batch (after every other: written at its place at once, once).
    for (const batch of [[ev(3), ev(1), ev(5)], [ev(0), ev(7, 1), ev(2)], [ev(6, 0), ev(4)], [ev(2)], [ev(8), ev(8)]]) await inTransaction(t.stack.db, (tx) => lexicalIndexProjection.apply(tx, batch));
    const docs = await t.stack.db.query<{ memory_id: string; pos: number }>(
      "SELECT d.memory_id, d.pos FROM lexical_docs d JOIN lexical_namespaces n USING (ns_id) WHERE n.owner = $1 ORDER BY d.pos", [owner]);
    expect(docs.rows.map((x) => ids.indexOf(x.memory_id))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(docs.rows.map((x) => x.pos)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    const stray = await t.stack.db.query("SELECT count(*)::int AS n FROM lexical_postings p JOIN lexical_docs d USING (doc) WHERE p.pos <> d.pos");
    expect(stray.rows[0].n).toBe(0);
    const stats = await t.stack.db.query("SELECT docs, total_len::int AS len FROM lexical_namespaces WHERE owner = $1", [owner]);
    expect(stats.rows[0]).toEqual({ docs: 9, len: 9 * 4 }); // "memory", "number", "K", "wordK"
    const postings = await t.stack.db.query("SELECT count(*)::int AS n FROM lexical_postings p JOIN lexical_docs d USING (doc) WHERE d.ns_id = (SELECT ns_id FROM lexical_namespaces WHERE owner = $1)", [owner]);
    expect(postings.rows[0].n).toBe(9 * 4);
  });
});
