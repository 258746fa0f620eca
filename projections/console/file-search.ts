// The console's substring search over files (Queries.files with q, ./queries.ts): a page of the files whose name
// holds q, in the listing's order, from the sort index, the trigram index or both, whichever costs least.
import { inTransaction, type Db, type Tx } from "../../db/pool.ts";
import type { FileListQuery } from "../../schemas/console/http.ts";
import { FILE_LIST_COLS, dir, likePattern, type FileListRow } from "./query-parts.ts";

/** Rows of the sort order a substring search examines before it turns to the trigram index. */
const SEARCH_WINDOW = 4_000;
/**
 * Rows of a sort index walked in the time one trigram candidate is read from the table and sorted (≈ 0.12 µs and
 * 0.8 µs on 2 cores with 100,000 files in a space): the search reads the candidates only if there are fewer than the
 * scope's rows divided by this, as a walk of the whole scope would cost more.
 */
const SEARCH_CANDIDATE_COST = 7;

/** A substring search's window and candidate cost. */
export interface SearchCosts {
  readonly window: number;
  readonly candidateCost: number;
}
export const DEFAULT_SEARCH_COSTS: SearchCosts = { window: SEARCH_WINDOW, candidateCost: SEARCH_CANDIDATE_COST };

/** A node of EXPLAIN (ANALYZE, FORMAT JSON): the keys the trigram probe reads. */
interface PlanNode {
  readonly "Node Type": string;
  readonly "Actual Rows"?: number;
  readonly Plans?: readonly PlanNode[];
}

/**
 * Rows a plan's bitmap heap scan had to read: the size of its bitmap (a Bitmap Index Scan reports its row ids; a
 * BitmapAnd or BitmapOr reports none, so the least or the sum of its inputs). Infinity without a bitmap scan.
 */
function bitmapCandidates(node: PlanNode): number {
  const size = (b: PlanNode): number => {
    const inputs = (b.Plans ?? []).map(size);
    if (b["Node Type"] === "BitmapAnd") return Math.min(...inputs);
    if (b["Node Type"] === "BitmapOr") return inputs.reduce((a, x) => a + x, 0);
    return b["Node Type"] === "Bitmap Index Scan" ? (b["Actual Rows"] ?? Infinity) : Infinity;
  };
  if (node["Node Type"] === "Bitmap Heap Scan" && node.Plans?.length) return size(node.Plans[0]);
  return Math.min(Infinity, ...(node.Plans ?? []).map(bitmapCandidates));
}

/**
 * Whether pg_trgm finds a trigram in LIKE '%q%'. Its rule: runs of letters and digits, padded with two spaces where
 * a run's start is known (a literal non-word character before it) and one where its end is; q's own ends follow '%',
 * so they are unknown. Without a trigram the index can only list every row, and the search walks instead.
 */
export function hasTrigrams(q: string): boolean {
  const lower = q.toLowerCase();
  for (const run of lower.matchAll(/[\p{L}\p{N}]+/gu)) {
    const start = run.index! > 0 ? 2 : 0;
    const end = run.index! + run[0].length < lower.length ? 1 : 0;
    if ([...run[0]].length + start + end >= 3) return true;
  }
  return false;
}

/** The parts of a substring search's statements: the scope's filter and its parameters, then the search's own. */
interface Search {
  readonly base: string;
  readonly params: readonly unknown[];
  readonly sortExpr: string;
  readonly q: FileListQuery;
  /** placeholders of the LIKE pattern, the page's row count (q.limit + 1), and one more value */
  readonly pattern: string;
  readonly limit: string;
  readonly next: string;
  readonly like: string;
}

/**
 * A substring search's page (q.limit + 1 rows at most), in up to three steps. The planner cannot choose among them:
 * LIKE '%q%' selectivity is a guess, and a wrong guess either sorts every match of a common term or walks the whole
 * scope for a rare one.
 * 1. walk the sort index for a bounded window (a term common near the top of the order fills the page there);
 * 2. else probe the trigram index: its bitmap counts the candidate rows before any table row is read;
 * 3. read and sort the candidates if that costs less than walking the scope's rows (SEARCH_CANDIDATE_COST), else
 *    (or for a term without trigrams) walk the sort order until the page is full. (Without the probe, a common term
 *    far from the top of the order had its candidates collected up to a cap, thrown away on overflow, then walked.)
 */
export async function substringSearch(db: Db, costs: SearchCosts, base: string, params: readonly unknown[], order: string, sortExpr: string, q: FileListQuery): Promise<FileListRow[]> {
  const n = params.length;
  const s: Search = { base, params, sortExpr, q, pattern: `$${n + 1}`, limit: `$${n + 2}`, like: likePattern(q.q!), next: `$${n + 3}` };
  const withSearch = [...params, s.like, q.limit + 1];
  // 1. The window's matches (subqueries with LIMIT run lazily: the walk stops at the page's last match), and when the
  // page is not full there, the row just past the window if there is one: then the scope goes on. (The second part
  // of the UNION runs only if the first leaves room; row_number() to mark that row would cost ≈ 1 µs per row.)
  const windowed = await db.query<FileListRow & { beyond: boolean }>(
    `SELECT ${FILE_LIST_COLS}, m.beyond FROM console_files t JOIN (
       (SELECT w.file_id, false AS beyond FROM (SELECT t.file_id, lower(t.name) AS ln FROM console_files t WHERE ${base} ORDER BY ${order} LIMIT ${s.next}) w
        WHERE w.ln LIKE ${s.pattern} LIMIT ${s.limit})
       UNION ALL
       (SELECT t.file_id, true FROM console_files t WHERE ${base} ORDER BY ${order} OFFSET ${s.next} LIMIT 1)
       LIMIT ${s.limit}) m USING (file_id)
     ORDER BY ${order}`,
    [...withSearch, costs.window],
  );
  if (!windowed.rows.some((r) => r.beyond)) return windowed.rows.map(({ beyond: _, ...row }) => row);
  return inTransaction(db, async (tx) => {
    // Plans of one kind per step: bitmap scans only for the trigram index, an index-only walk after. (No JIT: a
    // disabled plan type adds a huge cost, which would make a millisecond query compile for 50 ms.)
    await tx.query("SET LOCAL jit = off; SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off; SET LOCAL enable_indexonlyscan = off");
    const found = hasTrigrams(q.q!) ? await readCandidates(tx, s, costs) : null;
    if (found) return found;
    // 3b. the sort index in order, nothing else: an index-only walk, whose filter reads lower(name) from the index
    // (a plain index scan would fetch every row walked from the table first)
    await tx.query("SET LOCAL enable_indexscan = on; SET LOCAL enable_indexonlyscan = on; SET LOCAL enable_bitmapscan = off");
    const walked = await tx.query<FileListRow>(
      `WITH m AS MATERIALIZED (SELECT t.file_id FROM console_files t WHERE ${base} AND lower(t.name) LIKE ${s.pattern} ORDER BY ${order} LIMIT ${s.limit})
       SELECT ${FILE_LIST_COLS} FROM console_files t JOIN m USING (file_id) ORDER BY ${order}`,
      withSearch,
    );
    return walked.rows;
  });
}

/** Steps 2 and 3a of a substring search: the page from the trigram index's candidates, or null to walk instead. */
async function readCandidates(tx: Tx, s: Search, costs: SearchCosts): Promise<FileListRow[] | null> {
  // 2. The bitmap is built whole before the first table row is read; LIMIT 1 stops at the first match. Its size is
  // what reading the candidates costs, and an upper bound of the matches (the trigrams of a term can all be in a
  // name that does not hold it).
  const probe = await tx.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(
    `EXPLAIN (ANALYZE, TIMING OFF, SUMMARY OFF, COSTS OFF, FORMAT JSON) SELECT 1 FROM console_files t WHERE ${s.base} AND lower(t.name) LIKE ${s.pattern} LIMIT 1`,
    [...s.params, s.like],
  );
  const plan = probe.rows[0]["QUERY PLAN"][0].Plan;
  if (!plan["Actual Rows"]) return []; // no match at all (the probe read every candidate)
  // What a walk costs at most: the scope's rows (past the cursor). There are more than the window's (step 1 saw
  // one past it), so fewer candidates than that costs need nothing else; for more, the planner's estimate.
  const candidates = bitmapCandidates(plan);
  let budget = Math.floor(costs.window / costs.candidateCost);
  if (candidates > budget) {
    const scope = await tx.query<{ "QUERY PLAN": { Plan: { "Plan Rows": number } }[] }>(`EXPLAIN (FORMAT JSON) SELECT 1 FROM console_files t WHERE ${s.base}`, [...s.params]);
    budget = Math.max(budget, Math.floor(scope.rows[0]["QUERY PLAN"][0].Plan["Plan Rows"] / costs.candidateCost));
    if (candidates > budget) return null;
  }
  // 3a. every candidate's sort key, sorted; only the page's rows are then read whole
  const dirn = dir(s.q.sortOrder);
  const found = await tx.query<FileListRow & { total: string }>(
    `WITH cand AS MATERIALIZED (
       SELECT t.file_id AS fid, ${s.sortExpr} AS sort_key FROM console_files t WHERE ${s.base} AND lower(t.name) LIKE ${s.pattern} LIMIT ${s.next}),
     top AS (SELECT fid, sort_key FROM cand ORDER BY sort_key ${dirn}, fid ${dirn} LIMIT ${s.limit})
     SELECT ${FILE_LIST_COLS}, (SELECT count(*) FROM cand)::text AS total FROM top JOIN console_files t ON t.file_id = top.fid
     ORDER BY top.sort_key ${dirn}, top.fid ${dirn}`,
    [...s.params, s.like, s.q.limit + 1, budget + 1],
  );
  // (the budget still bounds the work if matching rows were added since the probe)
  if (found.rows.length && Number(found.rows[0].total) > budget) return null;
  return found.rows.map(({ total: _, ...row }) => row);
}
