// The console's file listing with a substring search (projections/console/queries.ts, file-search.ts): whichever of its three steps answers
// (a window of the sort order, the trigram index, a walk of the whole order), every page and the pages that follow
// through cursors are exactly what a plain filter-and-sort gives. Small step sizes reach every step with few rows;
// which step answers follows from the trigram index's count of candidates.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, inTransaction, type Db } from "../db/pool.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";
import { consoleProjection } from "../projections/console/read-models.ts";
import { Queries } from "../projections/console/queries.ts";
import { hasTrigrams } from "../projections/console/file-search.ts";
import { decodeCursor, type FileListQuery, type FileSort, type SortOrder } from "../schemas/console/http.ts";

const SPACE = "11111111-1111-1111-1111-111111111111";
const BUCKET = (i: number) => `00000000-0000-0000-0000-00000000000${i % 4}`;
const FILES = 600;

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase("memrelay_console_queries");
  db = createPool(database.url, 4);
  await consoleProjection.migrate(db);
  // Names cluster by kind in the order of each sort: "report" files are the oldest and sort last by name; "x_7" is
  // in a few files only; "deleted" files must never be listed.
  await db.query(
    `INSERT INTO console_files (file_id, bucket_id, space_id, name, blob_id, storage_bucket_name, storage_key, size, mime_type, status, is_private,
       metadata, name_claim, upload_state, created_at, updated_at)
     SELECT gen_random_uuid(), ('00000000-0000-0000-0000-00000000000' || (i % 4))::uuid, $1::uuid,
       CASE WHEN i < 200 THEN 'Report-' || lpad(i::text, 4, '0') WHEN i % 97 = 0 THEN 'x_7 ' || i ELSE 'a-' || lpad(i::text, 4, '0') END || '.bin',
       md5(i::text), 'b', 'k', (i * 7919) % 1000, CASE WHEN i % 3 = 0 THEN 'text/plain' ELSE 'image/png' END,
       CASE WHEN i % 50 = 1 THEN 'deleted' ELSE 'completed' END, true, '{}', 'c' || i, 'completed',
       timestamptz '2026-01-01' + i * interval '1 minute' + (i % 7) * interval '1 second', now()
     FROM generate_series(0, $2::int - 1) i`,
    [SPACE, FILES],
  );
  await db.query("VACUUM ANALYZE console_files");
});

afterAll(async () => {
  await db?.end();
  await database?.drop();
});

const SORT_EXPR: Record<FileSort, string> = { date: "created_at", name: "lower(name)", size: "size", type: "mime_type" };

/** The reference: every match, filtered and sorted in one plain statement. */
async function reference(scope: "space" | "bucket", id: string, q: string, sort: FileSort, order: SortOrder): Promise<string[]> {
  const dir = order === "asc" ? "ASC" : "DESC";
  const r = await db.query<{ id: string }>(
    `SELECT file_id::text AS id FROM console_files WHERE ${scope}_id = $1 AND status <> 'deleted' AND strpos(lower(name), lower($2)) > 0
     ORDER BY ${SORT_EXPR[sort]} ${dir}, file_id ${dir}`,
    [id, q],
  );
  return r.rows.map((x) => x.id);
}

/** Every page through the cursors. */
async function pages(queries: Queries, scope: "space" | "bucket", id: string, q: string, sort: FileSort, order: SortOrder, limit: number): Promise<string[]> {
  const out: string[] = [];
  let cursor: FileListQuery["cursor"] = null;
  for (let i = 0; i < 1000; i++) {
    const page = await queries.files(scope, id, { limit, cursor, q, sortField: sort, sortOrder: order });
    out.push(...page.rows.map((r) => r.file_id));
    if (!page.next) return out;
    cursor = decodeCursor(page.next, sort, order);
  }
  throw new Error("too many pages");
}

describe("file search", () => {
  it("answers like a plain filter-and-sort from each step, every sort and order, through every page", async () => {
    // window 20 rows; the step after it as the search chooses it (588 rows: candidates are read when fewer than 84),
    // and each of the two forced: candidates that cost next to nothing are always read, costly ones never
    const chosen = new Queries(db, { window: 20, candidateCost: 7 });
    const trigram = new Queries(db, { window: 20, candidateCost: 0.001 });
    const walk = new Queries(db, { window: 20, candidateCost: 1e9 });
    const defaults = new Queries(db);
    for (const q of ["report", "REPORT-01", "x_7", "a-0", "zz-none", "e", "%", "_"]) {
      for (const sort of ["date", "name", "size", "type"] as const) {
        for (const order of ["asc", "desc"] as const) {
          const want = await reference("space", SPACE, q, sort, order);
          for (const [step, queries] of [["chosen", chosen], ["trigram", trigram], ["walk", walk]] as const) {
            expect(await pages(queries, "space", SPACE, q, sort, order, 7), `${step}: ${q} ${sort} ${order}`).toEqual(want);
          }
          expect((await defaults.files("space", SPACE, { limit: 20, cursor: null, q, sortField: sort, sortOrder: order })).rows.map((r) => r.file_id)).toEqual(want.slice(0, 20));
        }
      }
      const inBucket = await reference("bucket", BUCKET(1), q, "name", "desc");
      for (const queries of [chosen, trigram, walk]) expect(await pages(queries, "bucket", BUCKET(1), q, "name", "desc", 5), `bucket ${q}`).toEqual(inBucket);
    }
  });

  it("reads the candidates of a rare term, and walks a common one without reading its candidates first", async () => {
    // every statement the searches send, through a pool of its own
    const seen: string[] = [];
    const spied = createPool(database.url, 2);
    spied.on("connect", (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        seen.push(typeof args[0] === "string" ? args[0] : String((args[0] as { text?: string }).text));
        return query(...args);
      };
    });
    try {
      const queries = new Queries(spied, { window: 20, candidateCost: 7 });
      const steps = async (q: string, sort: FileSort, order: SortOrder) => {
        seen.length = 0;
        const got = await queries.files("space", SPACE, { limit: 7, cursor: null, q, sortField: sort, sortOrder: order });
        expect(got.rows.map((r) => r.file_id)).toEqual((await reference("space", SPACE, q, sort, order)).slice(0, 7));
        return { probed: seen.some((x) => x.includes("EXPLAIN (ANALYZE")), read: seen.some((x) => x.includes("WITH cand")), walked: seen.some((x) => x.includes("WITH m AS")) };
      };
      // "report": 196 matches, none among the first 20 by name; more than 84 candidates, so walked straight away
      expect(await steps("report", "name", "asc")).toEqual({ probed: true, read: false, walked: true });
      // "x_7": 4 matches, spread through the order: read and sorted
      expect(await steps("x_7", "date", "desc")).toEqual({ probed: true, read: true, walked: false });
      // a term no name holds: the probe alone answers
      expect(await steps("zz-none", "date", "desc")).toEqual({ probed: true, read: false, walked: false });
      // "a-0": common among the newest files, found in the window
      expect(await steps("a-0", "date", "desc")).toEqual({ probed: false, read: false, walked: false });
      // "7 ": no trigram, so the index would list every row: walked
      expect(await steps("7 ", "date", "desc")).toEqual({ probed: false, read: false, walked: true });
    } finally {
      await spied.end();
    }
  });

  it("tells a term pg_trgm finds trigrams in from one it does not", async () => {
    // rows without letters or digits have no trigrams: the index lists none of them for a term with a trigram, and
    // every one for a term without
    await db.query("CREATE TABLE trgm_probe (n text); INSERT INTO trgm_probe SELECT '#' FROM generate_series(1, 5); CREATE INDEX ON trgm_probe USING gin (n gin_trgm_ops)");
    try {
      for (const q of ["zq", "x_7", "_01", "ab-", "-a", "a-", "-", "é-", "éb-", "-é", "日本", "日本語", "a b", "abc", "e", "%", "_", "report", "REPORT-01", "7 ", " 7"]) {
        const listed = await inTransaction(db, async (tx) => {
          await tx.query("SET LOCAL enable_seqscan = off");
          const pattern = `%${q.toLowerCase().replace(/[\\%_]/g, (c) => "\\" + c)}%`;
          const r = await tx.query<{ "QUERY PLAN": { Plan: { Plans: { "Node Type": string; "Actual Rows": number }[] } }[] }>(
            "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY OFF, COSTS OFF, FORMAT JSON) SELECT 1 FROM trgm_probe WHERE n LIKE $1",
            [pattern],
          );
          const scan = r.rows[0]["QUERY PLAN"][0].Plan.Plans[0];
          expect(scan["Node Type"]).toBe("Bitmap Index Scan");
          return scan["Actual Rows"];
        });
        expect(hasTrigrams(q), q).toBe(listed === 0);
      }
    } finally {
      await db.query("DROP TABLE trgm_probe");
    }
  });
});
