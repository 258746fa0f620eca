// Queries of the memory index that stats and forget answer from: a namespace's row count and stored bytes, and how
// many rows an applied forget deleted.
import type { Db } from "../../db/pool.ts";

export async function namespaceStats(db: Db, owner: string, namespace: string): Promise<{ count: number; bytes: number }> {
  const r = await db.query<{ n: string; bytes: string }>(
    "SELECT count(*) AS n, coalesce(sum(size), 0) AS bytes FROM memories WHERE owner = $1 AND namespace = $2",
    [owner, namespace],
  );
  return { count: Number(r.rows[0].n), bytes: Number(r.rows[0].bytes) };
}

/** Rows the forget event `eventId` deleted, once the memory index has applied it (else undefined). */
export async function forgetDeleted(db: Db, eventId: string): Promise<number | undefined> {
  const r = await db.query<{ deleted: number }>("SELECT deleted FROM memory_forgets WHERE event_id = $1", [eventId]);
  return r.rows.length ? r.rows[0].deleted : undefined;
}
