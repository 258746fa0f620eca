// Projection runtime: an ordered JetStream consumer per projection, starting after the checkpoint kept in Postgres.
// Each batch of events is applied and the checkpoint advanced in one transaction, with a compare-and-set on the
// checkpoint, so a redelivered event changes nothing and a reset (replay) made by another process is noticed.
// A batch that fails for a reason other than an unavailable backing service is applied again commit by commit; a
// commit that still fails after MAX_APPLY_ATTEMPTS (lane.ts) is set aside (DLQ stream, alert, `dead_letters` row, the
// projection's own record of the failure) and the checkpoint moves past it, so no event stalls the stream.
import type { EventLog } from "../eventlog/connection.ts";
import { decodeCommit } from "../eventlog/event-store.ts";
import { followConsumer } from "../eventlog/follow-consumer.ts";
import type { EventEnvelope, StoredEvent } from "../schemas/envelope.ts";
import { inTransaction, type Db, type Tx } from "../db/pool.ts";
import type { Logger } from "../config/logger.ts";
import { applyTogether, CheckpointMoved, Lane, type LaneBatch } from "./lane.ts";
import { ArrivalBatcher } from "../adapters/arrival-batcher.ts";
import { identityOf, logStillAnswers, ReadModelOfAnotherLog, type LogIdentity } from "./log-claim.ts";

/**
 * A read model fed by the events of one subject family, E being that family's catalogue (e.g. `JobLogEvent`): the
 * runtime reads untyped commits, and the filter is what makes them E, so `apply` narrows on `event.type` with no cast.
 */
export interface Projection<E extends EventEnvelope = EventEnvelope> {
  readonly name: string;
  /** Subject filter on the EVT stream, e.g. `evt.job.>`. */
  readonly filter: string;
  /** Creates the read model's tables (idempotent). */
  migrate(db: Db): Promise<void>;
  /** Empties the read model before a replay from sequence 1. */
  reset(tx: Tx): Promise<void>;
  /** Applies a batch of events inside the projection's transaction. */
  apply(tx: Tx, events: readonly StoredEvent<E>[]): Promise<void>;
  /**
   * Optional cheap test on a raw commit: false means it holds nothing `apply` would use, so it is not decoded
   * (the checkpoint still moves past it). For projections that read a few event types of a busy subject.
   */
  readonly wants?: (raw: Uint8Array) => boolean;
  /**
   * Optional: records, in the read model, that a commit's events were set aside (e.g. the jobs they belong to
   * failed). Runs in the transaction that moves the checkpoint past them; must not fail on the data that failed.
   */
  setAside?(tx: Tx, events: readonly StoredEvent<E>[], error: string): Promise<void>;
  /**
   * Optional: what to tell readers in other processes about a batch once it is committed (core NATS, at most once),
   * published before the checkpoint's announcement; undefined says nothing.
   */
  announce?(applied: readonly StoredEvent<E>[]): { subject: string; data: Uint8Array } | undefined;
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
  // another stream (a fresh log, or one restored from a backup), so a mismatch rebuilds the read model (or refuses the
  // start while that other log still runs, see claimForLog).
  await db.query("ALTER TABLE projection_checkpoints ADD COLUMN IF NOT EXISTS stream_created text");
  // Where that stream was read (host:port): another log asks it whether this one is still running (log-claim.ts).
  await db.query("ALTER TABLE projection_checkpoints ADD COLUMN IF NOT EXISTS stream_server text");
  // Commits a projection set aside (also on the DLQ stream): what `memrelay lag` counts and job lookups consult.
  await db.query(`CREATE TABLE IF NOT EXISTS dead_letters (
    projection text NOT NULL, seq bigint NOT NULL, subject text NOT NULL, aggregate text NOT NULL, types text[] NOT NULL,
    error text NOT NULL, attempts int NOT NULL, at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (projection, seq))`);
  await db.query("CREATE INDEX IF NOT EXISTS dead_letters_aggregate ON dead_letters (aggregate)");
}

/**
 * Claims the read model for this event log. Built from another log: when that log still answers at its recorded
 * server, another stack is running on this database and the start is refused (unless `takeOver`: an explicit
 * `memrelay replay`); when it is gone, the read model is rebuilt from this one.
 */
async function claimForLog(db: Db, log: EventLog, p: Projection, logger: Logger, takeOver: boolean): Promise<LogIdentity> {
  const mine = await identityOf(log);
  await inTransaction(db, async (tx) => {
    // Two stacks starting at once on one database must not both find the read model unclaimed.
    await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`projection_checkpoints:${p.name}`]);
    const r = await tx.query<{ stream_created: string | null; stream_server: string | null; seq: string }>("SELECT stream_created, stream_server, seq FROM projection_checkpoints WHERE name = $1", [p.name]);
    const row = r.rows[0];
    const other = row?.stream_created && row.stream_created !== mine.created ? { created: row.stream_created, server: row.stream_server ?? "" } : undefined;
    // (a row recorded before servers were has no server to ask: its log is treated as gone, as it always was)
    if (other?.server && !takeOver && (await logStillAnswers(other))) throw new ReadModelOfAnotherLog(p.name, other);
    if (other && Number(row.seq) > 0) {
      const why = takeOver ? "taken over by this event log (replay)" : `the event log it was built from (NATS at ${other.server || "an unrecorded server"}) no longer answers`;
      logger.warn(`read model built from another event log: ${why}; rebuilding`, { projection: p.name });
      // In the claiming transaction: a crash in between must not leave the old rows claimed by the new log.
      await emptyReadModel(tx, p);
    }
    await tx.query(
      `INSERT INTO projection_checkpoints (name, seq, stream_created, stream_server) VALUES ($1, 0, $2, $3)
       ON CONFLICT (name) DO UPDATE SET stream_created = EXCLUDED.stream_created, stream_server = EXCLUDED.stream_server`,
      [p.name, mine.created, mine.server],
    );
  });
  return mine;
}

export async function readCheckpoint(db: Db | Tx, name: string): Promise<number> {
  const r = await db.query<{ seq: string }>("SELECT seq FROM projection_checkpoints WHERE name = $1", [name]);
  return r.rows.length ? Number(r.rows[0].seq) : 0;
}

/** Empties a projection's read model and rewinds its checkpoint; a running instance notices and rebuilds. */
export async function resetProjection(db: Db, p: Projection): Promise<void> {
  await inTransaction(db, (tx) => emptyReadModel(tx, p));
}

async function emptyReadModel(tx: Tx, p: Projection): Promise<void> {
  await tx.query("INSERT INTO projection_checkpoints (name, seq) VALUES ($1, 0) ON CONFLICT (name) DO UPDATE SET seq = 0, updated_at = now()", [p.name]);
  await tx.query("SELECT seq FROM projection_checkpoints WHERE name = $1 FOR UPDATE", [p.name]);
  // A replay tries every commit again, the ones set aside before included.
  await tx.query("DELETE FROM dead_letters WHERE projection = $1", [p.name]);
  await p.reset(tx);
}

const MAX_BATCH = 2_000;
/**
 * Commits a projection skips (`wants` false) move its checkpoint at most this much later, or with the next batch it
 * applies: under load every remember job's first commit is one, and a statement per commit per projection was a
 * large share of Postgres's work. Whoever waits for a wanted commit (job done, index barriers) never waits for this.
 */
const SKIPPED_MOVE_DELAY_MS = 100;
const CHECKPOINT_POLL_MS = 1_000;
const PULL_MAX_MESSAGES = 512;

/** How much a runner takes at once: live defaults, or larger for a catch-up (replay). */
export interface FeedLimits {
  /** Events a lane buffers before the consumer waits for its batch to be applied. */
  readonly maxBatch: number;
  /** Messages pulled from JetStream at once. */
  readonly pullMessages: number;
  /** Lanes that flush in the same turn share one transaction (`SharedCommit`). */
  readonly sharedCommit: boolean;
}
/** A live runner's limits. */
export const LIVE: FeedLimits = { maxBatch: MAX_BATCH, pullMessages: PULL_MAX_MESSAGES, sharedCommit: true };

const laneNames = (lanes: readonly Lane[]) => lanes.map((l) => l.projection.name).join(", ");

type ApplyBatch = (lane: Lane, batch: StoredEvent[], toSeq: number) => Promise<void>;
const applyAlone: ApplyBatch = (lane, batch, toSeq) => lane.apply(batch, toSeq);

/** Events of a batch beyond which its lane commits alone: in parallel with the others, where big batches gain more. */
const SHARED_BATCH_MAX_EVENTS = 256;

/**
 * Gathers the small batches that the lanes of one consumer flush in the same turn of the event loop into one
 * transaction: live, an indexing commit reaches three of the relayer's job read models at once, and one BEGIN,
 * checkpoint update and COMMIT then does for all three. A batch alone, a big one (a live runner catching up), or a
 * shared transaction that fails is applied by its lane alone. Not for a catch-up (CATCH_UP): there the lanes'
 * transactions run in parallel on separate connections.
 */
class SharedCommit {
  private readonly turns: ArrivalBatcher<LaneBatch, Promise<void>>;

  constructor(db: Db) {
    // Every turn's batches go at once (no limit in flight); each lane gets its own outcome, its fallback included.
    this.turns = new ArrivalBatcher<LaneBatch, Promise<void>>(
      async (group) => {
        const together = group.length > 1 && (await applyTogether(db, group));
        return group.map((e) => (together ? Promise.resolve() : applyAlone(e.lane, e.batch, e.toSeq)));
      },
      Number.POSITIVE_INFINITY,
      Number.POSITIVE_INFINITY,
      { wholeTurn: true },
    );
  }

  readonly apply: ApplyBatch = async (lane, batch, toSeq) => {
    if (batch.length > SHARED_BATCH_MAX_EVENTS) return applyAlone(lane, batch, toSeq);
    await this.turns.submit({ lane, batch, toSeq });
  };
}

/** One lane's share of a consumer: what it buffered, how far it read, its flush in progress. */
class LaneFeed {
  readonly buffer: StoredEvent[] = [];
  lastSeq: number;
  flushing?: Promise<void>;
  private skippedMove?: NodeJS.Timeout;
  private closed = false;
  private takers: (() => void)[] = [];

  constructor(
    readonly lane: Lane,
    private readonly fail: (err: unknown) => void,
    private readonly failed: () => boolean,
    private readonly applyBatch: ApplyBatch,
  ) {
    lane.buffered = 0;
    this.lastSeq = lane.position;
  }

  /** `skipped`: also move past commits that only `wants` skipped (else they wait, see SKIPPED_MOVE_DELAY_MS). */
  private async flush(skipped: boolean): Promise<void> {
    const lane = this.lane;
    // Everything up to lastSeq is buffered or was skipped by `wants`, so the batch reaches lastSeq.
    try {
      while ((this.buffer.length || (skipped && this.lastSeq > lane.position)) && !this.failed()) {
        const batch = this.buffer.splice(0, this.buffer.length);
        this.released();
        try {
          await this.applyBatch(lane, batch, this.lastSeq);
          if (!this.buffer.length) lane.buffered = 0;
        } catch (err) {
          this.fail(err);
        }
      }
    } finally {
      this.released();
    }
    if (this.lastSeq > lane.position && !this.failed()) this.moveSkippedLater();
  }

  /**
   * Resolves when the lane next takes its buffer as a batch (or stops flushing): the consumer waits for room, not
   * for the batch to be applied — waiting for the flush to end held every lane of a shared consumer idle while the
   * slowest applied its next batch, and left that one idle while the consumer refilled it.
   */
  taken(): Promise<void> {
    return new Promise((r) => this.takers.push(r));
  }

  private released(): void {
    for (const r of this.takers.splice(0)) r();
  }

  schedule(skipped: boolean): void {
    if (!this.flushing) this.flushing = new Promise<void>((r) => setImmediate(r)).then(() => this.flush(skipped)).finally(() => (this.flushing = undefined));
  }

  moveSkippedLater(): void {
    // A flush of a closed feed that ends after close() must not leave a timer behind: it would flush this feed's
    // lastSeq into the lane while the next consumer feeds it, past commits that consumer has not applied yet (after a
    // replay's reset, past the whole rebuild).
    if (this.closed) return;
    this.skippedMove ??= setTimeout(() => {
      this.skippedMove = undefined;
      this.schedule(true);
    }, SKIPPED_MOVE_DELAY_MS);
  }

  /** Takes a received commit (`decode` decodes it once for every lane that wants it). */
  take(seq: number, subject: string, raw: Uint8Array, decode: () => readonly EventEnvelope[]): void {
    if (seq <= this.lastSeq) return;
    this.lastSeq = seq;
    const wants = this.lane.projection.wants;
    if (!wants || wants(raw)) for (const event of decode()) this.buffer.push({ seq, subject, event });
    this.lane.buffered = this.buffer.length + 1;
    if (this.buffer.length) this.schedule(false);
    else if (!this.flushing) this.moveSkippedLater();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.skippedMove);
  }
}

/**
 * Follows the EVT stream for one or several lanes of the same subject filter with one ordered consumer, from the
 * earliest of their checkpoints; each lane applies its own batches in its own transactions. A failure or a moved
 * checkpoint in any lane restarts the consumer, and every lane resumes from its own checkpoint.
 */
abstract class FeedRunner {
  private stopped = false;
  /** Matching events the log still holds beyond what was received (from the consumer's delivery info). */
  protected backlog = Number.POSITIVE_INFINITY;
  private stopCurrent?: () => void;
  /** Ends the current consumer so the next one starts from the lanes' checkpoints (lanes changed, or moved). */
  private restartCurrent?: () => void;
  /** The lanes this runner still feeds (a lane stopped alone leaves the others running). */
  protected lanes: readonly Lane[];
  /** The identity of the event log this runner claimed its read models for (log-claim.ts). */
  private claimedFor?: string;

  protected constructor(
    private readonly log: EventLog,
    private readonly db: Db,
    lanes: readonly Lane[],
    private readonly logger: Logger,
    private readonly limits: FeedLimits,
  ) {
    if (new Set(lanes.map((l) => l.projection.filter)).size !== 1) throw new Error("the projections of one runner must follow the same subjects");
    this.lanes = lanes;
  }

  /** `takeOver`: claim read models another event log built even while it runs (an explicit `memrelay replay`). */
  async start(opts: { takeOver?: boolean } = {}): Promise<void> {
    for (const { projection } of this.lanes) await projection.migrate(this.db);
    await migrateCheckpoints(this.db);
    for (const { projection } of this.lanes) this.claimedFor = (await claimForLog(this.db, this.log, projection, this.logger, opts.takeOver ?? false)).created;
    void this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopCurrent?.();
  }

  /** Stops feeding one lane; the others go on (from their checkpoints), and the last one stopped stops the runner. */
  protected async stopLane(lane: Lane): Promise<void> {
    this.lanes = this.lanes.filter((l) => l !== lane);
    if (!this.lanes.length) return this.stop();
    this.restartCurrent?.();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        await this.stopLanesTakenOver();
        if (this.stopped) break;
        for (const lane of this.lanes) {
          lane.position = await readCheckpoint(this.db, lane.projection.name);
          // Another process may have applied what a waiter waits for (a checkpoint moved past it): release it.
          lane.notify();
        }
        await this.follow();
        failures = 0;
      } catch (err) {
        if (this.stopped) break;
        if (!(err instanceof CheckpointMoved)) {
          failures++;
          this.logger.warn("projection paused; will resume from its checkpoint", { projection: laneNames(this.lanes), error: err instanceof Error ? err.message : String(err) });
          await new Promise((r) => setTimeout(r, Math.min(5_000, 100 * 2 ** Math.min(failures, 6))));
        }
      }
    }
  }

  /**
   * A replay from another event log may claim a read model while this runner feeds it (it then sees the checkpoint
   * move, as for any replay): applying this log's events on top would mix two logs, so the lane stops instead.
   */
  private async stopLanesTakenOver(): Promise<void> {
    const r = await this.db.query<{ name: string }>("SELECT name FROM projection_checkpoints WHERE name = ANY($1) AND stream_created IS DISTINCT FROM $2", [this.lanes.map((l) => l.projection.name), this.claimedFor]);
    for (const lane of this.lanes.filter((l) => r.rows.some((row) => row.name === l.projection.name))) {
      this.logger.error("read model taken over by another event log (memrelay replay against it); no longer applying this log's events to it: check DATABASE_URL / MEMRELAY_DATA_DIR", { projection: lane.projection.name });
      await this.stopLane(lane);
    }
  }

  private async follow(): Promise<void> {
    const from = Math.min(...this.lanes.map((l) => l.position));
    // A modest pull: a commit can be tens of KiB (vectors), and several projections in one process share a
    // connection whose pending bytes nats-server caps (64 MiB); past it the server cuts the connection as a slow
    // consumer and every consumer on it is lost (seen with 4,096: stalls of 10–30 s during catch-up).
    const consumer = await followConsumer(this.log, this.lanes[0].projection.filter, from, this.limits.pullMessages);
    this.backlog = consumer.pending;
    const messages = consumer.messages;
    let failure: unknown;
    const fail = (err: unknown) => {
      failure ??= err;
      messages.stop();
    };
    // What an earlier consumer had buffered went with it (a restart after another runner moved the checkpoint): a
    // count left over would read as events pending forever when the new one has nothing to deliver.
    const applyBatch = this.limits.sharedCommit && this.lanes.length > 1 ? new SharedCommit(this.db).apply : applyAlone;
    const feeds = this.lanes.map((lane) => new LaneFeed(lane, fail, () => failure !== undefined, applyBatch));
    this.stopCurrent = () => messages.stop();
    // An idle lane sees no batch to fail its compare-and-set: poll the checkpoints so a reset made by another process
    // (operator replay) restarts the runner from sequence 1 even when no new events arrive.
    let moved = false;
    this.restartCurrent = () => {
      moved = true;
      messages.stop();
    };
    const watch = setInterval(() => {
      for (const f of feeds) {
        if (f.flushing || f.buffer.length) continue;
        readCheckpoint(this.db, f.lane.projection.name).then((stored) => {
          if (!f.flushing && !f.buffer.length && stored !== f.lane.position) this.restartCurrent?.();
        }, () => undefined);
      }
    }, CHECKPOINT_POLL_MS);
    try {
      for await (const m of messages) {
        consumer.check(m);
        this.backlog = m.info.pending;
        let events: readonly EventEnvelope[] | undefined;
        const decode = () => (events ??= decodeCommit(m.data).events);
        for (const f of feeds) if (this.lanes.includes(f.lane)) f.take(m.seq, m.subject, m.data, decode);
        for (const f of feeds) while (f.buffer.length >= this.limits.maxBatch && f.flushing && !failure) await f.taken();
        if (failure) break;
      }
    } catch (err) {
      // A lost consumer or a delivery out of order: the flushes under way end (below) before the runner starts again
      // from the checkpoints, so no batch of this consumer is applied beside the next consumer's.
      fail(err);
    } finally {
      clearInterval(watch);
      for (const f of feeds) f.close();
      void consumer.close();
    }
    await Promise.all(feeds.map((f) => f.flushing));
    if (failure) throw failure;
    if (moved) throw new CheckpointMoved(`checkpoint of ${laneNames(feeds.map((f) => f.lane))} was moved, or a lane stopped`);
  }
}

/** One projection's side of a runner, whichever consumer feeds it: what metrics, waiters and tests read. */
export interface ProjectionHandle {
  readonly projection: Projection;
  /** Events not yet applied; 0 means caught up with the log. */
  readonly pending: number;
  /** Last sequence applied. */
  readonly checkpoint: number;
  /** Resolves once `seq` is applied (or the timeout passes; then resolves false). */
  waitFor(seq: number, timeoutMs: number): Promise<boolean>;
  /** Stops applying this projection's events (the others of a shared consumer go on). */
  stop(): Promise<void>;
}

/** Runs one projection: its own consumer (a read model other processes wait on alone, e.g. the blob store's). */
export class ProjectionRunner extends FeedRunner implements ProjectionHandle {
  private readonly lane: Lane;

  constructor(log: EventLog, db: Db, readonly projection: Projection, logger: Logger, network = "local") {
    const lane = new Lane(log, db, projection, logger, network);
    super(log, db, [lane], logger, LIVE);
    this.lane = lane;
  }

  /** Events not yet applied; 0 means caught up with the log. */
  get pending(): number {
    return this.backlog + this.lane.buffered;
  }

  /** Last sequence this runner applied. */
  get checkpoint(): number {
    return this.lane.position;
  }

  /** Resolves once this runner has applied `seq` (or the timeout passes; then resolves false). */
  waitFor(seq: number, timeoutMs: number): Promise<boolean> {
    return this.lane.waitFor(seq, timeoutMs);
  }
}

/** A catch-up's limits: larger batches and pulls, for one consumer that feeds several read models (a replay). */
export const CATCH_UP: FeedLimits = { maxBatch: 8_000, pullMessages: 1_024, sharedCommit: false };

/**
 * Runs several projections of the same subject filter from one consumer (`memrelay replay`, and the relayer's job
 * read models live): each commit crosses the connection and is decoded once for all of them, and each still applies
 * and checkpoints in its own transactions, concurrently. A slow one holds the others back only once it has a full
 * batch (`maxBatch`) waiting.
 */
export class ProjectionGroupRunner extends FeedRunner {
  private readonly fed: readonly Lane[];

  constructor(log: EventLog, db: Db, projections: readonly Projection[], logger: Logger, network = "local", limits: FeedLimits = CATCH_UP) {
    const lanes = projections.map((p) => new Lane(log, db, p, logger.child({ projection: p.name }), network));
    super(log, db, lanes, logger, limits);
    this.fed = lanes;
  }

  /** A handle per projection; stopping one leaves the others running. */
  handles(): ProjectionHandle[] {
    const runner = this;
    return this.fed.map((lane) => ({
      projection: lane.projection,
      get pending() {
        return runner.backlog + lane.buffered;
      },
      get checkpoint() {
        return lane.position;
      },
      waitFor: (seq, timeoutMs) => lane.waitFor(seq, timeoutMs),
      stop: () => runner.stopLane(lane),
    }));
  }

}

/** Projections grouped by the subjects they follow (in order of first appearance): one consumer can feed each group. */
export function bySubjects(projections: readonly Projection[]): Projection[][] {
  const groups = new Map<string, Projection[]>();
  for (const p of projections) groups.set(p.filter, [...(groups.get(p.filter) ?? []), p]);
  return [...groups.values()];
}
