// The console's read models, built from `evt.console.>` by the projection runtime (checkpoint in the same
// transaction as the writes). Two projections, so their lag is independent:
//   console         users, spaces and members, API keys, buckets, files (with upload status), storage accounting
//   console_access  the access index: which service-key addresses each bucket policy grants, mirrored from the
//                   on-chain objects carried by bucket.policy_created and sponsor.executed events. Uploads and
//                   downloads of private buckets check it; until it has caught up with a grant they answer
//                   403 mirror_missing_grant (spec/console.md, Errors).
// Files are folded per batch (one insert for new files and one update for the rest), so a burst of uploads costs
// two statements per batch, not several per event.
import type { Projection } from "../runtime.ts";
import { prepared, type Db, type Tx } from "../../db/pool.ts";
import type { StoredEvent } from "../../schemas/envelope.ts";
import type { StoredObject } from "../../schemas/chain.ts";
import type { AccessGroupFields, BucketPolicyFields } from "../../schemas/chain.ts";
import {
  CONSOLE_EVENTS_FILTER,
  EV,
  type BucketCreated,
  type BucketFinalizeFailed,
  type BucketPolicyCreated,
  type BucketReserved,
  type BucketUpdated,
  type FileDeleted,
  type KeyMinted,
  type SpaceState,
  type SponsorExecuted,
  type UploadCompleted,
  type UploadFailed,
  type UploadQueued,
  type UserState,
} from "../../schemas/console/events.ts";

export const CONSOLE_PROJECTION = "console";
export const ACCESS_PROJECTION = "console_access";

const idOf = (aggregate: string) => aggregate.slice(aggregate.lastIndexOf(".") + 1);

const FILE_INDEXES: readonly [string, string][] = [
  ["date", "created_at"],
  ["name", "lower(name)"],
  ["size", "size"],
  ["type", "mime_type"],
];

async function migrateConsole(db: Db): Promise<void> {
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
        // the index of this sort before lower(name) was a key column
        await db.query(`DROP INDEX IF EXISTS console_files_${scope}_${name}`);
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

/** Files folded over one batch: a complete row for files first seen in it, changed columns for the others. */
interface FilePatch {
  insert?: UploadQueued;
  status?: string;
  upload_state?: string;
  upload_progress?: number;
  upload_error?: UploadFailed;
  storage_object_id?: string;
  upload_finished_at?: string;
  deleted_at?: string;
  updated_at: string;
}

const STATUS_RANK: Record<string, number> = { uploading: 0, completed: 1, failed: 1, deleting: 2, deleted: 3 };

function foldStatus(p: FilePatch, status: string) {
  if (p.status === undefined || STATUS_RANK[status] >= STATUS_RANK[p.status]) p.status = status;
}

export const consoleProjection: Projection = {
  name: CONSOLE_PROJECTION,
  filter: CONSOLE_EVENTS_FILTER,
  migrate: migrateConsole,
  reset: async (tx: Tx) => {
    await tx.query("TRUNCATE console_users, console_spaces, console_members, console_keys, console_buckets, console_files");
  },
  apply: async (tx: Tx, events: readonly StoredEvent[]) => {
    const files = new Map<string, FilePatch>();
    const bucketDelta = new Map<string, { bytes: number; files: number }>();
    const spaceDelta = new Map<string, { bytes: number; buckets: number }>();
    const addBucket = (id: string, bytes: number, files: number) => {
      const d = bucketDelta.get(id) ?? { bytes: 0, files: 0 };
      d.bytes += bytes;
      d.files += files;
      bucketDelta.set(id, d);
    };
    const addSpace = (id: string, bytes: number, buckets: number) => {
      const d = spaceDelta.get(id) ?? { bytes: 0, buckets: 0 };
      d.bytes += bytes;
      d.buckets += buckets;
      spaceDelta.set(id, d);
    };
    const patch = (id: string, at: string) => {
      let p = files.get(id);
      if (!p) files.set(id, (p = { updated_at: at }));
      p.updated_at = at;
      return p;
    };

    for (const { event } of events) {
      const id = idOf(event.aggregate);
      const at = event.occurred_at;
      switch (event.type) {
        case EV.userSignedUp: {
          const u = event.data as UserState;
          await tx.query(
            `INSERT INTO console_users (user_id, email, name, personal_space_id, created_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (user_id) DO UPDATE SET email = EXCLUDED.email, name = EXCLUDED.name`,
            [u.user_id, u.email, u.name, u.personal_space_id, u.created_at],
          );
          break;
        }
        case EV.spaceCreated:
        case EV.spaceMemberAdded:
        case EV.spaceMemberRemoved: {
          const s = event.data as SpaceState;
          await tx.query(
            `INSERT INTO console_spaces (space_id, type, name, tier, storage_cap, member_count, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (space_id) DO UPDATE SET name = EXCLUDED.name, tier = EXCLUDED.tier, storage_cap = EXCLUDED.storage_cap, member_count = EXCLUDED.member_count`,
            [s.space_id, s.type, s.name, s.tier, s.storage_cap, s.members.length, s.created_at],
          );
          await tx.query("DELETE FROM console_members WHERE space_id = $1", [s.space_id]);
          if (s.members.length) {
            await tx.query(
              `INSERT INTO console_members (space_id, user_id, role, added_at)
               SELECT $1, u, r, a FROM unnest($2::uuid[], $3::text[], $4::timestamptz[]) AS x(u, r, a)`,
              [s.space_id, s.members.map((m) => m.user_id), s.members.map((m) => m.role), s.members.map((m) => m.added_at)],
            );
          }
          break;
        }
        case EV.keyMinted: {
          const k = event.data as KeyMinted;
          await tx.query(
            `INSERT INTO console_keys (key_id, user_id, role, hash, prefix, label, space_id, service_address, state, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'registering', $9) ON CONFLICT (key_id) DO NOTHING`,
            [k.key_id, k.user_id, k.role, k.hash, k.prefix, k.label, k.space_id, k.service_address, k.created_at],
          );
          break;
        }
        case EV.keyActivated:
        case EV.keyRejected:
        case EV.keyRevokeRequested:
        case EV.keyRevoked: {
          const state = { [EV.keyActivated]: "active", [EV.keyRejected]: "rejected", [EV.keyRevokeRequested]: "revoking", [EV.keyRevoked]: "revoked" }[event.type];
          await tx.query("UPDATE console_keys SET state = $2, revoked_at = CASE WHEN $2 = 'revoked' THEN $3::timestamptz ELSE revoked_at END WHERE key_id = $1", [id, state, at]);
          break;
        }
        case EV.bucketCreated:
        case EV.bucketReserved: {
          const b = event.data as BucketCreated & Partial<BucketReserved>;
          const r = await tx.query(
            `INSERT INTO console_buckets (bucket_id, space_id, name, storage_bucket_name, visibility, state, reserve_digest, created_by, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) ON CONFLICT (bucket_id) DO NOTHING`,
            [b.bucket_id, b.space_id, b.name, b.storage_bucket_name, b.visibility, event.type === EV.bucketReserved ? "pending_policy" : "provisioning", b.digest ?? null, b.created_by, b.created_at],
          );
          if (r.rowCount) addSpace(b.space_id, 0, 1);
          break;
        }
        case EV.bucketFinalizeRequested:
          await tx.query("UPDATE console_buckets SET state = 'finalizing', last_error = NULL WHERE bucket_id = $1", [id]);
          break;
        case EV.bucketFinalizeFailed:
          await tx.query("UPDATE console_buckets SET state = 'pending_policy', last_error = $2 WHERE bucket_id = $1", [id, JSON.stringify(event.data as BucketFinalizeFailed)]);
          break;
        case EV.bucketPolicyCreated:
          await tx.query("UPDATE console_buckets SET state = 'provisioning', encryption_policy_id = $2, updated_at = $3 WHERE bucket_id = $1", [id, (event.data as BucketPolicyCreated).policy_id, at]);
          break;
        case EV.bucketActivated:
          await tx.query("UPDATE console_buckets SET state = 'active', updated_at = $2 WHERE bucket_id = $1 AND state <> 'deleted'", [id, at]);
          break;
        case EV.bucketUpdated: {
          const u = event.data as BucketUpdated;
          await tx.query(
            `UPDATE console_buckets SET name = coalesce($2, name),
               encryption_policy_id = CASE WHEN $3 THEN $4 ELSE encryption_policy_id END, updated_at = $5 WHERE bucket_id = $1`,
            [id, u.name ?? null, u.encryption_policy_id !== undefined, u.encryption_policy_id ?? null, u.updated_at],
          );
          break;
        }
        case EV.bucketDeleteRequested:
          await tx.query("UPDATE console_buckets SET state = 'deleting', updated_at = $2 WHERE bucket_id = $1", [id, at]);
          break;
        case EV.bucketDeleted: {
          const r = await tx.query<{ space_id: string }>("UPDATE console_buckets SET state = 'deleted', updated_at = $2 WHERE bucket_id = $1 AND state <> 'deleted' RETURNING space_id::text", [id, at]);
          if (r.rows[0]) addSpace(r.rows[0].space_id, 0, -1);
          break;
        }
        case EV.uploadQueued: {
          const p = patch(id, at);
          p.insert = event.data as UploadQueued;
          foldStatus(p, "uploading");
          p.upload_state = "queued";
          p.upload_progress = 0;
          break;
        }
        case EV.uploadStarted: {
          const p = patch(id, at);
          p.upload_state = "active";
          break;
        }
        case EV.uploadCompleted: {
          const d = event.data as UploadCompleted;
          const p = patch(id, at);
          Object.assign(p, { upload_state: "completed", upload_progress: 1, storage_object_id: d.storage_object_id, upload_finished_at: d.completed_at });
          foldStatus(p, "completed");
          addBucket(d.bucket_id, d.size, 1);
          addSpace(d.space_id, d.size, 0);
          break;
        }
        case EV.uploadFailed: {
          const d = event.data as UploadFailed;
          const p = patch(id, at);
          Object.assign(p, { upload_state: "failed", upload_error: d, upload_finished_at: d.failed_at });
          foldStatus(p, "failed");
          break;
        }
        case EV.fileDeleteRequested:
          foldStatus(patch(id, at), "deleting");
          break;
        case EV.fileDeleted: {
          const d = event.data as FileDeleted;
          const p = patch(id, at);
          foldStatus(p, "deleted");
          p.deleted_at = d.deleted_at;
          if (d.size > 0) {
            addBucket(d.bucket_id, -d.size, -1);
            addSpace(d.space_id, -d.size, 0);
          }
          break;
        }
        default:
          break;
      }
    }

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
  },
};

// ------------------------------------------------------------------ access index

/** The event types the access index reads, as they appear in a commit's JSON. */
const ACCESS_TYPES = [EV.bucketPolicyCreated, EV.sponsorExecuted].map((t) => Buffer.from(JSON.stringify(t)));

export const accessIndexProjection: Projection = {
  name: ACCESS_PROJECTION,
  filter: CONSOLE_EVENTS_FILTER,
  // It follows every console commit (one filter per consumer) but reads only two event types: the rest — uploads,
  // name claims, most of the traffic — are not decoded.
  wants: (raw) => {
    const commit = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    return ACCESS_TYPES.some((t) => commit.includes(t));
  },
  migrate: async (db: Db) => {
    await db.query(`
      CREATE TABLE IF NOT EXISTS console_policy_objects (
        object_id text PRIMARY KEY, policy_id text NOT NULL, kind text NOT NULL, version numeric NOT NULL, fields jsonb NOT NULL);
      CREATE INDEX IF NOT EXISTS console_policy_objects_policy ON console_policy_objects (policy_id);
      CREATE TABLE IF NOT EXISTS console_access (
        policy_id text NOT NULL, address text NOT NULL, scope text NOT NULL, source text NOT NULL, PRIMARY KEY (policy_id, address, source));
      CREATE INDEX IF NOT EXISTS console_access_address ON console_access (address);
    `);
  },
  reset: async (tx: Tx) => {
    await tx.query("TRUNCATE console_policy_objects, console_access");
  },
  apply: async (tx: Tx, events: readonly StoredEvent[]) => {
    const touched = new Set<string>();
    const store = async (o: StoredObject) => {
      const isPolicy = o.type.endsWith("::bucket_policy::BucketPolicy");
      const isGroup = o.type.endsWith("::bucket_policy::AccessGroup");
      if (!isPolicy && !isGroup) return;
      const policyId = isPolicy ? o.object_id : (o.fields as AccessGroupFields).policy_id;
      await tx.query(
        `INSERT INTO console_policy_objects (object_id, policy_id, kind, version, fields) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (object_id) DO UPDATE SET fields = EXCLUDED.fields, version = EXCLUDED.version
         WHERE console_policy_objects.version < EXCLUDED.version`,
        [o.object_id, policyId, isPolicy ? "policy" : "group", o.version, JSON.stringify(o.fields)],
      );
      touched.add(policyId);
    };
    for (const { event } of events) {
      if (event.type === EV.bucketPolicyCreated) await store((event.data as BucketPolicyCreated).policy);
      else if (event.type === EV.sponsorExecuted) for (const o of (event.data as SponsorExecuted).objects) await store(o);
    }
    for (const policyId of touched) {
      const r = await tx.query<{ object_id: string; kind: string; fields: BucketPolicyFields & AccessGroupFields }>(
        "SELECT object_id, kind, fields FROM console_policy_objects WHERE policy_id = $1",
        [policyId],
      );
      const rows: [string, string, string][] = [];
      for (const o of r.rows) {
        const source = o.kind === "policy" ? "policy" : o.object_id;
        for (const a of o.fields.admins ?? []) rows.push([a, "readwrite", source]);
        if (o.kind === "group") for (const m of o.fields.members ?? []) if (!o.fields.admins.includes(m.address)) rows.push([m.address, m.scope, source]);
      }
      await tx.query("DELETE FROM console_access WHERE policy_id = $1", [policyId]);
      if (rows.length) {
        await tx.query(
          `INSERT INTO console_access (policy_id, address, scope, source) SELECT $1, a, s, src FROM unnest($2::text[], $3::text[], $4::text[]) AS x(a, s, src)
           ON CONFLICT DO NOTHING`,
          [policyId, rows.map((x) => x[0]), rows.map((x) => x[1]), rows.map((x) => x[2])],
        );
      }
    }
  },
};

/** The console's read models, in the order `memrelay replay all` rebuilds them. */
export const consoleProjections: readonly Projection[] = [consoleProjection, accessIndexProjection];
