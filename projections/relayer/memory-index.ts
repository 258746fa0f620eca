// The memory index read model: one row per indexed memory (row id = job id; for manual and restored memories a UUID
// derived from owner and blob id), vectors as halfvec. Forget, restore and manual events: memory-maintenance.ts.
// Recall scans the (owner, namespace) slice exactly: results always equal an exact search, whatever the size
// of the namespace or the index (a global ANN index with a post-filter returns short lists; see README).
import { carriesEventTypes, type Projection } from "../runtime.ts";
import { inTransaction, type Db, type Tx } from "../../db/pool.ts";
import { JOB, JOB_EVENTS } from "../../schemas/relayer/remember-job.ts";
import { eventFilter } from "../../eventlog/subjects.ts";
import { decodeVectorF32 } from "../../schemas/vector-wire.ts";
import { MEMORY_EVENTS, type IndexLogEvent } from "../../schemas/relayer/memory-maintenance.ts";
import { HalfvecOid, RowBatch, addRegistered, addRestored, applyForgotten, migrateMaintenance, resetMaintenance } from "./memory-maintenance.ts";

export const MEMORY_INDEX = "memory_index";
/** The one subject filter the memory index follows (maintenance events share it: schemas/relayer/memory-maintenance.ts). */
export const MEMORY_INDEX_FILTER = eventFilter(JOB);

/** What the index was built with, and what it was rebuilt from (read by `memrelay start` to re-embed). */
export interface MemoryIndexMeta {
  readonly embedder: string | null;
  readonly dims: number;
  readonly previous_embedder: string | null;
  /** When it was last rebuilt for another embedder (epoch ms). */
  readonly rebuilt_at_ms: number | null;
}

export async function readMemoryIndexMeta(db: Db): Promise<MemoryIndexMeta | undefined> {
  const r = await db.query<MemoryIndexMeta>("SELECT embedder, dims, previous_embedder, (extract(epoch FROM rebuilt_at) * 1000)::float8 AS rebuilt_at_ms FROM memory_index_meta").catch(() => undefined);
  return r?.rows[0];
}

/**
 * The index as built by another embedder (other dimensions, or another named embedder): it is dropped and rebuilt
 * from the event log (checkpoint back to 0) instead of refusing to start. Vectors of the current dimensions come
 * back from the log; the others are left out until a restore re-embeds them.
 */
async function rebuildIfEmbedderChanged(db: Db, dims: number, embedder: string | undefined): Promise<void> {
  await db.query(`CREATE TABLE IF NOT EXISTS memory_index_meta (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), embedder text, dims int NOT NULL,
    previous_embedder text, rebuilt_at timestamptz)`);
  const column = await db.query<{ t: string }>("SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute WHERE attrelid = to_regclass('memories') AND attname = 'vector'");
  const current = column.rows[0]?.t;
  const meta = await readMemoryIndexMeta(db);
  const changed = (current !== undefined && current !== `halfvec(${dims})`) || (!!embedder && !!meta?.embedder && meta.embedder !== embedder);
  if (changed) {
    await inTransaction(db, async (tx) => {
      await tx.query("DROP TABLE IF EXISTS memories");
      await tx.query("UPDATE projection_checkpoints SET seq = 0, updated_at = now() WHERE name = $1", [MEMORY_INDEX]).catch(() => undefined);
      await resetMaintenance(tx);
      await tx.query(
        `INSERT INTO memory_index_meta (embedder, dims, previous_embedder, rebuilt_at) VALUES ($1, $2, $3, now())
         ON CONFLICT (singleton) DO UPDATE SET embedder = EXCLUDED.embedder, dims = EXCLUDED.dims, previous_embedder = EXCLUDED.previous_embedder, rebuilt_at = now()`,
        [embedder ?? null, dims, meta?.embedder ?? current ?? null],
      );
    });
  } else {
    await db.query(
      `INSERT INTO memory_index_meta (embedder, dims) VALUES ($1, $2)
       ON CONFLICT (singleton) DO UPDATE SET embedder = coalesce(EXCLUDED.embedder, memory_index_meta.embedder), dims = EXCLUDED.dims`,
      [embedder ?? null, dims],
    );
  }
}

/** `embedder`: the name of the embedder that makes the vectors (a change of name or dimensions rebuilds the index). */
export function memoryIndexProjection(dims: number, embedder?: string): Projection<IndexLogEvent> {
  const halfvecOid = new HalfvecOid();
  return {
    name: MEMORY_INDEX,
    filter: MEMORY_INDEX_FILTER,
    migrate: async (db: Db) => {
      await db.query("CREATE EXTENSION IF NOT EXISTS vector");
      await rebuildIfEmbedderChanged(db, dims, embedder);
      await db.query(`CREATE TABLE IF NOT EXISTS memories (
        id uuid PRIMARY KEY,
        blob_id text NOT NULL,
        owner text NOT NULL,
        namespace text NOT NULL,
        vector halfvec(${dims}) NOT NULL,
        created_at timestamptz NOT NULL,
        importance real NOT NULL,
        size integer NOT NULL)`);
      // Vectors in line: a 1024-d halfvec row passes the TOAST threshold, and fetching every vector of a namespace
      // out of line doubled the cost of an exact scan. (Rows written before this keep their storage until rewritten.)
      // Checked first: the ALTER takes an exclusive lock, which replicas starting under load should not queue behind.
      const storage = await db.query<{ s: string }>("SELECT attstorage AS s FROM pg_attribute WHERE attrelid = 'memories'::regclass AND attname = 'vector'");
      if (storage.rows[0]?.s !== "p") await db.query("ALTER TABLE memories ALTER COLUMN vector SET STORAGE PLAIN");
      await db.query("CREATE INDEX IF NOT EXISTS memories_owner_ns ON memories (owner, namespace)");
      // One row per blob of an owner: restore inserts only where missing, and a replay keeps that true.
      await db.query("CREATE UNIQUE INDEX IF NOT EXISTS memories_owner_blob_key ON memories (owner, blob_id)");
      const r = await db.query<{ t: string }>(
        "SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute WHERE attrelid = 'memories'::regclass AND attname = 'vector'",
      );
      if (r.rows[0]?.t !== `halfvec(${dims})`) throw new Error(`memories.vector is ${r.rows[0]?.t} after the rebuild for ${dims} dimensions`);
      await migrateMaintenance(db);
    },
    // A job's first commit (accepted, uploaded) carries its vector but nothing to index: not even decoded.
    wants: carriesEventTypes([JOB_EVENTS.indexed, MEMORY_EVENTS.registered, MEMORY_EVENTS.restored, MEMORY_EVENTS.forgotten]),
    reset: async (tx: Tx) => {
      await tx.query("TRUNCATE memories");
      await resetMaintenance(tx);
    },
    apply: async (tx: Tx, events) => {
      // In log order: inserts are batched, and a forget flushes what precedes it, so it deletes exactly the rows
      // indexed before it (maintenance events: projections/relayer/memory-maintenance.ts).
      const batch = new RowBatch(dims, halfvecOid);
      for (const { event } of events) {
        switch (event.type) {
          case JOB_EVENTS.indexed: {
            const d = event.data;
            // a vector of another embedder with the same dimensions is as meaningless as one of other dimensions
            if (embedder && d.embedder && d.embedder !== embedder) break;
            batch.add(event.aggregate.slice("job.".length), d.owner, d.namespace, { ...d, vector: decodeVectorF32(d.vector_f32) });
            break;
          }
          case MEMORY_EVENTS.registered:
            addRegistered(batch, event);
            break;
          case MEMORY_EVENTS.restored:
            addRestored(batch, event);
            break;
          case MEMORY_EVENTS.forgotten:
            await batch.flush(tx);
            await applyForgotten(tx, event);
            break;
        }
      }
      await batch.flush(tx);
    },
  };
}
