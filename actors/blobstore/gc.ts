// Garbage collection of unreferenced blob bytes. The blobs projection keeps reference counts (bs_contents) and
// queues a blob id when its last reference goes away; writes that stored bytes but recorded nothing (a failed
// precondition, an aborted request) queue theirs too. The sweeper removes queued bytes that are still unreferenced:
//   - only when the blobs read model has caught up with the log (no appended reference is unseen), checked under a
//     share lock on its checkpoint row, so a concurrent replay (which takes that row for update) cannot interleave;
//   - only bytes not (re)written within the grace period (the backend's delete checks the file's mtime after
//     renaming it aside, so a writer storing the same content meanwhile keeps it).
// A full sweep also walks the backend for bytes nothing references (a crash between storing and queueing).
import type { Db } from "../../db/pool.ts";
import type { Logger } from "../../config/logger.ts";
import type { BlobBackend } from "../../adapters/blob-bytes/backend.ts";
import type { BlobstoreLog } from "./log.ts";
import { KIND, filterOf } from "../../schemas/blobstore/events.ts";
import { PROJECTION_NAMES } from "../../projections/blobstore/read-models.ts";

export interface SweepResult {
  readonly examined: number;
  readonly deleted: number;
  /** true when the sweep stopped because the read model was behind the log */
  readonly deferred: boolean;
}

export async function enqueueGc(db: Db, blobId: string): Promise<void> {
  await db.query(
    `INSERT INTO bs_gc_queue (blob_id, enqueued_at) VALUES ($1, now()) ON CONFLICT (blob_id) DO UPDATE SET enqueued_at = now()`,
    [blobId],
  );
}

export async function sweep(opts: { db: Db; log: BlobstoreLog; backend: BlobBackend; graceMs: number; logger: Logger; full?: boolean; batch?: number }): Promise<SweepResult> {
  const { db, log, backend, graceMs, logger } = opts;
  if (opts.full) {
    for await (const blobId of backend.list()) {
      const r = await db.query("SELECT 1 FROM bs_contents WHERE blob_id = $1", [blobId]);
      if (!r.rows.length) await enqueueGc(db, blobId);
    }
  }
  const target = await log.lastSeq(filterOf(KIND.blob));
  const candidates = await db.query<{ blob_id: string }>(
    `SELECT blob_id FROM bs_gc_queue WHERE enqueued_at <= now() - make_interval(secs => $1) ORDER BY enqueued_at LIMIT $2`,
    [opts.full ? 0 : graceMs / 1000, opts.batch ?? 1_000],
  );
  let examined = 0;
  let deleted = 0;
  for (const { blob_id } of candidates.rows) {
    const client = await db.connect();
    try {
      await client.query("BEGIN");
      const cp = await client.query<{ seq: string }>("SELECT seq FROM projection_checkpoints WHERE name = $1 FOR SHARE", [PROJECTION_NAMES[KIND.blob]]);
      if (!cp.rows.length || Number(cp.rows[0].seq) < target) {
        await client.query("ROLLBACK");
        return { examined, deleted, deferred: true };
      }
      examined++;
      const ref = await client.query("SELECT 1 FROM bs_contents WHERE blob_id = $1", [blob_id]);
      if (ref.rows.length) {
        await client.query("DELETE FROM bs_gc_queue WHERE blob_id = $1", [blob_id]);
      } else {
        const removed = await backend.delete(blob_id, { graceMs });
        const stillThere = !removed && (await backend.stat(blob_id)) !== null;
        if (removed) deleted++;
        if (stillThere) await client.query("UPDATE bs_gc_queue SET enqueued_at = now() WHERE blob_id = $1", [blob_id]);
        else await client.query("DELETE FROM bs_gc_queue WHERE blob_id = $1", [blob_id]);
      }
      await client.query("COMMIT");
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      logger.warn("blob sweep failed for one blob; it stays queued", { blob_id, error: (err as Error).message });
    } finally {
      client.release();
    }
  }
  return { examined, deleted, deferred: false };
}
