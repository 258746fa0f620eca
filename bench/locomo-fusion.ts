// How the hybrid fusion for a semantic embedder was chosen (projections/relayer/hybrid-rank.ts fusedLexical), offline
// on LoCoMo with USE-lite vectors (bench/locomo-use-cache.ts) and exact scoring of every turn: the former fixed-weight
// score sum and weighted reciprocal rank fusion against the coverage-weighted normalised score sum, each parameter
// picked on conversations 0-4 and checked on 5-9 (and the other way round). The paraphrase set
// (bench/paraphrase-set.ts) is an evaluation set and plays no part in the choice.
//   node --import tsx bench/locomo-fusion.ts
import { contentTokens } from "../adapters/embeddings/hashing.ts";
import { DEFAULT_HYBRID, defaultDenseWeight, fusedLexical, spreadCoverage, spreadScores } from "../projections/relayer/hybrid-rank.ts";
import { loadLocomo } from "./locomo-offline.ts";
import { useVectors } from "./locomo-use-cache.ts";

const convs = loadLocomo();
const vec = await useVectors(convs);
const { k1, b, context } = DEFAULT_HYBRID;

// BM25 over the same content tokens the keyed index hashes (a keyed hash renames a token: same scores).
const lexical = convs.map((c) => {
  const docs = c.turns.map((t) => contentTokens(t.text));
  const df = new Map<string, number>();
  const tfs = docs.map((d) => {
    const m = new Map<string, number>();
    for (const t of d) m.set(t, (m.get(t) ?? 0) + 1);
    for (const t of m.keys()) df.set(t, (df.get(t) ?? 0) + 1);
    return m;
  });
  const avgdl = docs.reduce((s, d) => s + d.length, 0) / docs.length;
  return (q: string) => {
    const s = new Float64Array(docs.length);
    const covered = new Float64Array(docs.length);
    const terms = new Set(contentTokens(q));
    for (const t of terms) {
      const n = df.get(t);
      if (!n) continue;
      const idf = Math.log(1 + (docs.length - n + 0.5) / (n + 0.5));
      tfs.forEach((m, i) => {
        const tf = m.get(t);
        if (!tf) return;
        s[i] += (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * docs[i].length) / avgdl));
        covered[i] += 1 / terms.size;
      });
    }
    const pos: number[] = [];
    const val: number[] = [];
    const cov: number[] = [];
    s.forEach((x, i) => x > 0 && (pos.push(i), val.push(x), cov.push(covered[i])));
    const spread = spreadScores(Int32Array.from(pos), Float64Array.from(val), s.length, context);
    const max = Math.max(...spread) || 1;
    return { rel: spread.map((x) => x / max), coverage: spreadCoverage(Int32Array.from(pos), Float64Array.from(cov), s.length, context) };
  };
});

// Per query: the context-spread BM25 and the cosine similarity of every turn (computed once).
const prepared = convs.map((c, ci) =>
  c.queries.map((q, qi) => {
    const qv = vec.questions[ci][qi];
    const sim = Float64Array.from(vec.turns[ci], (v) => v.reduce((s, x, j) => s + x * qv[j], 0));
    const { rel, coverage } = lexical[ci](q.question);
    let smin = Infinity, smax = -Infinity;
    for (const x of sim) (smin = Math.min(smin, x)), (smax = Math.max(smax, x));
    return { q, rel, coverage, sim, dense: sim.map((x) => (x - smin) / (smax - smin || 1)) };
  }),
);

type P = (typeof prepared)[number][number];
function evaluate(score: (p: P) => Float64Array, ids: number[]) {
  let n = 0, r10 = 0, mrr = 0;
  for (const ci of ids)
    for (const p of prepared[ci]) {
      const s = score(p);
      const order = Array.from(s.keys()).sort((x, y) => s[y] - s[x] || p.sim[y] - p.sim[x] || x - y);
      const ev = new Set(p.q.evidence);
      let first = 0, in10 = 0;
      order.forEach((d, r) => {
        if (!ev.has(convs[ci].turns[d].id)) return;
        if (!first) first = r + 1;
        if (r < 10) in10++;
      });
      n++, (r10 += in10 / ev.size), (mrr += first ? 1 / first : 0);
    }
  return { r10: r10 / n, mrr: mrr / n };
}

const A = [0, 1, 2, 3, 4], B = [5, 6, 7, 8, 9], ALL = [...A, ...B];
const line = (label: string, f: (p: P) => Float64Array) => {
  const r = evaluate(f, ALL);
  console.log(`${label.padEnd(52)} R@10 ${r.r10.toFixed(3)}  MRR ${r.mrr.toFixed(3)}`);
};
const linear = (w: number) => (p: P) => p.rel.map((x, i) => (1 - w) * x + w * p.sim[i]);
const fused = (w: number) => (p: P) => {
  const lex = fusedLexical(p.rel, p.coverage, w);
  return p.dense.map((x, i) => lex[i] + w * x);
};

line("lexical only (context BM25)", linear(0));
line("dense only (USE-lite cosine)", (p) => p.sim);
line("first fusion: fixed weight 0.3 on raw scores", linear(0.3));

const grid = [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5];
const res = grid.map((w) => ({ w, a: evaluate(fused(w), A).r10, b: evaluate(fused(w), B).r10, all: evaluate(fused(w), ALL).r10 }));
for (const r of res) console.log(`coverage-weighted sum w ${r.w}: R@10 conv 0-4 ${r.a.toFixed(3)}  5-9 ${r.b.toFixed(3)}  all ${r.all.toFixed(3)}`);
const best = (key: "a" | "b" | "all") => res.reduce((x, y) => (y[key] > x[key] ? y : x));
console.log(`best on 0-4: w ${best("a").w} → R@10 on 5-9 ${best("a").b.toFixed(3)}`);
console.log(`best on 5-9: w ${best("b").w} → R@10 on 0-4 ${best("b").a.toFixed(3)}`);
console.log(`best on all ten: w ${best("all").w} → R@10 ${best("all").all.toFixed(3)} (in-sample)`);
const denseWeight = defaultDenseWeight("use-lite-512");
line(`shipped: coverage-weighted sum, w ${denseWeight}`, fused(denseWeight));

// "The fusion must not lose what the dense signal finds": the dense top hit keeps rank 1 unless some memory's
// lexical match covers at least θ of the query's terms (θ > 1: always). θ is chosen here, on LoCoMo.
const pinned = (w: number, theta: number) => (p: P) => {
  const s = fused(w)(p);
  let cov = 0;
  for (const c of p.coverage) cov = Math.max(cov, c);
  if (cov >= theta) return s;
  let top = 0;
  for (let i = 1; i < p.sim.length; i++) if (p.sim[i] > p.sim[top]) top = i;
  const out = Float64Array.from(s);
  out[top] = Infinity;
  return out;
};
for (const theta of [0.34, 0.5, 0.67, 0.75, 1.01]) {
  const f = pinned(denseWeight, theta);
  const a = evaluate(f, A), b = evaluate(f, B), all = evaluate(f, ALL);
  console.log(`dense top hit pinned unless coverage ≥ ${theta}: R@10 conv 0-4 ${a.r10.toFixed(3)}  5-9 ${b.r10.toFixed(3)}  all ${all.r10.toFixed(3)}  MRR ${all.mrr.toFixed(3)}`);
}
