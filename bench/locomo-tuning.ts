// How the hybrid ranking's defaults were chosen (projections/relayer/hybrid-rank.ts), offline on LoCoMo with exact search in
// memory — the plaintext here is the public data set's, never a user's. BM25 over the same tokens the keyed index
// hashes (a keyed hash is a renaming of the token, so BM25 over hashes equals BM25 over tokens), the context spread,
// fusion with the hashing embedder, a cross-validated parameter grid, and the other lever: reranking a wider dense
// candidate set after decryption.
//   node --import tsx bench/locomo-tuning.ts [--grid] [--use]
import { contentTokens, HashingEmbedder } from "../adapters/embeddings/hashing.ts";
import { DEFAULT_HYBRID, spreadScores } from "../projections/relayer/hybrid-rank.ts";
import { loadLocomo, type Conversation } from "./locomo-offline.ts";

const convs = loadLocomo();

interface Index { n: number; tfs: Map<string, number>[]; lens: number[]; avgdl: number; df: Map<string, number> }

function indexOf(docs: string[][]): Index {
  const df = new Map<string, number>();
  const tfs = docs.map((d) => {
    const m = new Map<string, number>();
    for (const t of d) m.set(t, (m.get(t) ?? 0) + 1);
    for (const t of m.keys()) df.set(t, (df.get(t) ?? 0) + 1);
    return m;
  });
  return { n: docs.length, tfs, lens: docs.map((d) => d.length), avgdl: docs.reduce((s, d) => s + d.length, 0) / docs.length, df };
}

function bm25(ix: Index, query: string[], k1: number, b: number): Float64Array {
  const out = new Float64Array(ix.n);
  for (const t of new Set(query)) {
    const df = ix.df.get(t) ?? 0;
    if (!df) continue;
    const idf = Math.log(1 + (ix.n - df + 0.5) / (df + 0.5));
    for (let i = 0; i < ix.n; i++) {
      const tf = ix.tfs[i].get(t);
      if (tf) out[i] += (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * ix.lens[i]) / ix.avgdl));
    }
  }
  return out;
}

function withContext(s: Float64Array, context: readonly number[]): Float64Array {
  const pos: number[] = [];
  const val: number[] = [];
  s.forEach((x, i) => x > 0 && (pos.push(i), val.push(x)));
  return spreadScores(Int32Array.from(pos), Float64Array.from(val), s.length, context);
}

type Scorer = (conv: Conversation, ci: number) => (question: string) => Float64Array;

/** Mean R@10 (and R@5, MRR) over the conversations `ids`; ranks by score, then position. */
function evaluate(score: Scorer, ids = convs.map((_, i) => i)) {
  let n = 0, r5 = 0, r10 = 0, mrr = 0;
  for (const ci of ids) {
    const c = convs[ci];
    const f = score(c, ci);
    for (const q of c.queries) {
      const s = f(q.question);
      const order = Array.from(s.keys()).sort((a, b) => s[b] - s[a] || a - b);
      const ev = new Set(q.evidence);
      let first = 0, in5 = 0, in10 = 0;
      order.forEach((d, r) => {
        if (!ev.has(c.turns[d].id)) return;
        if (!first) first = r + 1;
        if (r < 5) in5++;
        if (r < 10) in10++;
      });
      n++, (r5 += in5 / ev.size), (r10 += in10 / ev.size), (mrr += first ? 1 / first : 0);
    }
  }
  return { r5: r5 / n, r10: r10 / n, mrr: mrr / n };
}

const tokens = convs.map((c) => c.turns.map((t) => contentTokens(t.text)));
const indexes = tokens.map(indexOf);
const hybrid = (k1: number, b: number, context: readonly number[]): Scorer => (_, ci) => (q) => withContext(bm25(indexes[ci], contentTokens(q), k1, b), context);
const line = (label: string, r: { r5: number; r10: number; mrr: number }) => console.log(`${label.padEnd(58)} R@5 ${r.r5.toFixed(3)}  R@10 ${r.r10.toFixed(3)}  MRR ${r.mrr.toFixed(3)}`);

const { k1, b, context } = DEFAULT_HYBRID;
line("BM25 (k1 1.2, b 0.75), no context", evaluate(hybrid(1.2, 0.75, [])));
line(`BM25 (k1 ${k1}, b ${b}), no context`, evaluate(hybrid(k1, b, [])));
line(`BM25 + context ±1 (0.3)`, evaluate(hybrid(k1, b, [0.3])));
line(`BM25 + context ${context.join("/")} (default)`, evaluate(hybrid(k1, b, context)));

// Fusion with the hashing embedder (the local default): rel = (1 − w)·context-BM25/max + w·cosine.
const embedder = new HashingEmbedder({ dims: 1024 });
const vectors = convs.map((c) => c.turns.map((t) => embedder.embedOne(t.text)));
const cosines = (ci: number, q: string) => {
  const qv = embedder.embedOne(q);
  return vectors[ci].map((v) => v.reduce((s, x, j) => s + x * qv[j], 0));
};
for (const w of [0.05, 0.1, 0.3]) {
  line(`default + hashing cosine, w ${w}`, evaluate((_, ci) => (q) => {
    const s = withContext(bm25(indexes[ci], contentTokens(q), k1, b), context);
    const max = Math.max(...s) || 1;
    const c = cosines(ci, q);
    return s.map((x, i) => (1 - w) * (x / max) + w * c[i]);
  }));
}

// The other lever: the cosine top N decrypted and reranked by BM25 over those N texts (IDF from the N only: the
// relayer keeps no plaintext statistics), the rest after them in cosine order.
for (const N of [20, 50, 100]) {
  line(`cosine top ${N} reranked by BM25 after decryption`, evaluate((_, ci) => (q) => {
    const c = cosines(ci, q);
    const top = Array.from(c.keys()).sort((a, z) => c[z] - c[a]).slice(0, N);
    const s = bm25(indexOf(top.map((i) => tokens[ci][i])), contentTokens(q), k1, b);
    const out = Float64Array.from(c, (x) => x - 1e6);
    top.forEach((i, k) => (out[i] = s[k] + 1e-6 * c[i]));
    return out;
  }));
}

if (process.argv.includes("--use")) {
  // The former fixed-weight fusion with USE-lite (slow: embeds every turn and question); the rank fusion that replaced
  // it is tuned in bench/locomo-fusion.ts.
  const { UseLiteEmbedder } = await import("../adapters/embeddings/use-lite.ts");
  const use = new UseLiteEmbedder();
  const embedAll = async (texts: string[]) => {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += 64) out.push(...(await use.embed(texts.slice(i, i + 64))));
    return out;
  };
  const turnVectors = await Promise.all(convs.map((c) => embedAll(c.turns.map((t) => t.text))));
  const questionVectors = new Map<string, Float32Array>();
  for (const c of convs) (await embedAll(c.queries.map((q) => q.question))).forEach((v, i) => questionVectors.set(c.queries[i].question, v));
  for (const w of [0, 0.1, 0.3, 0.5, 1]) {
    line(`default + USE-lite cosine, w ${w}`, evaluate((_, ci) => (q) => {
      const s = withContext(bm25(indexes[ci], contentTokens(q), k1, b), context);
      const max = Math.max(...s) || 1;
      const qv = questionVectors.get(q)!;
      return s.map((x, i) => (1 - w) * (x / max) + w * turnVectors[ci][i].reduce((acc, y, j) => acc + y * qv[j], 0));
    }));
  }
}

if (process.argv.includes("--grid")) {
  // Grid over k1, b and the context weights; tuned on five conversations and scored on the other five.
  const A = [0, 1, 2, 3, 4], B = [5, 6, 7, 8, 9];
  const contexts = [[0.4, 0.2, 0.1], [0.5, 0.3, 0.15], [0.5, 0.3, 0.2, 0.1], [0.6, 0.4, 0.2], [0.5, 0.4, 0.3, 0.2, 0.1], [0.7, 0.5, 0.3]];
  const grid = [0.7, 0.9, 1.2].flatMap((gk1) => [0.2, 0.3, 0.4, 0.5, 0.75].flatMap((gb) => contexts.map((gc) => ({ k1: gk1, b: gb, context: gc }))));
  const res = grid.map((g) => ({ g, a: evaluate(hybrid(g.k1, g.b, g.context), A).r10, b: evaluate(hybrid(g.k1, g.b, g.context), B).r10 }));
  const best = (k: "a" | "b") => res.reduce((x, y) => (y[k] > x[k] ? y : x));
  const fmt = (r: (typeof res)[number]) => `k1 ${r.g.k1}, b ${r.g.b}, context ${r.g.context.join("/")}`;
  console.log(`best on conversations 0-4: ${fmt(best("a"))} → R@10 on 5-9: ${best("a").b.toFixed(3)}`);
  console.log(`best on conversations 5-9: ${fmt(best("b"))} → R@10 on 0-4: ${best("b").a.toFixed(3)}`);
  console.log(`cross-validated R@10 (mean of the two): ${((best("a").b + best("b").a) / 2).toFixed(3)}`);
}
