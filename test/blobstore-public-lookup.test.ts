// The public read's lookup (projections/blobstore/queries.ts): by the unique (bucket_id, key) index whatever the
// statistics say. Planned generically on a bucket of thousands of objects that was never analyzed (a bucket filling
// up faster than autovacuum looks at it), the plain three-way join looked the bucket's objects up by bucket_id alone
// and filtered them by key, so every read scanned the keys sorting before its own.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createPool, type Db } from "../db/pool.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";
import { blobstoreProjection } from "../projections/blobstore/read-models.ts";
import { PUBLIC_OBJECTS_SQL, Queries } from "../projections/blobstore/queries.ts";
import { KIND } from "../schemas/blobstore/events.ts";

let tdb: TestDatabase;
let db: Db;

beforeAll(async () => {
  tdb = await createTestDatabase("bs_lookup");
  db = createPool(tdb.url, 2);
  await blobstoreProjection(KIND.bucket).migrate(db);
  await blobstoreProjection(KIND.blob).migrate(db);
  await db.query(`INSERT INTO bs_buckets (name, bucket_id, account_id, description, metadata, created_at, updated_at, seq)
                  VALUES ('full', 'b-full', 'acct', '', '{}', now(), now(), 1), ('other', 'b-other', 'acct', '', '{}', now(), now(), 2)`);
  await db.query(`INSERT INTO bs_objects (object_id, bucket, bucket_id, account_id, key, blob_id, size, md5, content_type, created_at, updated_at, seq)
                  SELECT 'o' || i, 'full', 'b-full', 'acct', 'a/' || i, 'blob' || i, i, 'md5', 'text/plain', now(), now(), 2 + i
                  FROM generate_series(1, 5000) i`);
  await db.query(`INSERT INTO bs_objects (object_id, bucket, bucket_id, account_id, key, blob_id, size, md5, content_type, created_at, updated_at, seq)
                  VALUES ('ot', 'full', 'b-full', 'acct', 'z/target', 'blob-t', 7, 'md5t', 'text/plain', now(), now(), 9000)`);
}, 60_000);
afterAll(async () => {
  await db?.end();
  await tdb?.drop();
});

it("answers each pair of a batch with its own object, or null", async () => {
  const q = new Queries(db);
  const [target, early, elsewhere, missing] = await Promise.all([
    q.publicObject("full", "z/target"),
    q.publicObject("full", "a/17"),
    q.publicObject("other", "z/target"),
    q.publicObject("nope", "a/1"),
  ]);
  expect(target).toMatchObject({ blob_id: "blob-t", size: 7, md5: "md5t", content_type: "text/plain" });
  expect(early).toMatchObject({ blob_id: "blob17", size: 17 });
  expect(elsewhere).toBeNull();
  expect(missing).toBeNull();
});

it("finds the object by bucket and key in the index, not by scanning the bucket, under a generic plan", async () => {
  const c = await db.connect();
  try {
    await c.query("SET plan_cache_mode = force_generic_plan");
    await c.query(`PREPARE lookup(text[], text[]) AS ${PUBLIC_OBJECTS_SQL}`);
    const plan = (await c.query("EXPLAIN EXECUTE lookup('{full}', '{z/target}')")).rows.map((r) => r["QUERY PLAN"] as string).join("\n");
    expect(plan).toMatch(/Index Cond: \(\(bucket_id = b\.bucket_id\) AND \(key = /);
    expect(plan).not.toMatch(/Filter: .*key/);
  } finally {
    await c.query("DEALLOCATE ALL; RESET plan_cache_mode");
    c.release();
  }
});
