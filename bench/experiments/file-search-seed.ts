// Seeds a throwaway database the way bench/console.ts seeds its list measurement (100,000 files in one space, 10
// buckets, five name kinds in turn, one second apart), directly in SQL instead of through the event log, so the
// file search's plans can be examined with EXPLAIN (ANALYZE, BUFFERS). Prints the database URL.
//   node --import tsx bench/experiments/file-search-seed.ts [files]
import { createPool } from "../../db/pool.ts";
import { createTestDatabase } from "../../test/support/postgres.ts";
import { consoleProjection } from "../../projections/console/read-models.ts";

const files = Number(process.argv[2] ?? 100_000);
const database = await createTestDatabase("memrelay_exp_files");
const db = createPool(database.url, 2);
await consoleProjection.migrate(db);
// (columns as wide as the bench's: the trigram step reads whole table rows, so their width is part of its cost)
await db.query(
  `INSERT INTO console_files (file_id, bucket_id, space_id, name, blob_id, storage_object_id, storage_bucket_name, storage_key, size, mime_type,
     status, is_private, metadata, name_claim, upload_state, upload_progress, upload_finished_at, created_at, updated_at)
   SELECT f, b, '11111111-1111-1111-1111-111111111111',
     (ARRAY['IMG_', 'report-', 'notes ', 'dataset_', 'clip-'])[i % 5 + 1] || lpad(i::text, 6, '0') || (ARRAY['.jpg', '.pdf', '.md', '.parquet', '.mp4'])[i % 5 + 1],
     rtrim(translate(encode(sha256(f::text::bytea), 'base64'), '+/', '-_'), '='), '0x' || repeat('0', 64), 'memrelay-console-' || b, f::text,
     1000 + (i::bigint * 7919) % 5000000,
     (ARRAY['image/jpeg', 'application/pdf', 'text/markdown', 'application/octet-stream', 'video/mp4'])[i % 5 + 1],
     'completed', true, jsonb_build_object('seq', i), 'f-' || b || '-' || i, 'completed', 1,
     timestamptz '2026-01-01' + i * interval '1 second', timestamptz '2026-01-01' + i * interval '1 second', timestamptz '2026-01-01' + i * interval '1 second'
   FROM (SELECT i, gen_random_uuid() AS f, ('00000000-0000-0000-0000-00000000000' || (i % 10))::uuid AS b FROM generate_series(0, $1::int - 1) i) x`,
  [files],
);
await db.query("VACUUM ANALYZE console_files");
console.log(database.url);
await db.end();
