// The console projection's writes of files (./read-models.ts): folded per batch, so a burst of uploads costs one
// insert for the new files and one update for the rest, with the batch's storage accounting riding along.
import { prepared, type Tx } from "../../db/pool.ts";
import type { UploadQueued } from "../../schemas/console/events.ts";
import type { UploadProgress } from "../../schemas/console/upload-view.ts";

/** Files folded over one batch: a complete row for files first seen in it, changed columns for the others. */
export interface FilePatch extends Partial<UploadProgress> {
  insert?: UploadQueued;
  status?: string;
  deleted_at?: string;
  updated_at: string;
}

const STATUS_RANK: Record<string, number> = { uploading: 0, completed: 1, failed: 1, deleting: 2, deleted: 3 };

export function foldStatus(p: FilePatch, status: string) {
  if (p.status === undefined || STATUS_RANK[status] >= STATUS_RANK[p.status]) p.status = status;
}

/** Changes of a batch to buckets' and spaces' storage accounting, by id. */
export type BucketDeltas = Map<string, { bytes: number; files: number }>;
export type SpaceDeltas = Map<string, { bytes: number; buckets: number }>;

/** Writes the files folded over one batch, and the batch's storage accounting. */
export async function writeFileBatch(tx: Tx, files: ReadonlyMap<string, FilePatch>, bucketDelta: BucketDeltas, spaceDelta: SpaceDeltas): Promise<void> {
  // Storage accounting of buckets and spaces, as CTEs of the batch's first file statement (one round trip
  // less each); whatever no file statement carried runs on its own at the end. Returns "" once taken.
  const accounting = (first: number): { sql: string; params: unknown[] } => {
    if (!bucketDelta.size && !spaceDelta.size) return { sql: "", params: [] };
    const b = [...bucketDelta.entries()];
    const sp = [...spaceDelta.entries()];
    bucketDelta.clear();
    spaceDelta.clear();
    const $ = (k: number) => `$${first + k}`;
    return {
      sql: `, acc_b AS (UPDATE console_buckets AS b SET storage_used = greatest(0, b.storage_used + x.bytes), file_count = greatest(0, b.file_count + x.files)
           FROM unnest(${$(0)}::uuid[], ${$(1)}::bigint[], ${$(2)}::int[]) AS x(id, bytes, files) WHERE b.bucket_id = x.id RETURNING 1),
         acc_s AS (UPDATE console_spaces AS s SET storage_used = greatest(0, s.storage_used + x.bytes), bucket_count = greatest(0, s.bucket_count + x.buckets)
           FROM unnest(${$(3)}::uuid[], ${$(4)}::bigint[], ${$(5)}::int[]) AS x(id, bytes, buckets) WHERE s.space_id = x.id RETURNING 1)`,
      params: [b.map(([k]) => k), b.map(([, d]) => d.bytes), b.map(([, d]) => d.files), sp.map(([k]) => k), sp.map(([, d]) => d.bytes), sp.map(([, d]) => d.buckets)],
    };
  };
  if (files.size) {
    // Files first seen in this batch are inserted with the state the batch leaves them in (one row version
    // instead of an insert and an update in the same transaction); the others are updated.
    const fresh = [...files.entries()].filter(([, p]) => p.insert);
    const inserted = new Set<string>();
    if (fresh.length) {
      const col = <T>(f: (u: UploadQueued, p: FilePatch) => T) => fresh.map(([, p]) => f(p.insert!, p));
      const acc = accounting(22);
      const r = await tx.query<{ id: string }>(prepared(
        `WITH ins AS (INSERT INTO console_files (file_id, bucket_id, space_id, name, blob_id, storage_bucket_name, storage_key, size, mime_type,
           status, is_private, metadata, name_claim, upload_state, upload_progress, upload_error, storage_object_id, upload_finished_at,
           deleted_at, created_at, updated_at)
         SELECT f, b, s, n, bl, sb, sk, sz, mt, st, pr, md, nc, us, up, ue, so, uf, da, ca, greatest(ca, ua)
         FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[],
           $10::text[], $11::boolean[], $12::jsonb[], $13::text[], $14::text[], $15::real[], $16::jsonb[], $17::text[], $18::timestamptz[],
           $19::timestamptz[], $20::timestamptz[], $21::timestamptz[]) AS x(f, b, s, n, bl, sb, sk, sz, mt, st, pr, md, nc, us, up, ue, so, uf, da, ca, ua)
         ON CONFLICT (file_id) DO NOTHING RETURNING file_id::text AS id)${acc.sql}
         SELECT id FROM ins`,
        [
          col((u) => u.file_id),
          col((u) => u.bucket_id),
          col((u) => u.space_id),
          col((u) => u.name),
          col((u) => u.blob_id),
          col((u) => u.storage_bucket_name),
          col((u) => u.storage_key),
          col((u) => u.size),
          col((u) => u.mime_type),
          col((_u, p) => p.status ?? "uploading"),
          col((u) => u.is_private),
          col((u) => JSON.stringify(u.metadata)),
          col((u) => u.name_claim),
          col((_u, p) => p.upload_state ?? "queued"),
          col((_u, p) => p.upload_progress ?? 0),
          col((_u, p) => (p.upload_error ? JSON.stringify({ code: p.upload_error.code, message: p.upload_error.message }) : null)),
          col((_u, p) => p.storage_object_id ?? null),
          col((_u, p) => p.upload_finished_at ?? null),
          col((_u, p) => p.deleted_at ?? null),
          col((u) => u.created_at),
          col((_u, p) => p.updated_at),
          ...acc.params,
        ],
      ));
      for (const row of r.rows) inserted.add(row.id);
    }
    const list = [...files.entries()].filter(([id]) => !inserted.has(id));
    if (list.length) {
      const acc = accounting(10);
      await tx.query(prepared(
        `${acc.sql ? `WITH ${acc.sql.slice(2)} ` : ""}UPDATE console_files AS f SET
           status = CASE WHEN x.status IS NULL THEN f.status
                         WHEN (CASE f.status WHEN 'deleted' THEN 3 WHEN 'deleting' THEN 2 WHEN 'uploading' THEN 0 ELSE 1 END) >
                              (CASE x.status WHEN 'deleted' THEN 3 WHEN 'deleting' THEN 2 WHEN 'uploading' THEN 0 ELSE 1 END) THEN f.status
                         ELSE x.status END,
           upload_state = coalesce(x.upload_state, f.upload_state),
           upload_progress = coalesce(x.upload_progress, f.upload_progress),
           upload_error = coalesce(x.upload_error, f.upload_error),
           storage_object_id = coalesce(x.storage_object_id, f.storage_object_id),
           upload_finished_at = coalesce(x.upload_finished_at, f.upload_finished_at),
           deleted_at = coalesce(x.deleted_at, f.deleted_at),
           updated_at = greatest(f.updated_at, x.updated_at)
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::real[], $5::jsonb[], $6::text[], $7::timestamptz[], $8::timestamptz[], $9::timestamptz[])
           AS x(id, status, upload_state, upload_progress, upload_error, storage_object_id, upload_finished_at, deleted_at, updated_at)
         WHERE f.file_id = x.id`,
        [
          list.map(([id]) => id),
          list.map(([, p]) => p.status ?? null),
          list.map(([, p]) => p.upload_state ?? null),
          list.map(([, p]) => p.upload_progress ?? null),
          list.map(([, p]) => (p.upload_error ? JSON.stringify({ code: p.upload_error.code, message: p.upload_error.message }) : null)),
          list.map(([, p]) => p.storage_object_id ?? null),
          list.map(([, p]) => p.upload_finished_at ?? null),
          list.map(([, p]) => p.deleted_at ?? null),
          list.map(([, p]) => p.updated_at),
          ...acc.params,
        ],
      ));
    }
  }
  if (bucketDelta.size || spaceDelta.size) {
    const acc = accounting(1);
    await tx.query(`WITH ${acc.sql.slice(2)} SELECT 1`, acc.params);
  }
}
