// The memory index read model: one row per indexed memory (row id = job id), vectors as halfvec.
// Recall scans the (owner, namespace) slice exactly: results always equal an exact search, whatever the size
// of the namespace or the index (a global ANN index with a post-filter returns short lists; see README).
import type { Projection } from "./runtime.ts";
import type { Db, Tx } from "../db/pool.ts";
import { toVectorLiteral } from "../db/pool.ts";
import { JOB_EVENTS, type JobIndexed } from "../schemas/remember-job.ts";

export const MEMORY_INDEX = "memory_index";

export function memoryIndexProjection(dims: number): Projection {
  return {
    name: MEMORY_INDEX,
    filter: "evt.job.>",
    migrate: async (db: Db) => {
      await db.query("CREATE EXTENSION IF NOT EXISTS vector");
      await db.query(`CREATE TABLE IF NOT EXISTS memories (
        id uuid PRIMARY KEY,
        blob_id text NOT NULL,
        owner text NOT NULL,
        namespace text NOT NULL,
        vector halfvec(${dims}) NOT NULL,
        created_at timestamptz NOT NULL,
        importance real NOT NULL,
        size integer NOT NULL)`);
      await db.query("CREATE INDEX IF NOT EXISTS memories_owner_ns ON memories (owner, namespace)");
      await db.query("CREATE INDEX IF NOT EXISTS memories_owner_blob ON memories (owner, blob_id)");
      const r = await db.query<{ t: string }>(
        "SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute WHERE attrelid = 'memories'::regclass AND attname = 'vector'",
      );
      if (r.rows[0]?.t !== `halfvec(${dims})`) {
        throw new Error(`memories.vector is ${r.rows[0]?.t}, the embedder gives ${dims} dimensions: replay the memory_index projection after changing embedders`);
      }
    },
    reset: async (tx: Tx) => {
      await tx.query("TRUNCATE memories");
    },
    apply: async (tx: Tx, events) => {
      const rows = events.filter((e) => e.event.type === JOB_EVENTS.indexed);
      if (!rows.length) return;
      const ids: string[] = [], blobs: string[] = [], owners: string[] = [], nss: string[] = [], vecs: string[] = [], created: string[] = [], imps: number[] = [], sizes: number[] = [];
      for (const { event } of rows) {
        const d = event.data as JobIndexed;
        ids.push(event.aggregate.slice("job.".length));
        blobs.push(d.blob_id);
        owners.push(d.owner);
        nss.push(d.namespace);
        vecs.push(toVectorLiteral(d.vector));
        created.push(d.created_at);
        imps.push(d.importance);
        sizes.push(d.size);
      }
      await tx.query(
        `INSERT INTO memories (id, blob_id, owner, namespace, vector, created_at, importance, size)
         SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::halfvec[], $6::timestamptz[], $7::real[], $8::int[])
         ON CONFLICT (id) DO NOTHING`,
        [ids, blobs, owners, nss, vecs, created, imps, sizes],
      );
    },
  };
}
