// Read models of the blob storage service, one projection per aggregate kind (a projection follows one subject
// filter, so each stays self-contained: no projection reads another's tables while applying). Rows are upserted
// from the full state every event carries; a replay from sequence 1 rebuilds the same rows.
//
//   blobstore_apps      evt.bs_app.>      bs_apps
//   blobstore_keys      evt.bs_key.>      bs_keys              (admin keys, data API keys, S3 access keys)
//   blobstore_accounts  evt.bs_account.>  bs_accounts
//   blobstore_buckets   evt.bs_bucket.>   bs_buckets           (live buckets only; name is globally unique)
//   blobstore_blobs     evt.bs_blob.>     bs_objects, bs_walrus_objects, bs_contents (reference counts)
//
// Operational tables that a replay does not rebuild (and does not clear): bs_key_usage (last-used time per key,
// written by the gateway) and bs_gc_queue (blob ids whose last reference went away, drained by the sweeper).
import { inTransaction, prepared, type Db, type Tx } from "../../db/pool.ts";
import type { Projection } from "../runtime.ts";
import type { StoredEvent } from "../../schemas/envelope.ts";
import { EVT, KIND, filterOf, type BlobstoreEvent, type Kind } from "../../schemas/blobstore/events.ts";

const run = (tx: Tx, text: string, values: unknown[]) => tx.query(prepared(text, values));

const SQL = {
  upsertApp: `INSERT INTO bs_apps (app_id, created_at, seq) VALUES ($1, $2, $3)
    ON CONFLICT (app_id) DO UPDATE SET created_at = EXCLUDED.created_at, seq = EXCLUDED.seq`,
  upsertKey: `INSERT INTO bs_keys (key_id, kind, app_id, account_id, hash, prefix, label, created_at, revoked_at, sealed_secret, seq)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    ON CONFLICT (key_id) DO UPDATE SET kind = EXCLUDED.kind, app_id = EXCLUDED.app_id, account_id = EXCLUDED.account_id,
      hash = EXCLUDED.hash, prefix = EXCLUDED.prefix, label = EXCLUDED.label, created_at = EXCLUDED.created_at,
      revoked_at = EXCLUDED.revoked_at, sealed_secret = EXCLUDED.sealed_secret, seq = EXCLUDED.seq`,
  upsertAccount: `INSERT INTO bs_accounts (account_id, app_id, name, created_at, seq) VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (account_id) DO UPDATE SET app_id = EXCLUDED.app_id, name = EXCLUDED.name, created_at = EXCLUDED.created_at, seq = EXCLUDED.seq`,
  upsertBucket: `INSERT INTO bs_buckets (name, bucket_id, account_id, description, metadata, created_at, updated_at, seq)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
    ON CONFLICT (name) DO UPDATE SET bucket_id = EXCLUDED.bucket_id, account_id = EXCLUDED.account_id, description = EXCLUDED.description,
      metadata = EXCLUDED.metadata, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, seq = EXCLUDED.seq`,
  deleteBucket: `DELETE FROM bs_buckets WHERE name = $1 AND bucket_id = $2`,
};

const MIGRATIONS: Record<Kind, string[]> = {
  [KIND.app]: [`CREATE TABLE IF NOT EXISTS bs_apps (app_id text PRIMARY KEY, created_at timestamptz NOT NULL, seq bigint NOT NULL)`],
  [KIND.key]: [
    `CREATE TABLE IF NOT EXISTS bs_keys (
      key_id text PRIMARY KEY, kind text NOT NULL, app_id text NOT NULL, account_id text,
      hash text NOT NULL, prefix text NOT NULL, label text, created_at timestamptz NOT NULL, revoked_at timestamptz,
      sealed_secret text, seq bigint NOT NULL)`,
    `CREATE UNIQUE INDEX IF NOT EXISTS bs_keys_hash ON bs_keys (hash, kind)`,
    `CREATE INDEX IF NOT EXISTS bs_keys_app ON bs_keys (app_id, kind, created_at)`,
    `CREATE INDEX IF NOT EXISTS bs_keys_account ON bs_keys (account_id, kind, created_at)`,
    `CREATE TABLE IF NOT EXISTS bs_key_usage (key_id text PRIMARY KEY, last_used_at timestamptz NOT NULL)`,
  ],
  [KIND.account]: [
    `CREATE TABLE IF NOT EXISTS bs_accounts (account_id text PRIMARY KEY, app_id text NOT NULL, name text, created_at timestamptz NOT NULL, seq bigint NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS bs_accounts_app ON bs_accounts (app_id, created_at)`,
  ],
  [KIND.bucket]: [
    `CREATE TABLE IF NOT EXISTS bs_buckets (
      name text PRIMARY KEY, bucket_id text NOT NULL UNIQUE, account_id text NOT NULL, description text NOT NULL,
      metadata jsonb NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, seq bigint NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS bs_buckets_account ON bs_buckets (account_id, name)`,
  ],
  [KIND.blob]: [
    `CREATE TABLE IF NOT EXISTS bs_objects (
      object_id text PRIMARY KEY, bucket text NOT NULL, bucket_id text NOT NULL, account_id text NOT NULL,
      key text COLLATE "C" NOT NULL, blob_id text NOT NULL, size bigint NOT NULL, md5 text NOT NULL, content_type text NOT NULL,
      created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, seq bigint NOT NULL)`,
    `CREATE UNIQUE INDEX IF NOT EXISTS bs_objects_key ON bs_objects (bucket_id, key)`,
    `CREATE TABLE IF NOT EXISTS bs_walrus_objects (
      object_id text PRIMARY KEY, blob_id text NOT NULL, size bigint NOT NULL, encoding_type text NOT NULL,
      registered_epoch integer NOT NULL, certified_epoch integer NOT NULL, end_epoch integer NOT NULL, deletable boolean NOT NULL,
      owner text NOT NULL, storage_id text NOT NULL, storage_size bigint NOT NULL, created_at timestamptz NOT NULL, seq bigint NOT NULL)`,
    `CREATE INDEX IF NOT EXISTS bs_walrus_blob ON bs_walrus_objects (blob_id, end_epoch)`,
    `CREATE TABLE IF NOT EXISTS bs_contents (blob_id text PRIMARY KEY, size bigint NOT NULL, refs integer NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS bs_gc_queue (blob_id text PRIMARY KEY, enqueued_at timestamptz NOT NULL)`,
    `CREATE OR REPLACE FUNCTION bs_decref(b text) RETURNS void LANGUAGE plpgsql AS $$
     DECLARE r integer;
     BEGIN
       UPDATE bs_contents SET refs = refs - 1 WHERE blob_id = b RETURNING refs INTO r;
       IF r IS NOT NULL AND r <= 0 THEN
         DELETE FROM bs_contents WHERE blob_id = b AND refs <= 0;
         INSERT INTO bs_gc_queue (blob_id, enqueued_at) VALUES (b, now()) ON CONFLICT (blob_id) DO UPDATE SET enqueued_at = now();
       END IF;
     END $$`,
    `CREATE OR REPLACE FUNCTION bs_incref(b text, sz bigint) RETURNS void LANGUAGE sql AS $$
       INSERT INTO bs_contents (blob_id, size, refs) VALUES (b, sz, 1) ON CONFLICT (blob_id) DO UPDATE SET refs = bs_contents.refs + 1
     $$`,
    // The blobs read model is the hot one (every blob write waits for it): a whole batch is applied by one call,
    // in order, instead of a few statements per event.
    `CREATE OR REPLACE FUNCTION bs_apply_blob_events(evs jsonb) RETURNS integer LANGUAGE plpgsql AS $$
     DECLARE e jsonb; d jsonb; prev text; n integer := 0;
     BEGIN
       FOR e IN SELECT value FROM jsonb_array_elements(evs) LOOP
         d := e->'data';
         IF e->>'type' = '${EVT.blobWritten}' THEN
           prev := NULL;
           SELECT blob_id INTO prev FROM bs_objects WHERE object_id = d->>'object_id';
           INSERT INTO bs_objects (object_id, bucket, bucket_id, account_id, key, blob_id, size, md5, content_type, created_at, updated_at, seq)
           VALUES (d->>'object_id', d->>'bucket', d->>'bucket_id', d->>'account_id', d->>'key', d->>'blob_id', (d->>'size')::bigint,
                   d->>'md5', d->>'content_type', (d->>'created_at')::timestamptz, (d->>'updated_at')::timestamptz, (e->>'seq')::bigint)
           ON CONFLICT (object_id) DO UPDATE SET blob_id = EXCLUDED.blob_id, size = EXCLUDED.size, md5 = EXCLUDED.md5,
             content_type = EXCLUDED.content_type, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, seq = EXCLUDED.seq;
           IF prev IS DISTINCT FROM d->>'blob_id' THEN
             PERFORM bs_incref(d->>'blob_id', (d->>'size')::bigint);
             IF prev IS NOT NULL THEN PERFORM bs_decref(prev); END IF;
           END IF;
         ELSIF e->>'type' = '${EVT.blobDeleted}' THEN
           prev := NULL;
           DELETE FROM bs_objects WHERE object_id = d->>'object_id' RETURNING blob_id INTO prev;
           IF prev IS NOT NULL THEN PERFORM bs_decref(prev); END IF;
         ELSIF e->>'type' = '${EVT.walrusBlobRegistered}' THEN
           INSERT INTO bs_walrus_objects (object_id, blob_id, size, encoding_type, registered_epoch, certified_epoch, end_epoch, deletable,
             owner, storage_id, storage_size, created_at, seq)
           VALUES (d->>'object_id', d->>'blob_id', (d->>'size')::bigint, d->>'encoding_type', (d->>'registered_epoch')::integer,
             (d->>'certified_epoch')::integer, (d->>'end_epoch')::integer, (d->>'deletable')::boolean, d->>'owner', d->>'storage_id',
             (d->>'storage_size')::bigint, (d->>'created_at')::timestamptz, (e->>'seq')::bigint)
           ON CONFLICT (object_id) DO NOTHING;
           IF FOUND THEN PERFORM bs_incref(d->>'blob_id', (d->>'size')::bigint); END IF;
         END IF;
         n := n + 1;
       END LOOP;
       RETURN n;
     END $$`,
  ],
};

/** Tables each projection owns (emptied by a reset, rebuilt by a replay). */
export const READ_MODEL_TABLES: Record<Kind, string[]> = {
  [KIND.app]: ["bs_apps"],
  [KIND.key]: ["bs_keys"],
  [KIND.account]: ["bs_accounts"],
  [KIND.bucket]: ["bs_buckets"],
  [KIND.blob]: ["bs_objects", "bs_walrus_objects", "bs_contents"],
};

export const PROJECTION_NAMES: Record<Kind, string> = {
  [KIND.app]: "blobstore_apps",
  [KIND.key]: "blobstore_keys",
  [KIND.account]: "blobstore_accounts",
  [KIND.bucket]: "blobstore_buckets",
  [KIND.blob]: "blobstore_blobs",
};

async function applyOne(tx: Tx, se: StoredEvent<BlobstoreEvent>): Promise<void> {
  const e = se.event;
  switch (e.type) {
    case EVT.appCreated:
      await run(tx, SQL.upsertApp, [e.data.app_id, e.data.created_at, se.seq]);
      return;
    case EVT.keyIssued:
    case EVT.keyRevoked: {
      const d = e.data;
      await run(tx, SQL.upsertKey, [d.key_id, d.kind, d.app_id, d.account_id, d.hash, d.prefix, d.label, d.created_at, d.revoked_at, d.sealed_secret, se.seq]);
      return;
    }
    case EVT.accountCreated:
      await run(tx, SQL.upsertAccount, [e.data.account_id, e.data.app_id, e.data.name, e.data.created_at, se.seq]);
      return;
    case EVT.bucketCreated:
    case EVT.bucketUpdated: {
      const d = e.data;
      await run(tx, SQL.upsertBucket, [d.name, d.bucket_id, d.account_id, d.description, JSON.stringify(d.metadata), d.created_at, d.updated_at, se.seq]);
      return;
    }
    case EVT.bucketDeleted:
      await run(tx, SQL.deleteBucket, [e.data.name, e.data.bucket_id]);
      return;
    default:
      // Unknown types (a newer writer) are skipped, never guessed at.
      return;
  }
}

export function blobstoreProjection(kind: Kind): Projection<BlobstoreEvent> {
  return {
    name: PROJECTION_NAMES[kind],
    filter: filterOf(kind),
    async migrate(db: Db) {
      // One migrator at a time (several processes may start together; CREATE OR REPLACE FUNCTION races otherwise).
      await inTransaction(db, async (tx) => {
        await tx.query("SELECT pg_advisory_xact_lock(hashtext('memrelay_blobstore_migrate'))");
        for (const sql of MIGRATIONS[kind]) await tx.query(sql);
      });
    },
    async reset(tx: Tx) {
      await tx.query(`TRUNCATE ${READ_MODEL_TABLES[kind].join(", ")}`);
    },
    async apply(tx: Tx, events: readonly StoredEvent<BlobstoreEvent>[]) {
      // (the runner commits without waiting for the WAL flush, as for every projection)
      if (kind === KIND.blob) {
        const batch = events.map((se) => ({ type: se.event.type, seq: se.seq, data: se.event.data }));
        await tx.query(prepared("SELECT bs_apply_blob_events($1::jsonb)", [JSON.stringify(batch)]));
        return;
      }
      for (const se of events) await applyOne(tx, se);
    },
  };
}

export const BLOBSTORE_KINDS: readonly Kind[] = [KIND.app, KIND.key, KIND.account, KIND.bucket, KIND.blob];

/** All projections of the blob store (for `memrelay replay` and `memrelay lag`). */
export function blobstoreProjections(): Projection<BlobstoreEvent>[] {
  return BLOBSTORE_KINDS.map(blobstoreProjection);
}
