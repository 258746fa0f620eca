// Finds a remember job for its owner: the status read model first, then the command still on the work queue, then
// the job's events — so a poll right after the 202 never answers 404 to the job's owner. Whatever the source, the
// job's state is the one fold of schemas/relayer/job-view.ts (only the actor host reads the actor's snapshots).
import type { EventLog } from "../../eventlog/connection.ts";
import { JOB_OUTCOMES, STREAMS, commandSubject } from "../../eventlog/subjects.ts";
import { lastMessage } from "../../eventlog/last-message.ts";
import { EventStore } from "../../eventlog/event-store.ts";
import type { CheckpointFeed } from "../checkpoint-feed.ts";
import { prepared, type Db } from "../../db/pool.ts";
import { primaryReads, type Reads } from "../../db/read-pool.ts";
import { ArrivalBatcher } from "../../adapters/arrival-batcher.ts";
import { JOB, type JobEventData, type JobOutcome, type JobStatus } from "../../schemas/relayer/remember-job.ts";
import { foldJob, jobView, visibleStatus, type JobView } from "../../schemas/relayer/job-view.ts";
import { MEMORY_INDEX } from "./memory-index.ts";
import { LEXICAL_INDEX } from "./lexical-index.ts";

/** The read models recall reads: a job is done (recallable) once all of them have applied its indexing commit. */
const RECALL_INDEXES = [MEMORY_INDEX, LEXICAL_INDEX];

/**
 * Jobs by id and owner as the read model has them, with the recall indexes' lowest checkpoint and the index that set
 * a commit of the job aside, if any (what the status reads as: job-view.ts visibleStatus). Prepared: every long poll
 * runs it, and planning it cost Postgres several times what executing it does.
 */
const FIND_JOBS = `WITH cp AS (SELECT coalesce(min(seq), 0) AS seq FROM projection_checkpoints WHERE name = ANY($3::text[]))
  SELECT j.job_id::text, j.owner, j.namespace, j.blob_id, j.error, j.status, j.done_seq, cp.seq AS recall_seq,
         d.projection AS set_aside_by, d.error AS set_aside_error
  FROM unnest($1::uuid[], $2::text[]) AS w(job_id, owner)
  JOIN remember_jobs j ON j.job_id = w.job_id AND j.owner = w.owner
  CROSS JOIN cp
  LEFT JOIN LATERAL (SELECT projection, error FROM dead_letters WHERE aggregate = 'job.' || j.job_id::text AND projection = ANY($3::text[]) LIMIT 1) d ON true`;

const FINAL: readonly JobStatus[] = ["done", "failed"];
/** Jobs missing from the read model read from the log at once, per lookup. */
const LOG_READS_AT_ONCE = 8;
/**
 * A long poll with no outcome announced reads the job again after SAFETY_RECHECK_MS, then twice as long each time up to
 * SAFETY_RECHECK_MAX_MS: an announcement is core NATS, so one sent while the gateway's connection was down is lost, and
 * these reads find its outcome. At a fixed 250 ms every waiting poll cost a read 4 times a second: 4,096 memories in
 * flight for 6–18 s each under the testnet profile made 24–72 reads per memory, and the gateway's and Postgres's CPU
 * for them tripled the CPU per memory (bench/NOTES.md, issue 31, stop 41).
 */
const SAFETY_RECHECK_MS = 250;
const SAFETY_RECHECK_MAX_MS = 4_000;

interface JobRead {
  readonly id: string;
  readonly owner: string;
}

const readKey = (id: string, owner: string) => `${id} ${owner}`;

interface Found {
  readonly view: JobView;
  /** Done in the status model, not yet applied by the recall indexes: the sequence they must reach. */
  readonly unindexedSeq?: number;
}

/** One long poll's side of the outcome announcements: the latest outcome of its job not yet acted on. */
class OutcomeWaiter {
  private outcome?: JobOutcome;
  private wake?: () => void;

  offer(outcome: JobOutcome): void {
    this.outcome = outcome;
    this.wake?.();
  }

  /** The outcome announced since the last take, if any. */
  take(): JobOutcome | undefined {
    const o = this.outcome;
    this.outcome = undefined;
    return o;
  }

  get announced(): boolean {
    return this.outcome !== undefined;
  }

  /** Resolves on the next announced outcome, or after `ms`. */
  next(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        this.wake = undefined;
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

export class JobLookup {
  private readonly store: EventStore<JobEventData>;
  /** Long polls in progress by job id (several may wait on one job). */
  private readonly waiting = new Map<string, Set<OutcomeWaiter>>();
  /**
   * Single-job reads, batched by arrival (adapters/arrival-batcher.ts) a whole turn at a time: the long polls of the
   * jobs one batch finished wake on the same announcement, and their reads go to Postgres as one query. A job whose fallback to the event log
   * failed gets its own error, not the batch.
   */
  private readonly reads = new ArrivalBatcher<JobRead, Found | undefined | Error>(async (wanted) => {
    const found = await this.findMany(wanted);
    return wanted.map(({ id, owner }) => found.get(readKey(id, owner)));
  }, 4, 256, { wholeTurn: true });

  constructor(
    private readonly db: Db,
    private readonly log: EventLog,
    private readonly feed: CheckpointFeed,
    /** Where job reads may go (DATABASE_READ_URLS replicas, fenced so a job never reads older than it was). */
    private readonly pools: Reads = primaryReads(db),
  ) {
    this.store = new EventStore(log.js, log.jsm);
    log.nc.subscribe(JOB_OUTCOMES, {
      callback: (err, m) => {
        if (!err) this.announced(m.data);
      },
    });
  }

  /**
   * `one`, but while the job is not done or failed, waits up to `waitMs` for it to be (a long poll). The job-status
   * model's announcement of the job's outcome (job-status.ts `announce`) and then the announced checkpoints of the
   * recall indexes (projections/checkpoint-feed.ts) say when to read again, so a wait costs a read after the outcome
   * and no request of its own on the event log; reads spaced from SAFETY_RECHECK_MS up to SAFETY_RECHECK_MAX_MS cover an
   * announcement missed.
   * `justPublished`: the job as the route that published its command knows it (POST /api/remember?wait=).
   */
  async settled(id: string, owner: string, waitMs: number, justPublished?: JobView): Promise<JobView | undefined> {
    if (!waitMs) return justPublished ?? this.one(id, owner);
    const deadline = Date.now() + waitMs;
    // Registered before the first read: an outcome announced after that read cannot be missed.
    const waiter = this.register(id);
    try {
      // A job whose command was just published is running: no read needed to know it.
      let j = justPublished ? { view: justPublished } : await this.find(id, owner);
      let recheckMs = SAFETY_RECHECK_MS;
      while (j && !FINAL.includes(j.view.status) && Date.now() < deadline) {
        const left = deadline - Date.now();
        const outcome = waiter.take();
        if (j.unindexedSeq !== undefined) await this.feed.waitFor(RECALL_INDEXES, j.unindexedSeq, left);
        // the status model has the outcome (it announces after its commit); for "done" the recall indexes must too
        else if (outcome?.status === "done") await this.feed.waitFor(RECALL_INDEXES, outcome.seq, left);
        else if (!outcome) {
          await waiter.next(Math.min(recheckMs, left));
          if (waiter.announced) continue;
          recheckMs = Math.min(recheckMs * 2, SAFETY_RECHECK_MAX_MS);
        }
        j = await this.find(id, owner);
      }
      return j?.view;
    } finally {
      this.unregister(id, waiter);
    }
  }

  private register(id: string): OutcomeWaiter {
    const waiter = new OutcomeWaiter();
    const set = this.waiting.get(id) ?? new Set();
    this.waiting.set(id, set.add(waiter));
    return waiter;
  }

  private unregister(id: string, waiter: OutcomeWaiter): void {
    const set = this.waiting.get(id);
    set?.delete(waiter);
    if (set?.size === 0) this.waiting.delete(id);
  }

  private announced(data: Uint8Array): void {
    if (!this.waiting.size) return;
    let outcomes: unknown;
    try {
      outcomes = JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString());
    } catch {
      return; // not ours to judge: long polls fall back to their rereads
    }
    if (!Array.isArray(outcomes)) return;
    for (const o of outcomes as JobOutcome[]) {
      if (typeof o?.job_id !== "string" || (o.status !== "done" && o.status !== "failed") || !Number.isSafeInteger(o.seq)) continue;
      for (const waiter of this.waiting.get(o.job_id) ?? []) waiter.offer(o);
    }
  }

  async many(ids: readonly string[], owner: string): Promise<Map<string, JobView>> {
    const found = await this.findMany(ids.map((id) => ({ id, owner })));
    const views = new Map<string, JobView>();
    for (const id of ids) {
      const f = found.get(readKey(id, owner));
      if (f instanceof Error) throw f;
      if (f) views.set(id, f.view);
    }
    return views;
  }

  /** The job as `one` answers it, and, when it is done but not yet recallable, the sequence the indexes must reach. */
  private async find(id: string, owner: string): Promise<Found | undefined> {
    const found = await this.reads.submit({ id, owner });
    if (found instanceof Error) throw found;
    return found;
  }

  /** Jobs by id for their owners (another owner's job is not found), keyed by readKey: the read model, then the log. */
  private async findMany(wanted: readonly JobRead[]): Promise<Map<string, Found | Error>> {
    const found = new Map<string, Found | Error>();
    if (!wanted.length) return found;
    const r = await this.pools.read((db) => db.query<FoundRow>(prepared(FIND_JOBS, [wanted.map((w) => w.id), wanted.map((w) => w.owner), RECALL_INDEXES])));
    for (const row of r.rows) found.set(readKey(row.job_id, row.owner), fromRow(row));
    const missing = wanted.filter(({ id, owner }) => !found.has(readKey(id, owner)));
    // A few at a time: a bulk status of jobs the read model does not hold yet (it lags after an outage) would otherwise
    // open a consumer per job at once on a cluster that is just recovering.
    for (let i = 0; i < missing.length; i += LOG_READS_AT_ONCE) {
      await Promise.all(missing.slice(i, i + LOG_READS_AT_ONCE).map(async ({ id, owner }) => {
        const v = await this.fromLog(id).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
        if (v instanceof Error) found.set(readKey(id, owner), v);
        else if (v && v.owner === owner) found.set(readKey(id, owner), { view: v });
      }));
    }
    return found;
  }

  async one(id: string, owner: string): Promise<JobView | undefined> {
    return (await this.many([id], owner)).get(id);
  }

  private async fromLog(id: string): Promise<JobView | undefined> {
    // The command first: it stays on the queue until the job is finished (a job the host put back to retry may be
    // further along, and its row in the read model then usually says so already). After it, the job's events.
    const cmd = await lastMessage(this.log.jsm, STREAMS.commands, commandSubject(JOB, id)).catch(() => null);
    if (cmd) return { job_id: id, status: "running", ...commandOwner(cmd.data) };
    return this.fromEvents(id);
  }

  /** The job as its events tell it (the read model lags): rare, so the whole history is read. */
  private async fromEvents(id: string): Promise<JobView | undefined> {
    const { events } = await this.store.load(`job.${id}`);
    const state = foldJob(events);
    const { owner } = state;
    if (owner === undefined) return undefined;
    const recallSeq = state.status === "done" ? await this.indexCheckpoint() : 0;
    return jobView(id, { ...state, owner }, visibleStatus(state, recallSeq));
  }

  private async indexCheckpoint(): Promise<number> {
    return this.db
      .query<{ seq: string | null }>(prepared("SELECT min(seq) AS seq FROM projection_checkpoints WHERE name = ANY($1::text[])", [RECALL_INDEXES]))
      .then((r) => Number(r.rows[0]?.seq ?? 0), () => 0);
  }

}

interface FoundRow {
  readonly job_id: string;
  readonly owner: string;
  readonly namespace: string;
  readonly status: JobStatus;
  readonly blob_id: string | null;
  readonly error: string | null;
  readonly done_seq: string | null;
  readonly recall_seq: string;
  readonly set_aside_by: string | null;
  readonly set_aside_error: string | null;
}

/** A read-model row as its owner reads it, and the sequence the recall indexes must reach while it reads uploaded. */
function fromRow(row: FoundRow): Found {
  const state = { status: row.status, owner: row.owner, namespace: row.namespace, blob_id: row.blob_id ?? undefined, error: row.error ?? undefined, done_seq: row.done_seq === null ? undefined : Number(row.done_seq) };
  const setAsideBy = row.set_aside_by ?? undefined;
  const status = visibleStatus(state, Number(row.recall_seq), setAsideBy);
  const error = state.error ?? (setAsideBy ? `set aside by ${setAsideBy}: ${row.set_aside_error}` : undefined);
  return { view: jobView(row.job_id, state, status, error), unindexedSeq: status === "uploaded" && state.status === "done" ? state.done_seq : undefined };
}

// `"data":{"owner":…,"namespace":…` as the gateway writes a remember command (JSON.stringify: a quote inside a string
// value is always escaped, so this sequence is the command's own structure, never a text's).
const COMMAND_HEAD = /"data":\{"owner":("(?:[^"\\]|\\.)*"),"namespace":("(?:[^"\\]|\\.)*")/;

/**
 * The owner and namespace of a remember command, read from its first 2 KiB: the text after them can be 1 MiB, and a
 * client polls its running job every few hundred ms (bench 2d: parsing the whole command took 12 s of the gateway's
 * event loop during the long remembers). A command of another shape is parsed whole.
 */
export function commandOwner(raw: Uint8Array): { owner: string; namespace: string } {
  const m = COMMAND_HEAD.exec(new TextDecoder().decode(raw.subarray(0, 2048)));
  if (m) return { owner: JSON.parse(m[1]) as string, namespace: JSON.parse(m[2]) as string };
  const { owner, namespace } = (JSON.parse(new TextDecoder().decode(raw)) as { data: { owner: string; namespace: string } }).data;
  return { owner, namespace };
}
