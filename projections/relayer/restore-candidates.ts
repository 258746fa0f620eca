// Queries of the memory index that a restore asks before re-indexing: which of an owner's blobs already have a row,
// and when the namespace was last forgotten (a restore never brings back what a forget removed, unless asked).
import type { Db } from "../../db/pool.ts";

export async function indexedBlobs(db: Db, owner: string, blobIds: readonly string[]): Promise<Set<string>> {
  if (!blobIds.length) return new Set();
  const r = await db.query<{ blob_id: string }>("SELECT blob_id FROM memories WHERE owner = $1 AND blob_id = ANY($2::text[])", [owner, blobIds]);
  return new Set(r.rows.map((x) => x.blob_id));
}

/** Time (ms) of the namespace's last forget, or null when it was never forgotten (or the database was lost). */
export async function forgetHorizon(db: Db, owner: string, namespace: string): Promise<number | null> {
  const r = await db.query<{ horizon: Date }>("SELECT horizon FROM memory_forget_horizons WHERE owner = $1 AND namespace = $2", [owner, namespace]);
  return r.rows.length ? r.rows[0].horizon.getTime() : null;
}
