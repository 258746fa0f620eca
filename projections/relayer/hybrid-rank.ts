// Hybrid recall ranking (DESIGN.md section 6): BM25 over the keyed lexical index (projections/relayer/lexical-index.ts),
// spread to each match's conversational neighbours, fused with the dense cosine similarity, computed exactly over
// the owner's namespace (never an approximate candidate list).
//
//   s(d)   = BM25 of memory d for the query's keyed term hashes (k1, b; N, avgdl and df of the namespace)
//   s'(d)  = s(d) + Σ_k context[k-1] · max(s(d−k), s(d+k))    d±k: the memories submitted k places before / after d
//   c(d)   = share of the query's distinct terms that d matches; c'(d) = max of c over d and its context neighbours
//   w = 0:  rel(d) = s'(d) / max s'
//   w > 0:  rel(d) = (1 − w) · c'(d) · s'(d) / max s' + w · (dmax − distance(d)) / (dmax − dmin)     (fuseScores)
//           both signals normalised over the whole namespace; the lexical one weighed by how much of the query it
//           matched (a one-word match of a five-word question counts a fifth of a full match)
// Results are ordered by rel, then cosine distance, then row id; with scoring_weights the composite score of
// REFERENCE.md uses rel in place of (1 − distance). Responses still report the cosine `distance`.
//
// Why the context term: a memory is often an answer whose topic was named in the turn before or after it ("Yes, last
// Tuesday!"); the neighbours' lexical match carries it (measured on LoCoMo: bench/LOCOMO.md).
//
// Paths, all exact:
//   - w = 0 and no composite (the hashing embedder's default): every memory matching a query term is scored here
//     from the postings Postgres returns, the context spread is computed here, and only the top ones are joined with
//     `memories` (ties and memories without a lexical match — by cosine distance — complete the list).
//   - otherwise: the lexical scores are passed to one SQL statement that scores every row of the namespace.
import type { Db } from "../../db/pool.ts";
import { halfvecBinary } from "../../db/halfvec.ts";
import type { ScoringWeights } from "../../schemas/relayer/http.ts";
import { rankMemories, type Hit } from "./recall.ts";

// Chosen on LoCoMo conversations 0-4 and checked on 5-9 (bench/locomo-fusion.ts; figures in bench/NOTES.md).
const SEMANTIC_DENSE_WEIGHT = 0.25;
/**
 * The fusion must not lose what the dense signal finds: with a semantic embedder the cosine top hit keeps rank 1
 * unless some memory's lexical match covers at least this share of the query's terms. Chosen like the weight, on
 * LoCoMo evidence R@10 (bench/locomo-fusion.ts).
 */
export const DENSE_TOP_KEEPS_RANK_BELOW_COVERAGE = 0.67;

export interface HybridSettings {
  readonly k1: number;
  readonly b: number;
  /** Weights of the neighbours at distance 1, 2, … in submission order (empty: no context spread). */
  readonly context: readonly number[];
  /** Weight of the dense (cosine) similarity in the fused relevance, in [0, 1]; 0: the lexical relevance alone. */
  readonly denseWeight: number;
  /**
   * With a dense weight: the cosine top hit keeps rank 1 unless a lexical match covers at least this share of the
   * query's terms (0: never kept; above 1: always).
   */
  readonly keepDenseTopBelowCoverage: number;
}

/**
 * Tuned on LoCoMo (bench/locomo-tuning.ts: BM25 and context; bench/locomo-fusion.ts: the fusion, with USE-lite);
 * the dense weight depends on the embedder (defaultDenseWeight).
 */
export const DEFAULT_HYBRID: HybridSettings = { k1: 0.9, b: 0.4, context: [0.5, 0.3, 0.15], denseWeight: 0, keepDenseTopBelowCoverage: DENSE_TOP_KEEPS_RANK_BELOW_COVERAGE };

/**
 * The hashing embedder is itself a lexical signal (feature hashing of the same tokens): fusing it adds nothing
 * measurable, so its weight is 0 and the cheap lexical-first path runs. A semantic embedder adds synonyms and
 * paraphrases the keyed hashes cannot match.
 */
export function defaultDenseWeight(embedderName: string): number {
  return embedderName.startsWith("hashing") ? 0 : SEMANTIC_DENSE_WEIGHT;
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
  /** Memories of the namespace in the lexical index (positions run 0 .. docs − 1). */
  readonly docs: number;
  /** Matching memories: positions in submission order (ascending), their BM25 scores and query-term coverage. */
  readonly pos: Int32Array;
  readonly scores: Float64Array;
  readonly coverage: Float64Array;
}

/** BM25 of every memory of the namespace matching at least one term; undefined when nothing matches. */
export async function lexicalMatches(db: Db, owner: string, namespace: string, terms: readonly number[], s: Pick<HybridSettings, "k1" | "b">): Promise<LexicalMatches | undefined> {
  if (!terms.length) return undefined;
  // One index-only range scan per query term (lexical_postings_term), packed into one row per term of big-endian
  // binary arrays (int4 positions, int2 term frequencies and document lengths); df is the length of the range, and
  // BM25 is computed here. Scoring the postings in SQL (a row per posting through joins and aggregates) cost
  // Postgres ~4× more per query, and Postgres is the part every gateway replica shares.
  const r = await db.query<{ ns_id: number; docs: number; total_len: string; pos: Buffer | null; tf: Buffer | null; len: Buffer | null }>(
    `SELECT n.ns_id, n.docs, n.total_len, x.pos, x.tf, x.len
     FROM lexical_namespaces n CROSS JOIN unnest($3::bigint[]) AS t(term)
     CROSS JOIN LATERAL (SELECT string_agg(int4send(p.pos), ''::bytea) AS pos, string_agg(int2send(p.tf), ''::bytea) AS tf,
                                string_agg(int2send(p.len), ''::bytea) AS len
                         FROM lexical_postings p WHERE p.ns_id = n.ns_id AND p.term = t.term) x
     WHERE n.owner = $1 AND n.namespace = $2 AND n.docs > 0`,
    [owner, namespace, terms.map(String)],
  );
  const ranges = r.rows.filter((x): x is typeof x & { pos: Buffer; tf: Buffer; len: Buffer } => x.pos !== null && x.tf !== null && x.len !== null);
  if (!ranges.length) return undefined;
  const { ns_id: nsId, docs } = ranges[0];
  const avgdl = Math.max(Number(ranges[0].total_len), 1) / Math.max(docs, 1);
  let size = docs;
  for (const x of ranges) for (let i = 0; i < x.pos.length; i += 4) size = Math.max(size, x.pos.readInt32BE(i) + 1);
  const acc = new Float64Array(size);
  const matched = new Uint16Array(size);
  for (const x of ranges) {
    const df = x.pos.length / 4;
    const idf = Math.log(1 + (docs - df + 0.5) / (df + 0.5));
    for (let i = 0; i < df; i++) {
      const p = x.pos.readInt32BE(4 * i);
      if (p < 0) continue; // a document not yet placed (only ever seen inside the projection's transaction)
      const tf = x.tf.readInt16BE(2 * i);
      const len = x.len.readInt16BE(2 * i);
      acc[p] += (idf * tf * (s.k1 + 1)) / (tf + s.k1 * (1 - s.b + (s.b * len) / avgdl));
      matched[p]++;
    }
  }
  let count = 0;
  for (let p = 0; p < size; p++) if (matched[p]) count++;
  const pos = new Int32Array(count);
  const scores = new Float64Array(count);
  const coverage = new Float64Array(count);
  for (let p = 0, k = 0; p < size; p++) {
    if (!matched[p]) continue;
    pos[k] = p;
    coverage[k] = matched[p] / terms.length;
    scores[k++] = acc[p];
  }
  return { nsId, docs, pos, scores, coverage };
}

/**
 * s'(d) = s(d) + Σ_k context[k-1]·max(s(d−k), s(d+k)) for every position d in [0, n). `pos` and `scores` list the
 * memories with s > 0; the others have s = 0.
 */
export function spreadScores(pos: Int32Array, scores: Float64Array, n: number, context: readonly number[]): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < pos.length; i++) if (pos[i] >= 0 && pos[i] < n) out[pos[i]] += scores[i];
  // best[d]: the larger neighbour score at distance k. Only positions next to a match are touched, and each is added
  // and reset once, so the cost follows the matches, not the namespace.
  const best = new Float64Array(n);
  const take = (d: number, w: number) => {
    if (d < 0 || d >= n || best[d] === 0) return;
    out[d] += w * best[d];
    best[d] = 0;
  };
  context.forEach((w, ki) => {
    if (w === 0) return;
    const k = ki + 1;
    for (let i = 0; i < pos.length; i++) {
      const s = scores[i];
      const a = pos[i] - k;
      const b = pos[i] + k;
      if (a >= 0 && a < n && s > best[a]) best[a] = s;
      if (b >= 0 && b < n && s > best[b]) best[b] = s;
    }
    for (let i = 0; i < pos.length; i++) {
      take(pos[i] - k, w);
      take(pos[i] + k, w);
    }
  });
  return out;
}

/** spreadScores over a map of position → score (positions past the last match included). Pure; for tests. */
export function spreadContext(scores: ReadonlyMap<number, number>, context: readonly number[]): Map<number, number> {
  const pos = Int32Array.from(scores.keys());
  const n = Math.max(0, ...pos) + 1 + context.length;
  const out = spreadScores(pos, Float64Array.from(scores.values()), n, context);
  const m = new Map<number, number>();
  out.forEach((v, d) => v > 0 && m.set(d, v));
  return m;
}

/**
 * c'(d): the larger of d's own query-term coverage and that of its context neighbours (the ones whose BM25 spreads to
 * d), for every position d in [0, n).
 */
export function spreadCoverage(pos: Int32Array, coverage: Float64Array, n: number, context: readonly number[]): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < pos.length; i++) {
    const p = pos[i];
    const c = coverage[i];
    for (let k = 0; k <= context.length; k++) {
      if (k > 0 && context[k - 1] === 0) continue;
      for (const d of k === 0 ? [p] : [p - k, p + k]) if (d >= 0 && d < n && c > out[d]) out[d] = c;
    }
  }
  return out;
}

/**
 * The lexical part of the fused relevance per position: (1 − w) · c'(d) · rel(d), where rel is s'/max s'. The dense
 * part, w · (dmax − distance)/(dmax − dmin), is added over every row of the namespace in SQL (rankComposite).
 * Scores, not ranks, are fused, both normalised over the namespace: reciprocal rank fusion squeezed the dense top
 * hits together, so any lexical match outranked them; the coverage factor shrinks a match of few query words.
 */
export function fusedLexical(rel: Float64Array, coverage: Float64Array, w: number): number[] {
  return Array.from(rel, (x, d) => (x > 0 ? (1 - w) * coverage[d] * x : 0));
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
  // Matches come in ascending position order (lexicalMatches).
  const n = Math.max(lex.docs, lex.pos[lex.pos.length - 1] + 1);
  const rel = spreadScores(lex.pos, lex.scores, n, settings.context);
  let max = 0;
  for (let d = 0; d < n; d++) if (rel[d] > max) max = rel[d];
  for (let d = 0; d < n; d++) rel[d] /= max;
  if (settings.denseWeight > 0) {
    const coverage = spreadCoverage(lex.pos, lex.coverage, n, settings.context);
    let best = 0;
    for (const c of coverage) if (c > best) best = c;
    return rankComposite(db, q, lex.nsId, fusedLexical(rel, coverage, settings.denseWeight), settings, best < settings.keepDenseTopBelowCoverage);
  }
  if (q.composite) return rankComposite(db, q, lex.nsId, Array.from(rel, (x) => (x > 0 ? x : 0)), settings);
  return rankLexicalFirst(db, q, lex.nsId, rel);
}

/**
 * Positions with rel > 0, best first (ties by position), cut to the `want` best plus every position tied with the
 * last of them: a bounded selection rather than a sort of every match (thousands for a common term). Returns all of
 * them, sorted, when `want` is Infinity.
 */
export function topPositions(rel: Float64Array, want: number): number[] {
  const order: number[] = [];
  if (want !== Infinity) {
    // The want-th largest value is the cut: everything at or above it is taken (ties included).
    const heap = new Float64Array(want); // min-heap of the best `want` values seen
    let size = 0;
    for (let d = 0; d < rel.length; d++) {
      const v = rel[d];
      if (v <= 0) continue;
      if (size < want) {
        let i = size++;
        heap[i] = v;
        while (i > 0) {
          const p = (i - 1) >> 1;
          if (heap[p] <= heap[i]) break;
          [heap[p], heap[i]] = [heap[i], heap[p]];
          i = p;
        }
      } else if (v > heap[0]) {
        heap[0] = v;
        let i = 0;
        for (;;) {
          const l = 2 * i + 1, r = l + 1;
          let m = i;
          if (l < size && heap[l] < heap[m]) m = l;
          if (r < size && heap[r] < heap[m]) m = r;
          if (m === i) break;
          [heap[m], heap[i]] = [heap[i], heap[m]];
          i = m;
        }
      }
    }
    const cut = size < want ? 0 : heap[0];
    for (let d = 0; d < rel.length; d++) if (rel[d] > 0 && rel[d] >= cut) order.push(d);
  } else {
    for (let d = 0; d < rel.length; d++) if (rel[d] > 0) order.push(d);
  }
  return order.sort((a, b) => rel[b] - rel[a] || a - b);
}

/** w = 0, no composite: rank the lexical matches (and their context), then fill with the cosine order. */
async function rankLexicalFirst(db: Db, q: HybridQuery, nsId: number, rel: Float64Array): Promise<Hit[]> {
  const v = halfvecBinary(q.vector);
  // Usually the best few positions fill the limit; a memory may be missing from the index (forgotten), and then the
  // complete order is computed once.
  let order = topPositions(rel, q.limit + 8);
  let complete = false;
  const hits: (Row & { rel: number })[] = [];
  const taken: string[] = [];
  let next = 0;
  for (;;) {
    if (next >= order.length) {
      if (complete || hits.length >= q.limit) break;
      order = topPositions(rel, Infinity);
      complete = true;
      // The bounded list is a prefix of the complete order (same comparator, every value at or above its cut):
      // `next` stays where it is.
      if (next >= order.length) break;
    }
    // Enough to fill the limit, plus every position tied with the last one taken (ties are ordered by distance).
    let end = Math.min(order.length, next + Math.max(q.limit - hits.length, 1) + 8);
    while (end < order.length && rel[order[end]] === rel[order[end - 1]]) end++;
    const chunk = order.slice(next, end);
    next = end;
    const r = await db.query<Row & { pos: number }>(
      `SELECT d.pos, m.id, m.blob_id, (m.vector <=> $1::halfvec) AS distance, m.created_at, m.importance
       FROM lexical_docs d JOIN memories m ON m.id = d.memory_id
       WHERE d.ns_id = $2 AND d.pos = ANY($3::int[]) AND m.owner = $4 AND m.namespace = $5`,
      [v, nsId, chunk, q.owner, q.namespace],
    );
    for (const x of r.rows) {
      hits.push({ ...x, distance: Number(x.distance), rel: rel[x.pos] });
      taken.push(x.id);
    }
    // Each chunk ends where the relevance drops, so once the limit is filled nothing later can rank higher.
    if (hits.length >= q.limit) break;
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
 * Every row of the namespace, ranked by rel (module comment), then the composite score when asked for. The lexical
 * part travels as one dense array indexed by position (zeros compress to one character each) and meets the rows
 * through lexical_docs' (ns_id, pos) index; the distance range that normalises the dense part is taken over every row
 * of the namespace.
 */
/** `pinDenseTop`: the rows at the namespace's smallest cosine distance rank first (their relevance is raised above any). */
async function rankComposite(db: Db, q: HybridQuery, nsId: number, lexical: number[], s: HybridSettings, pinDenseTop = false): Promise<Hit[]> {
  const weights = q.composite ? q.weights : { semantic: 1, recency: 0, recency_half_life_days: 1, importance: 0 };
  const w = s.denseWeight;
  // `m` is materialised so that each row's distance is computed once (an inlined subquery would repeat it per use).
  const r = await db.query<Row & { score: number }>(
    `WITH lex AS (SELECT d.memory_id, ($6::float8[])[d.pos + 1] AS rel FROM lexical_docs d WHERE d.ns_id = $5 AND d.pos < $7),
          m AS MATERIALIZED (SELECT id, blob_id, (vector <=> $1::halfvec) AS distance, created_at, importance FROM memories WHERE owner = $2 AND namespace = $3),
          ranked AS (SELECT m.*, min(m.distance) OVER () AS dmin, max(m.distance) OVER () AS dmax FROM m)
     SELECT m.id, m.blob_id, m.distance, m.created_at, m.importance,
            $9::float8 * (coalesce(lex.rel, 0) + $8::float8 * coalesce((m.dmax - m.distance) / nullif(m.dmax - m.dmin, 0), 1)
                          + CASE WHEN $13::boolean AND m.distance = m.dmin THEN 2 ELSE 0 END)
          + $10::float8 * power(2, -(date_part('epoch', now() - m.created_at) / 86400.0) / $11::float8)
          + $12::float8 * m.importance AS score
     FROM ranked m LEFT JOIN lex ON lex.memory_id = m.id
     ORDER BY score DESC, m.distance, m.id LIMIT $4`,
    [
      halfvecBinary(q.vector),
      q.owner,
      q.namespace,
      q.limit,
      nsId,
      lexical,
      lexical.length,
      w,
      weights.semantic,
      weights.recency,
      weights.recency_half_life_days,
      weights.importance,
      pinDenseTop,
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
