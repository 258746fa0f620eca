// The console's file listing with a substring search (console/queries.ts): whichever of its three steps answers
// (a window of the sort order, the trigram index, a walk of the whole order), every page and the pages that follow
// through cursors are exactly what a plain filter-and-sort gives. Small step sizes reach every step with few rows.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, type Db } from "../db/pool.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";
import { consoleProjection } from "../console/projections.ts";
import { Queries } from "../console/queries.ts";
import { decodeCursor, type FileListQuery, type FileSort, type SortOrder } from "../schemas/console-http.ts";

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
    // window 20 rows, at most 30 trigram candidates: "report" (200 matches) is found by walking, "x_7" (6) through
    // the trigram index, "a-0" (~ 100, none near the top of some orders) by either
    const small = new Queries(db, { window: 20, candidates: 30 });
    const defaults = new Queries(db);
    for (const q of ["report", "REPORT-01", "x_7", "a-0", "zz-none", "e", "%", "_"]) {
      for (const sort of ["date", "name", "size", "type"] as const) {
        for (const order of ["asc", "desc"] as const) {
          const want = await reference("space", SPACE, q, sort, order);
          expect(await pages(small, "space", SPACE, q, sort, order, 7), `${q} ${sort} ${order}`).toEqual(want);
          expect((await defaults.files("space", SPACE, { limit: 20, cursor: null, q, sortField: sort, sortOrder: order })).rows.map((r) => r.file_id)).toEqual(want.slice(0, 20));
        }
      }
      const inBucket = await reference("bucket", BUCKET(1), q, "name", "desc");
      expect(await pages(small, "bucket", BUCKET(1), q, "name", "desc", 5), `bucket ${q}`).toEqual(inBucket);
    }
  });
});
