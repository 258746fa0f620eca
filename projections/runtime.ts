// Projection runtime: an ordered JetStream consumer per projection, starting after the checkpoint kept in Postgres.
// Each batch of events is applied and the checkpoint advanced in one transaction, with a compare-and-set on the
// checkpoint, so a redelivered event changes nothing and a reset (replay) made by another process is noticed.
// A batch that fails for a reason other than an unavailable backing service is applied again commit by commit; a
// commit that still fails after MAX_APPLY_ATTEMPTS is set aside (DLQ stream, alert, `dead_letters` row, the
// projection's own record of the failure) and the checkpoint moves past it, so no event stalls the stream.
import { DeliverPolicy } from "@nats-io/jetstream";
import type { EventLog } from "../eventlog/connection.ts";
import { decodeCommit } from "../eventlog/event-store.ts";
import { STREAMS, projectionAppliedSubject } from "../eventlog/subjects.ts";
import type { StoredEvent } from "../schemas/envelope.ts";
import { inTransaction, prepared, type Db, type Tx } from "../db/pool.ts";
import type { Logger } from "../config/logger.ts";
import { deadLetterRecord, setAside } from "../eventlog/dead-letter.ts";
import { isUnavailable } from "../adapters/unavailable.ts";
import { storableText } from "../schemas/text.ts";

export interface Projection {
  readonly name: string;
  /** Subject filter on the EVT stream, e.g. `evt.job.>`. */
  readonly filter: string;
  /** Creates the read model's tables (idempotent). */
  migrate(db: Db): Promise<void>;
  /** Empties the read model before a replay from sequence 1. */
  reset(tx: Tx): Promise<void>;
  /** Applies a batch of events inside the projection's transaction. */
  apply(tx: Tx, events: readonly StoredEvent[]): Promise<void>;
  /**
   * Optional cheap test on a raw commit: false means it holds nothing `apply` would use, so it is not decoded
   * (the checkpoint still moves past it). For projections that read a few event types of a busy subject.
   */
  readonly wants?: (raw: Uint8Array) => boolean;
  /**
   * Optional: records, in the read model, that a commit's events were set aside (e.g. the jobs they belong to
   * failed). Runs in the transaction that moves the checkpoint past them; must not fail on the data that failed.
   */
  setAside?(tx: Tx, events: readonly StoredEvent[], error: string): Promise<void>;
}

/**
 * A `wants` test: does the raw commit name one of these event types? Matches the quoted type string anywhere in the
 * commit, so a false positive only costs a decode and a commit holding one of them is never skipped.
 */
export function carriesEventTypes(types: readonly string[]): (raw: Uint8Array) => boolean {
  const needles = types.map((t) => Buffer.from(JSON.stringify(t)));
  return (raw) => {
    const b = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    return needles.some((n) => b.includes(n));
  };
}

export async function migrateCheckpoints(db: Db): Promise<void> {
  await db.query(`CREATE TABLE IF NOT EXISTS projection_checkpoints (
    name text PRIMARY KEY, seq bigint NOT NULL DEFAULT 0, updated_at timestamptz NOT NULL DEFAULT now())`);
  // The identity (creation time) of the EVT stream the checkpoint counts in: a checkpoint is meaningless against
  // another stream (a fresh log, or one restored from a backup), so a mismatch rebuilds the read model.
  await db.query("ALTER TABLE projection_checkpoints ADD COLUMN IF NOT EXISTS stream_created text");
  // Commits a projection set aside (also on the DLQ stream): what `memrelay lag` counts and job lookups consult.
  await db.query(`CREATE TABLE IF NOT EXISTS dead_letters (
    projection text NOT NULL, seq bigint NOT NULL, subject text NOT NULL, aggregate text NOT NULL, types text[] NOT NULL,
    error text NOT NULL, attempts int NOT NULL, at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (projection, seq))`);
  await db.query("CREATE INDEX IF NOT EXISTS dead_letters_aggregate ON dead_letters (aggregate)");
}

/** Rebuilds the read model when its checkpoint was taken against a different EVT stream than the current one. */
async function alignWithStream(db: Db, log: EventLog, p: Projection, logger: Logger): Promise<void> {
  const created = (await log.jsm.streams.info(STREAMS.events)).created;
  const r = await db.query<{ stream_created: string | null; seq: string }>("SELECT stream_created, seq FROM projection_checkpoints WHERE name = $1", [p.name]);
  const row = r.rows[0];
  if (row && row.stream_created !== created && Number(row.seq) > 0) {
    logger.warn("event log differs from the one this read model was built from; rebuilding", { projection: p.name });
    await resetProjection(db, p);
  }
  await db.query(
    `INSERT INTO projection_checkpoints (name, seq, stream_created) VALUES ($1, 0, $2)
     ON CONFLICT (name) DO UPDATE SET stream_created = EXCLUDED.stream_created`,
    [p.name, created],
  );
}

export async function readCheckpoint(db: Db | Tx, name: string): Promise<number> {
  const r = await db.query<{ seq: string }>("SELECT seq FROM projection_checkpoints WHERE name = $1", [name]);
  return r.rows.length ? Number(r.rows[0].seq) : 0;
}

/** Empties a projection's read model and rewinds its checkpoint; a running instance notices and rebuilds. */
export async function resetProjection(db: Db, p: Projection): Promise<void> {
  await inTransaction(db, async (tx) => {
    await tx.query("INSERT INTO projection_checkpoints (name, seq) VALUES ($1, 0) ON CONFLICT (name) DO UPDATE SET seq = 0, updated_at = now()", [p.name]);
    await tx.query("SELECT seq FROM projection_checkpoints WHERE name = $1 FOR UPDATE", [p.name]);
    // A replay tries every commit again, the ones set aside before included.
    await tx.query("DELETE FROM dead_letters WHERE projection = $1", [p.name]);
    await p.reset(tx);
  });
}

class CheckpointMoved extends Error {}

const MAX_BATCH = 2_000;
/**
 * Commits a projection skips (`wants` false) move its checkpoint at most this much later, or with the next batch it
 * applies: under load every remember job's first commit is one, and a statement per commit per projection was a
 * large share of Postgres's work. Whoever waits for a wanted commit (job done, index barriers) never waits for this.
 */
const SKIPPED_MOVE_DELAY_MS = 100;
const CHECKPOINT_POLL_MS = 1_000;
const PULL_MAX_MESSAGES = 512;
/** Attempts at one commit before it is set aside. */
export const MAX_APPLY_ATTEMPTS = 3;

/** SQLSTATEs a retry resolves: serialization failure and deadlock (class 40), lock not available, query cancelled. */
const RETRYABLE_SQLSTATE = /^(40|55P03|57014)/;
/** A failure that retrying cannot fix: not an unavailable backing service, not a transient conflict, not another runner's move. */
const isPoison = (err: unknown) =>
  !(err instanceof CheckpointMoved) && !isUnavailable(err) && !RETRYABLE_SQLSTATE.test(String((err as { code?: unknown })?.code ?? ""));
const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class ProjectionRunner {
  private stopped = false;
  private position = 0;
  /** Matching events the log still holds beyond what was received (from the consumer's delivery info). */
  private backlog = Number.POSITIVE_INFINITY;
  private buffered = 0;
  private stopCurrent?: () => void;
  private readonly waiters = new Set<{ seq: number; resolve: () => void }>();

  constructor(
    private readonly log: EventLog,
    private readonly db: Db,
    readonly projection: Projection,
    private readonly logger: Logger,
    /** Chain network named in dead-letter alerts. */
    private readonly network = "local",
  ) {}

  /** Events not yet applied; 0 means caught up with the log. */
  get pending(): number {
    return this.backlog + this.buffered;
  }

  /** Last sequence this runner applied. */
  get checkpoint(): number {
    return this.position;
  }

  async start(): Promise<void> {
    await this.projection.migrate(this.db);
    await migrateCheckpoints(this.db);
    await alignWithStream(this.db, this.log, this.projection, this.logger);
    void this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopCurrent?.();
  }

  /** Resolves once this runner has applied `seq` (or the timeout passes; then resolves false). */
  waitFor(seq: number, timeoutMs: number): Promise<boolean> {
    if (this.position >= seq) return Promise.resolve(true);
    return new Promise((resolve) => {
      const w = { seq, resolve: () => { clearTimeout(t); resolve(true); } };
      const t = setTimeout(() => { this.waiters.delete(w); resolve(false); }, timeoutMs);
      this.waiters.add(w);
    });
  }

  private notify() {
    for (const w of this.waiters) if (this.position >= w.seq) { this.waiters.delete(w); w.resolve(); }
    // Readers in other processes (the job long poll) follow the checkpoint through this announcement.
    try {
      this.log.nc.publish(projectionAppliedSubject(this.projection.name), String(this.position));
    } catch {
      // a closed connection: the runner stops with it, and readers recheck the stored checkpoint
    }
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        this.position = await readCheckpoint(this.db, this.projection.name);
        // Another process may have applied what a waiter waits for (a checkpoint moved past it): release it.
        this.notify();
        await this.follow();
        failures = 0;
      } catch (err) {
        if (this.stopped) break;
        if (!(err instanceof CheckpointMoved)) {
          failures++;
          this.logger.warn("projection paused; will resume from its checkpoint", { projection: this.projection.name, error: err instanceof Error ? err.message : String(err) });
          await new Promise((r) => setTimeout(r, Math.min(5_000, 100 * 2 ** Math.min(failures, 6))));
        }
      }
    }
  }

  private async follow(): Promise<void> {
    const consumer = await this.log.js.consumers.get(STREAMS.events, {
      filter_subjects: this.projection.filter,
      deliver_policy: this.position > 0 ? DeliverPolicy.StartSequence : DeliverPolicy.All,
      ...(this.position > 0 ? { opt_start_seq: this.position + 1 } : {}),
    });
    // What an earlier consumer had buffered went with it (a restart after another runner moved the checkpoint): a
    // count left over would read as events pending forever when the new one has nothing to deliver.
    this.buffered = 0;
    const info = await consumer.info(true).catch(() => undefined);
    if (info) this.backlog = info.num_pending;
    // A modest pull: a commit can be tens of KiB (vectors), and several projections in one process share a
    // connection whose pending bytes nats-server caps (64 MiB); past it the server cuts the connection as a slow
    // consumer and every ordered consumer on it restarts (seen with 4,096: stalls of 10–30 s during catch-up).
    const messages = await consumer.consume({ max_messages: PULL_MAX_MESSAGES });
    const buffer: StoredEvent[] = [];
    let lastSeq = this.position;
    let flushing: Promise<void> | undefined;
    let failure: unknown;
    let skippedMove: NodeJS.Timeout | undefined;
    /** `skipped`: also move past commits that only `wants` skipped (else they wait, see SKIPPED_MOVE_DELAY_MS). */
    const flush = async (skipped: boolean) => {
      // Everything up to lastSeq is buffered or was skipped by `wants`, so the batch reaches lastSeq.
      while ((buffer.length || (skipped && lastSeq > this.position)) && !failure) {
        const batch = buffer.splice(0, buffer.length);
        try {
          try {
            await this.applyBatch(batch, lastSeq);
          } catch (err) {
            if (!isPoison(err)) throw err;
            await this.applyIsolating(batch, lastSeq, err);
          }
          if (!buffer.length) this.buffered = 0;
        } catch (err) {
          failure = err;
          messages.stop();
        }
      }
      if (lastSeq > this.position && !failure) moveSkippedLater();
    };
    const schedule = (skipped: boolean) => {
      if (!flushing) flushing = new Promise<void>((r) => setImmediate(r)).then(() => flush(skipped)).finally(() => (flushing = undefined));
    };
    const moveSkippedLater = () => {
      skippedMove ??= setTimeout(() => {
        skippedMove = undefined;
        schedule(true);
      }, SKIPPED_MOVE_DELAY_MS);
    };
    this.stopCurrent = () => messages.stop();
    // An idle runner sees no batch to fail its compare-and-set: poll the checkpoint so a reset made by another
    // process (operator replay) restarts it from sequence 1 even when no new events arrive.
    let moved = false;
    const watch = setInterval(() => {
      if (flushing || buffer.length) return;
      readCheckpoint(this.db, this.projection.name).then((stored) => {
        if (!flushing && !buffer.length && stored !== this.position) {
          moved = true;
          messages.stop();
        }
      }, () => undefined);
    }, CHECKPOINT_POLL_MS);
    try {
      for await (const m of messages) {
        if (m.seq <= lastSeq) continue;
        lastSeq = m.seq;
        this.backlog = m.info.pending;
        if (!this.projection.wants || this.projection.wants(m.data)) {
          for (const event of decodeCommit(m.data).events) buffer.push({ seq: m.seq, subject: m.subject, event });
        }
        this.buffered = buffer.length + 1;
        if (buffer.length) schedule(false);
        else if (!flushing) moveSkippedLater();
        if (buffer.length >= MAX_BATCH && flushing) await flushing;
        if (failure) break;
      }
    } finally {
      clearInterval(watch);
      clearTimeout(skippedMove);
    }
    if (flushing) await flushing;
    if (failure) throw failure;
    if (moved) throw new CheckpointMoved(`checkpoint of ${this.projection.name} was moved`);
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
        const moved = await tx.query("UPDATE projection_checkpoints SET seq = $2, updated_at = now() WHERE name = $1 AND seq = $3", [name, seq, this.position]);
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
    const cas = "UPDATE projection_checkpoints SET seq = $2, updated_at = now() WHERE name = $1 AND seq = $3";
    const moved = !batch.length && (await this.db.query(prepared(cas, [name, toSeq, expected]))).rowCount === 1;
    if (!moved) {
      await inTransaction(
        this.db,
        async (tx) => {
          if ((await tx.query(prepared(cas, [name, toSeq, expected]))).rowCount !== 1) {
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
    this.position = toSeq;
    this.notify();
  }
}

