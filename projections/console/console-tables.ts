// The tables and indexes of the console projection (./read-models.ts).
import type { Db } from "../../db/pool.ts";

const FILE_INDEXES: readonly [string, string][] = [
  ["date", "created_at"],
  ["name", "lower(name)"],
  ["size", "size"],
  ["type", "mime_type"],
];

export async function migrateConsole(db: Db): Promise<void> {
  await db.query("CREATE EXTENSION IF NOT EXISTS pg_trgm").catch(() => undefined);
  await db.query(`
    CREATE TABLE IF NOT EXISTS console_users (
      user_id uuid PRIMARY KEY, email text NOT NULL, name text NOT NULL, personal_space_id uuid NOT NULL, created_at timestamptz NOT NULL);
    CREATE INDEX IF NOT EXISTS console_users_email ON console_users (lower(email));
    CREATE TABLE IF NOT EXISTS console_spaces (
      space_id uuid PRIMARY KEY, type text NOT NULL, name text NOT NULL, tier text NOT NULL, storage_cap bigint NOT NULL,
      storage_used bigint NOT NULL DEFAULT 0, bucket_count int NOT NULL DEFAULT 0, member_count int NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL);
    CREATE TABLE IF NOT EXISTS console_members (
      space_id uuid NOT NULL, user_id uuid NOT NULL, role text NOT NULL, added_at timestamptz NOT NULL, PRIMARY KEY (space_id, user_id));
    CREATE INDEX IF NOT EXISTS console_members_user ON console_members (user_id);
    CREATE TABLE IF NOT EXISTS console_keys (
      key_id uuid PRIMARY KEY, user_id uuid NOT NULL, role text NOT NULL, hash text NOT NULL, prefix text NOT NULL, label text,
      space_id uuid, service_address text, state text NOT NULL, created_at timestamptz NOT NULL, revoked_at timestamptz);
    CREATE INDEX IF NOT EXISTS console_keys_hash ON console_keys (hash);
    CREATE INDEX IF NOT EXISTS console_keys_user ON console_keys (user_id);
    CREATE TABLE IF NOT EXISTS console_buckets (
      bucket_id uuid PRIMARY KEY, space_id uuid NOT NULL, name text NOT NULL, storage_bucket_name text NOT NULL,
      visibility text NOT NULL, state text NOT NULL, encryption_policy_id text, storage_used bigint NOT NULL DEFAULT 0,
      file_count int NOT NULL DEFAULT 0, reserve_digest text, last_error jsonb, created_by uuid,
      created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL);
    CREATE INDEX IF NOT EXISTS console_buckets_date ON console_buckets (space_id, created_at, bucket_id) WHERE state <> 'deleted';
    CREATE INDEX IF NOT EXISTS console_buckets_name ON console_buckets (space_id, lower(name), bucket_id) WHERE state <> 'deleted';
    CREATE INDEX IF NOT EXISTS console_buckets_storage ON console_buckets (space_id, storage_used, bucket_id) WHERE state <> 'deleted';
    CREATE TABLE IF NOT EXISTS console_files (
      file_id uuid PRIMARY KEY, bucket_id uuid NOT NULL, space_id uuid NOT NULL, name text NOT NULL, blob_id text NOT NULL,
      storage_object_id text, storage_bucket_name text NOT NULL, storage_key text NOT NULL, size bigint NOT NULL,
      mime_type text NOT NULL, status text NOT NULL, is_private boolean NOT NULL, metadata jsonb NOT NULL,
      name_claim text NOT NULL, upload_state text NOT NULL, upload_progress real, upload_error jsonb,
      upload_finished_at timestamptz, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, deleted_at timestamptz);
  `);
  for (const scope of ["space", "bucket"]) {
    for (const [name, expr] of FILE_INDEXES) {
      // A substring search walks these in sort order without touching the table (index-only): lower(name) as a key
      // column is tested as stored (a filter on a column only INCLUDEd computes lower() for every row walked, 2–3×
      // slower); INCLUDE (name) lets the planner treat lower(name) as available at all.
      if (name === "name") {
        await db.query(`CREATE INDEX IF NOT EXISTS console_files_${scope}_name ON console_files (${scope}_id, lower(name), file_id) INCLUDE (name) WHERE status <> 'deleted'`);
      } else {
        await db.query(`CREATE INDEX IF NOT EXISTS console_files_${scope}_${name}_lc ON console_files (${scope}_id, ${expr}, file_id, lower(name)) INCLUDE (name) WHERE status <> 'deleted'`);
      }
    }
  }
  // Substring search within a space or a bucket: trigram GIN indexes led by the scope (btree_gin), so a rare term
  // is found among the scope's files only; without the extensions, searches fall back to scanning the sort order.
  await db.query("CREATE EXTENSION IF NOT EXISTS btree_gin").catch(() => undefined);
  for (const scope of ["space", "bucket"]) {
    await db
      .query(`CREATE INDEX IF NOT EXISTS console_files_${scope}_name_trgm ON console_files USING gin (${scope}_id, lower(name) gin_trgm_ops) WHERE status <> 'deleted'`)
      .catch(() => undefined);
  }
  await db.query("CREATE INDEX IF NOT EXISTS console_files_uploading ON console_files (space_id) WHERE status = 'uploading'");
}
