// The memory index's maintenance events (schemas/relayer/memory-maintenance.ts), applied by the memory_index projection in log
// order inside its transaction, so a replay from sequence 1 rebuilds exactly the same rows:
//   memory.registered  inserts one row (a manual memory), like job.indexed
//   memory.forgotten   deletes every row of (owner, namespace) indexed before it, records how many it deleted (the
//                      gateway answers POST /api/forget from that record) and moves the namespace's forget horizon
//   memory.restored    inserts re-indexed rows where the blob has no row yet
// Read models besides `memories`:
//   memory_forgets          (event id → deleted count)              answers of forget calls
//   memory_forget_horizons  ((owner, namespace) → last forget time) what a default restore leaves out; grow-only,
//                           kept across rebuilds (see resetMaintenance)
import { prepared, type Db, type Tx } from "../../db/pool.ts";
import { halfvecArrayBinary, halfvecBinary } from "../../db/halfvec.ts";
import { COPY_MIN_ROWS, copyBinary, encodeBinaryCopy, exactEpochMicros, isCanonicalUuid } from "../../db/copy-binary.ts";
import type { EventOfType } from "../../schemas/envelope.ts";
import type { IndexRow, MEMORY_EVENTS, MemoryEventData } from "../../schemas/relayer/memory-maintenance.ts";

export async function migrateMaintenance(db: Db): Promise<void> {
  await db.query(`CREATE TABLE IF NOT EXISTS memory_forgets (
    event_id uuid PRIMARY KEY, owner text NOT NULL, namespace text NOT NULL, deleted integer NOT NULL, forgotten_at timestamptz NOT NULL)`);
  await db.query(`CREATE TABLE IF NOT EXISTS memory_forget_horizons (
    owner text NOT NULL, namespace text NOT NULL, horizon timestamptz NOT NULL, PRIMARY KEY (owner, namespace))`);
}

/**
 * Empties the forget answers. Forget horizons are kept on purpose: a horizon only ever moves forward (greatest of all
 * forgets), so replaying the same log sets the same values again, and a rebuild from a different log (the runtime
 * rebuilds when the event stream was replaced) keeps what the user forgot — a restore after losing the log does not
 * resurrect it. They are lost only with the database.
 */
export async function resetMaintenance(tx: Tx): Promise<void> {
  await tx.query("TRUNCATE memory_forgets");
}

/**
 * halfvec's type oid, which a binary halfvec[] names for its elements: read once per projection, not once per batch.
 * It only changes when the vector extension is dropped and created again; an insert failing then forgets it, so the
 * batch's retry reads it anew.
 */
export class HalfvecOid {
  private oid?: number;

  async get(tx: Tx): Promise<number> {
    return (this.oid ??= (await tx.query<{ oid: number }>("SELECT 'halfvec'::regtype::oid::int AS oid")).rows[0]!.oid);
  }

  forget(): void {
    this.oid = undefined;
  }
}

const INSERT_MEMORIES = `INSERT INTO memories (id, blob_id, owner, namespace, vector, created_at, importance, size)
  SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::halfvec[], $6::timestamptz[], $7::real[], $8::int[])
  ON CONFLICT DO NOTHING`;

/**
 * Column arrays of a multi-row insert into `memories`. A row whose vector has other dimensions than the index (made by
 * an embedder the index no longer uses) is left out: its memory comes back by a restore, which re-embeds it.
 */
export class RowBatch {
  constructor(private readonly dims: number, private readonly halfvecOid: HalfvecOid) {}
  skipped = 0;
  readonly ids: string[] = [];
  readonly blobs: string[] = [];
  readonly owners: string[] = [];
  readonly namespaces: string[] = [];
  readonly vectors: Buffer[] = [];
  readonly created: string[] = [];
  readonly importance: number[] = [];
  readonly sizes: number[] = [];

  get length(): number {
    return this.ids.length;
  }

  add(id: string, owner: string, namespace: string, r: Omit<IndexRow, "id" | "object_id" | "vector"> & { readonly vector: ArrayLike<number> }): void {
    if (r.vector.length !== this.dims) {
      this.skipped++;
      return;
    }
    this.ids.push(id);
    this.blobs.push(r.blob_id);
    this.owners.push(owner);
    this.namespaces.push(namespace);
    this.vectors.push(halfvecBinary(r.vector));
    this.created.push(r.created_at);
    this.importance.push(r.importance);
    this.sizes.push(r.size);
  }

  /**
   * Inserts the batch and empties it. A row whose id or (owner, blob id) already exists is skipped: redelivery changes
   * nothing, and a blob never gets two rows (a restore racing the job that indexes the same blob, on every replay).
   */
  async flush(tx: Tx): Promise<void> {
    if (!this.length) return;
    if (this.length < COPY_MIN_ROWS || !(await this.copyNew(tx))) {
      // Vectors travel as one binary halfvec[] (db/halfvec.ts), which names its element type by oid.
      const vectors = halfvecArrayBinary(await this.halfvecOid.get(tx), this.vectors);
      await tx.query(prepared(INSERT_MEMORIES, [this.ids, this.blobs, this.owners, this.namespaces, vectors, this.created, this.importance, this.sizes])).catch((err: unknown) => {
        this.halfvecOid.forget();
        throw err;
      });
    }
    for (const a of [this.ids, this.blobs, this.owners, this.namespaces, this.vectors, this.created, this.importance, this.sizes]) a.length = 0;
  }

  /**
   * The same insert by binary COPY (many rows a page, no conflict checks per row): the rows that are taken — by id or
   * by (owner, blob id), in the table or earlier in the batch — are found first and left out, as ON CONFLICT DO NOTHING
   * would leave them. The memory index is the table's only writer, and its checkpoint's row lock keeps a second
   * runner out. False (nothing written) when a value is not in the form the encoder takes exactly.
   */
  private async copyNew(tx: Tx): Promise<boolean> {
    const us = this.created.map(exactEpochMicros);
    const strings = (a: readonly unknown[]) => a.every((x) => typeof x === "string");
    const exact =
      !us.includes(undefined) && this.ids.every(isCanonicalUuid) && strings(this.blobs) && strings(this.owners) && strings(this.namespaces) &&
      this.importance.every(Number.isFinite) && this.sizes.every((x) => Number.isInteger(x) && Math.abs(x) < 2 ** 31);
    if (!exact) return false;
    const taken = await tx.query<{ id: string; owner: string; blob_id: string }>(
      `SELECT id::text, owner, blob_id FROM memories WHERE id = ANY($1::uuid[])
       UNION ALL
       SELECT m.id::text, m.owner, m.blob_id FROM unnest($2::text[], $3::text[]) AS x(owner, blob_id) JOIN memories m USING (owner, blob_id)`,
      [this.ids, this.owners, this.blobs],
    );
    const blobKey = (owner: string, blob: string) => `${owner}\u0000${blob}`;
    const ids = new Set(taken.rows.map((r) => r.id));
    const blobs = new Set(taken.rows.map((r) => blobKey(r.owner, r.blob_id)));
    const keep: number[] = [];
    for (let i = 0; i < this.length; i++) {
      const id = this.ids[i].toLowerCase();
      const blob = blobKey(this.owners[i], this.blobs[i]);
      if (ids.has(id) || blobs.has(blob)) continue;
      ids.add(id);
      blobs.add(blob);
      keep.push(i);
    }
    if (!keep.length) return true;
    const pick = <T>(a: readonly T[]) => keep.map((i) => a[i]);
    await copyBinary(
      tx,
      "memories (id, blob_id, owner, namespace, vector, created_at, importance, size)",
      encodeBinaryCopy(
        ["uuid", "text", "text", "text", "bytes", "timestamptz", "float4", "int4"],
        [pick(this.ids), pick(this.blobs), pick(this.owners), pick(this.namespaces), pick(this.vectors), pick(us as number[]), pick(this.importance), pick(this.sizes)],
      ),
    );
    return true;
  }
}

export function addRegistered(batch: RowBatch, event: EventOfType<MemoryEventData, typeof MEMORY_EVENTS.registered>): void {
  const d = event.data;
  batch.add(d.id, d.owner, d.namespace, d);
}

export function addRestored(batch: RowBatch, event: EventOfType<MemoryEventData, typeof MEMORY_EVENTS.restored>): void {
  const d = event.data;
  for (const r of d.rows) batch.add(r.id, d.owner, d.namespace, r);
}

export async function applyForgotten(tx: Tx, event: EventOfType<MemoryEventData, typeof MEMORY_EVENTS.forgotten>): Promise<void> {
  const d = event.data;
  const r = await tx.query("DELETE FROM memories WHERE owner = $1 AND namespace = $2", [d.owner, d.namespace]);
  await tx.query(
    `INSERT INTO memory_forgets (event_id, owner, namespace, deleted, forgotten_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (event_id) DO NOTHING`,
    [event.id, d.owner, d.namespace, r.rowCount ?? 0, d.forgotten_at],
  );
  await tx.query(
    `INSERT INTO memory_forget_horizons (owner, namespace, horizon) VALUES ($1, $2, $3)
     ON CONFLICT (owner, namespace) DO UPDATE SET horizon = greatest(memory_forget_horizons.horizon, EXCLUDED.horizon)`,
    [d.owner, d.namespace, d.forgotten_at],
  );
}
