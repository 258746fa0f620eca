// One projection's side of a runner: its checkpoint, and the transactions that apply a batch of its events and move
// the checkpoint together (compare-and-set, so a redelivered event changes nothing and a reset made by another process
// is noticed), set aside a commit that keeps failing, and release whoever waits for a sequence. A runner feeds one
// lane (live) or several that follow the same subjects (a replay: one consumer, each commit decoded once).
import type { EventLog } from "../eventlog/connection.ts";
import { projectionAppliedSubject, STREAMS } from "../eventlog/subjects.ts";
import type { StoredEvent } from "../schemas/envelope.ts";
import { inTransaction, prepared, type Db } from "../db/pool.ts";
import type { Logger } from "../config/logger.ts";
import { deadLetterRecord, setAside } from "../eventlog/dead-letter.ts";
import { isUnavailable } from "../adapters/unavailable.ts";
import { storableText } from "../schemas/text.ts";
import type { Projection } from "./runtime.ts";

export class CheckpointMoved extends Error {}

/** Attempts at one commit before it is set aside. */
export const MAX_APPLY_ATTEMPTS = 3;

/** SQLSTATEs a retry resolves: serialization failure and deadlock (class 40), lock not available, query cancelled. */
const RETRYABLE_SQLSTATE = /^(40|55P03|57014)/;
/** A failure that retrying cannot fix: not an unavailable backing service, not a transient conflict, not another runner's move. */
const isPoison = (err: unknown) =>
  !(err instanceof CheckpointMoved) && !isUnavailable(err) && !RETRYABLE_SQLSTATE.test(String((err as { code?: unknown })?.code ?? ""));
const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));
/** Moves a checkpoint ($1) to $2 only from $3 (compare-and-set). */
const MOVE_CHECKPOINT = "UPDATE projection_checkpoints SET seq = $2, updated_at = now() WHERE name = $1 AND seq = $3";
/** The same for several checkpoints at once: names ($1), new sequences ($2), expected sequences ($3). */
const MOVE_CHECKPOINTS = `UPDATE projection_checkpoints c SET seq = m.seq, updated_at = now()
  FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS m(name, seq, expected) WHERE c.name = m.name AND c.seq = m.expected`;

export class Lane {
  /** Last sequence applied (or skipped) and committed. */
  position = 0;
  /** Events received but not yet applied (+1 while a skipped commit waits to move the checkpoint). */
  buffered = 0;
  private readonly waiters = new Set<{ seq: number; resolve: () => void }>();

  constructor(
    private readonly log: EventLog,
    private readonly db: Db,
    readonly projection: Projection,
    private readonly logger: Logger,
    /** Chain network named in dead-letter alerts. */
    private readonly network: string,
  ) {}

  /** Resolves once this lane has applied `seq` (or the timeout passes; then resolves false). */
  waitFor(seq: number, timeoutMs: number): Promise<boolean> {
    if (this.position >= seq) return Promise.resolve(true);
    return new Promise((resolve) => {
      const w = { seq, resolve: () => { clearTimeout(t); resolve(true); } };
      const t = setTimeout(() => { this.waiters.delete(w); resolve(false); }, timeoutMs);
      this.waiters.add(w);
    });
  }

  notify(applied: readonly StoredEvent[] = []): void {
    for (const w of this.waiters) if (this.position >= w.seq) { this.waiters.delete(w); w.resolve(); }
    // Readers in other processes (the job long poll) follow the checkpoint through this announcement.
    const told = applied.length ? this.projection.announce?.(applied) : undefined;
    if (told) this.publish(told.subject, told.data);
    this.publish(projectionAppliedSubject(this.projection.name), String(this.position));
  }

  private publish(subject: string, data: Uint8Array | string): void {
    try {
      this.log.nc.publish(subject, data);
    } catch {
      // a closed connection: the runner stops with it, and readers recheck what is stored
    }
  }

  /** Applies a batch and moves the checkpoint to `toSeq`; a poison batch is applied again commit by commit. */
  async apply(batch: StoredEvent[], toSeq: number): Promise<void> {
    try {
      await this.applyBatch(batch, toSeq);
    } catch (err) {
      if (!isPoison(err)) throw err;
      await this.applyIsolating(batch, toSeq, err);
    }
  }

  /** Applies a failed batch commit by commit, setting aside each commit that keeps failing, then moves to `toSeq`. */
  private async applyIsolating(batch: StoredEvent[], toSeq: number, first: unknown): Promise<void> {
    this.logger.warn("projection batch failed; applying it commit by commit", { projection: this.projection.name, error: errorText(first) });
    const commits = new Map<number, StoredEvent[]>();
    for (const e of batch) (commits.get(e.seq) ?? commits.set(e.seq, []).get(e.seq)!).push(e);
    for (const [seq, events] of commits) {
      let last: unknown;
      for (let attempt = 1; attempt <= MAX_APPLY_ATTEMPTS; attempt++) {
        try {
          await this.applyBatch(events, seq);
          last = undefined;
          break;
        } catch (err) {
          if (!isPoison(err)) throw err;
          last = err;
          if (attempt < MAX_APPLY_ATTEMPTS) await new Promise((r) => setTimeout(r, 50 * attempt));
        }
      }
      if (last !== undefined) await this.setAside(seq, events, errorText(last));
    }
    if (toSeq > this.position) await this.applyBatch([], toSeq);
  }

  private async setAside(seq: number, events: StoredEvent[], error: string): Promise<void> {
    const name = this.projection.name;
    const record = deadLetterRecord({
      source: "projection",
      name,
      stream: STREAMS.events,
      stream_seq: seq,
      subject: events[0].subject,
      aggregate: events[0].event.aggregate,
      types: [...new Set(events.map((e) => e.event.type))],
      error,
      attempts: MAX_APPLY_ATTEMPTS,
    });
    // Published first (deduplicated by id): a crash before the commit below sets it aside again, once.
    await setAside(this.log, record, this.network);
    const write = async (withHook: boolean) =>
      inTransaction(this.db, async (tx) => {
        const moved = await tx.query(MOVE_CHECKPOINT, [name, seq, this.position]);
        if (moved.rowCount !== 1) throw new CheckpointMoved(`checkpoint of ${name} moved while setting #${seq} aside`);
        await tx.query(
          `INSERT INTO dead_letters (projection, seq, subject, aggregate, types, error, attempts) VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (projection, seq) DO NOTHING`,
          [name, seq, record.subject, record.aggregate, record.types, record.error, record.attempts],
        );
        if (withHook && this.projection.setAside) await this.projection.setAside(tx, events, record.error);
      });
    await write(true).catch((err) => {
      if (!isPoison(err)) throw err;
      this.logger.warn("projection's own record of a set-aside commit failed; keeping the dead letter only", { projection: name, seq, error: storableText(errorText(err)) });
      return write(false);
    });
    this.logger.error("commit set aside after bounded retries", { projection: name, seq, types: record.types.join(","), error: record.error });
    this.position = seq;
    this.notify();
  }

  private async applyBatch(batch: StoredEvent[], toSeq: number): Promise<void> {
    const expected = this.position;
    const name = this.projection.name;
    // The checkpoint moves by compare-and-set, which also locks its row for the transaction: a runner of another
    // process (or an operator's reset) cannot interleave. Nothing to apply (every commit skipped by `wants`): the
    // statement alone, no transaction.
    const moved = !batch.length && (await this.db.query(prepared(MOVE_CHECKPOINT, [name, toSeq, expected]))).rowCount === 1;
    if (!moved) {
      await inTransaction(
        this.db,
        async (tx) => {
          if ((await tx.query(prepared(MOVE_CHECKPOINT, [name, toSeq, expected]))).rowCount !== 1) {
            // Why not: moved by someone else, or no row yet (a first batch at 0 creates it).
            const r = await tx.query<{ seq: string }>("SELECT seq FROM projection_checkpoints WHERE name = $1 FOR UPDATE", [name]);
            const stored = r.rows.length ? Number(r.rows[0].seq) : 0;
            if (stored !== expected) throw new CheckpointMoved(`checkpoint of ${name} moved from ${expected} to ${stored}`);
            await tx.query("INSERT INTO projection_checkpoints (name, seq, updated_at) VALUES ($1, $2, now()) ON CONFLICT (name) DO UPDATE SET seq = EXCLUDED.seq, updated_at = now()", [name, toSeq]);
          }
          if (batch.length) await this.projection.apply(tx, batch);
        },
        // a read model and its checkpoint are lost together by a crash, and the events are applied again
        { asyncCommit: true },
      );
    }
    this.applied(batch, toSeq);
  }

  /** Records a committed batch: the lane is at `toSeq`, and waiters and readers are told. */
  applied(batch: readonly StoredEvent[], toSeq: number): void {
    this.position = toSeq;
    this.notify(batch);
  }
}

/** One lane's batch for `applyTogether`. */
export interface LaneBatch {
  readonly lane: Lane;
  readonly batch: StoredEvent[];
  readonly toSeq: number;
}

/**
 * Applies several lanes' batches in one transaction, each checkpoint moved by compare-and-set as a lane alone moves
 * it. False, with nothing written, when any checkpoint had moved or any batch failed: the caller then applies each
 * batch on its own lane, where retries, set-asides and moved checkpoints are handled.
 */
export async function applyTogether(db: Db, batches: readonly LaneBatch[]): Promise<boolean> {
  const moves = [batches.map((b) => b.lane.projection.name), batches.map((b) => b.toSeq), batches.map((b) => b.lane.position)];
  try {
    await inTransaction(
      db,
      async (tx) => {
        if ((await tx.query(prepared(MOVE_CHECKPOINTS, moves))).rowCount !== batches.length) throw new CheckpointMoved("a checkpoint moved");
        for (const b of batches) if (b.batch.length) await b.lane.projection.apply(tx, b.batch);
      },
      { asyncCommit: true },
    );
  } catch {
    return false;
  }
  for (const b of batches) b.lane.applied(b.batch, b.toSeq);
  return true;
}
