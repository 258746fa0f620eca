// Hybrid recall ranking (DESIGN.md section 6): BM25 over the keyed lexical index (projections/lexical-index.ts),
// spread to each match's conversational neighbours, fused with the dense cosine similarity, computed exactly over
// the owner's namespace (never an approximate candidate list).
//
//   s(d)   = BM25 of memory d for the query's keyed term hashes (k1, b; N, avgdl and df of the namespace)
//   s'(d)  = s(d) + Σ_k context[k-1] · max(s(d−k), s(d+k))    d±k: the memories submitted k places before / after d
//   rel(d) = (1 − w) · s'(d) / max s' + w · (1 − distance(d))  w = the dense weight
// Results are ordered by rel, then cosine distance, then row id; with scoring_weights the composite score of
// REFERENCE.md uses rel in place of (1 − distance). Responses still report the cosine `distance`.
//
// Why the context term: a memory is often an answer whose topic was named in the turn before or after it ("Yes, last
// Tuesday!"); the neighbours' lexical match carries it (measured on LoCoMo: bench/LOCOMO.md).
//
// Paths, all exact:
//   - w = 0 and no composite (the hashing embedder's default): every memory matching a query term is scored in SQL,
//     the context spread is computed here, and only the top ones are joined with `memories` (ties and memories
//     without a lexical match — by cosine distance — complete the list).
//   - otherwise: the lexical scores are passed to one SQL statement that scores every row of the namespace.
import type { Db } from "../db/pool.ts";
import { toVectorLiteral } from "../db/pool.ts";
import type { ScoringWeights } from "../schemas/relayer-http.ts";
import { rankMemories, type Hit } from "./recall.ts";

export interface HybridSettings {
  readonly k1: number;
  readonly b: number;
  /** Weights of the neighbours at distance 1, 2, … in submission order (empty: no context spread). */
  readonly context: readonly number[];
  /** Weight of the dense cosine similarity in the fused relevance, in [0, 1]. */
  readonly denseWeight: number;
}

/** Tuned on LoCoMo (bench/LOCOMO.md); the dense weight depends on the embedder (see defaultDenseWeight). */
export const DEFAULT_HYBRID: HybridSettings = { k1: 0.9, b: 0.4, context: [0.5, 0.3, 0.15], denseWeight: 0 };

/**
 * The hashing embedder is itself a lexical signal (feature hashing of the same tokens): fusing it adds nothing
 * measurable, so its weight is 0 and the cheap lexical-first path runs. A semantic embedder adds synonyms and
 * paraphrases the keyed hashes cannot match.
 */
export function defaultDenseWeight(embedderName: string): number {
  return embedderName.startsWith("hashing") ? 0 : 0.3;
}

export interface HybridQuery {
  readonly owner: string;
  readonly namespace: string;
  /** Distinct keyed term hashes of the query (adapters/lexical/terms.ts queryTerms). */
  readonly terms: readonly number[];
  readonly vector: ArrayLike<number>;
  readonly limit: number;
  readonly weights: ScoringWeights;
  readonly composite: boolean;
}

export interface LexicalMatches {
  readonly nsId: number;
  /** BM25 score by position in submission order. */
  readonly scores: Map<number, number>;
}

/** BM25 of every memory of the namespace matching at least one term; undefined when nothing matches. */
export async function lexicalMatches(db: Db, owner: string, namespace: string, terms: readonly number[], s: Pick<HybridSettings, "k1" | "b">): Promise<LexicalMatches | undefined> {
  if (!terms.length) return undefined;
  const r = await db.query<{ ns_id: number; pos: number; s: number }>(
    `WITH ns AS (SELECT ns_id, docs::float8 AS n, greatest(total_len, 1)::float8 / greatest(docs, 1) AS avgdl
                 FROM lexical_namespaces WHERE owner = $1 AND namespace = $2 AND docs > 0),
          post AS MATERIALIZED (SELECT p.term, p.pos, p.tf, p.len FROM ns JOIN lexical_postings p ON p.ns_id = ns.ns_id AND p.term = ANY($3::bigint[])),
          df AS (SELECT term, count(*)::float8 AS df FROM post GROUP BY term)
     SELECT ns.ns_id, post.pos, sum(ln(1 + (ns.n - df.df + 0.5) / (df.df + 0.5)) * post.tf * ($4::float8 + 1)
                                    / (post.tf + $4::float8 * (1 - $5::float8 + $5::float8 * post.len / ns.avgdl))) AS s
     FROM post JOIN df USING (term) CROSS JOIN ns GROUP BY ns.ns_id, post.pos`,
    [owner, namespace, terms.map(String), s.k1, s.b],
  );
  if (!r.rows.length) return undefined;
  const scores = new Map<number, number>();
  for (const x of r.rows) if (x.pos >= 0) scores.set(x.pos, Number(x.s));
  return { nsId: r.rows[0].ns_id, scores };
}

/** s'(d) = s(d) + Σ_k context[k-1]·max(s(d−k), s(d+k)) for every d with s'(d) > 0. Pure; exported for tests. */
export function spreadContext(scores: ReadonlyMap<number, number>, context: readonly number[]): Map<number, number> {
  if (!context.length) return new Map(scores);
  // best[k][d] = max(s(d−k), s(d+k)), built from the matches only.
  const out = new Map<number, number>();
  for (const [d, s] of scores) out.set(d, (out.get(d) ?? 0) + s);
  context.forEach((w, i) => {
    if (w === 0) return;
    const k = i + 1;
    const best = new Map<number, number>();
    for (const [d, s] of scores) {
      for (const t of [d - k, d + k]) {
        if (t < 0) continue;
        if (s > (best.get(t) ?? 0)) best.set(t, s);
      }
    }
    for (const [t, s] of best) out.set(t, (out.get(t) ?? 0) + w * s);
  });
  return out;
}

interface Row {
  id: string;
  blob_id: string;
  distance: number;
  created_at: Date;
  importance: number;
}

/** Exact hybrid ranking of the owner's namespace. */
export async function rankHybrid(db: Db, q: HybridQuery, settings: HybridSettings = DEFAULT_HYBRID): Promise<Hit[]> {
  const lex = await lexicalMatches(db, q.owner, q.namespace, q.terms, settings);
  // No lexical match anywhere in the namespace: the relevance is the cosine similarity alone (plain or composite).
  if (!lex) return rankMemories(db, q);
  const spread = spreadContext(lex.scores, settings.context);
  // Positions past the namespace's end (context of its last memory) select nothing: harmless.
  let max = 0;
  for (const v of spread.values()) if (v > max) max = v;
  const rel = new Map<number, number>();
  for (const [d, v] of spread) rel.set(d, v / max);
  if (q.composite || settings.denseWeight > 0) return rankComposite(db, q, { nsId: lex.nsId, rel }, settings);
  return rankLexicalFirst(db, q, lex.nsId, rel);
}

/** w = 0, no composite: rank the lexical matches (and their context), then fill with the cosine order. */
async function rankLexicalFirst(db: Db, q: HybridQuery, nsId: number, rel: Map<number, number>): Promise<Hit[]> {
  const v = toVectorLiteral(q.vector);
  const order = [...rel.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
  const hits: (Row & { rel: number })[] = [];
  const taken: string[] = [];
  let next = 0;
  while (next < order.length) {
    // Enough to fill the limit, plus every position tied with the last one taken (ties are ordered by distance).
    let end = Math.min(order.length, next + Math.max(q.limit - hits.length, 1) + 8);
    while (end < order.length && order[end][1] === order[end - 1][1]) end++;
    const chunk = order.slice(next, end);
    next = end;
    const r = await db.query<Row & { pos: number }>(
      `SELECT d.pos, m.id, m.blob_id, (m.vector <=> $1::halfvec) AS distance, m.created_at, m.importance
       FROM lexical_docs d JOIN memories m ON m.id = d.memory_id
       WHERE d.ns_id = $2 AND d.pos = ANY($3::int[]) AND m.owner = $4 AND m.namespace = $5`,
      [v, nsId, chunk.map((c) => c[0]), q.owner, q.namespace],
    );
    for (const x of r.rows) {
      hits.push({ ...x, distance: Number(x.distance), rel: rel.get(x.pos)! });
      taken.push(x.id);
    }
    // Stop once the limit is filled and the next position scores strictly lower than the last one kept.
    if (hits.length >= q.limit && (next >= order.length || order[next][1] < order[next - 1][1])) break;
  }
  hits.sort((a, b) => b.rel - a.rel || a.distance - b.distance || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const top: Hit[] = hits.slice(0, q.limit).map(({ blob_id, distance, created_at, importance }) => ({ blob_id, distance, created_at, importance }));
  if (top.length < q.limit) {
    // Memories with no lexical match (rel 0), in cosine order.
    const r = await db.query<Row>(
      `SELECT id, blob_id, (vector <=> $1::halfvec) AS distance, created_at, importance FROM memories
       WHERE owner = $2 AND namespace = $3 AND id <> ALL($4::uuid[]) ORDER BY distance, id LIMIT $5`,
      [v, q.owner, q.namespace, taken, q.limit - top.length],
    );
    for (const x of r.rows) top.push({ blob_id: x.blob_id, distance: Number(x.distance), created_at: x.created_at, importance: x.importance });
  }
  return top;
}

/**
 * Every row of the namespace: rel = (1 − w)·lexical + w·(1 − distance), then the composite score when asked for. The
 * lexical relevance travels as one dense array indexed by position (zeros compress to one character each) and meets
 * the rows through lexical_docs' (ns_id, pos) index.
 */
async function rankComposite(db: Db, q: HybridQuery, lex: { nsId: number; rel: Map<number, number> }, s: HybridSettings): Promise<Hit[]> {
  const weights = q.composite ? q.weights : { semantic: 1, recency: 0, recency_half_life_days: 1, importance: 0 };
  let n = 0;
  for (const p of lex.rel.keys()) n = Math.max(n, p + 1);
  const dense: number[] = new Array(n).fill(0);
  for (const [p, v] of lex.rel) dense[p] = v;
  const r = await db.query<Row & { score: number }>(
    `WITH lex AS (SELECT d.memory_id, ($6::float8[])[d.pos + 1] AS rel FROM lexical_docs d WHERE d.ns_id = $5 AND d.pos < $7),
          m AS (SELECT id, blob_id, (vector <=> $1::halfvec) AS distance, created_at, importance FROM memories WHERE owner = $2 AND namespace = $3)
     SELECT m.id, m.blob_id, m.distance, m.created_at, m.importance,
            $9::float8 * ((1 - $8::float8) * coalesce(lex.rel, 0) + $8::float8 * (1 - m.distance))
          + $10::float8 * power(2, -(extract(epoch FROM (now() - m.created_at)) / 86400.0) / $11::float8)
          + $12::float8 * m.importance AS score
     FROM m LEFT JOIN lex ON lex.memory_id = m.id
     ORDER BY score DESC, m.distance, m.id LIMIT $4`,
    [
      toVectorLiteral(q.vector),
      q.owner,
      q.namespace,
      q.limit,
      lex.nsId,
      dense,
      n,
      s.denseWeight,
      weights.semantic,
      weights.recency,
      weights.recency_half_life_days,
      weights.importance,
    ],
  );
  return r.rows.map((x) => ({
    blob_id: x.blob_id,
    distance: Number(x.distance),
    created_at: x.created_at,
    importance: x.importance,
    ...(q.composite ? { score: Number(x.score) } : {}),
  }));
}
