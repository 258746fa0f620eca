// Reads that may go to PostgreSQL streaming replicas (DATABASE_READ_URLS) without losing "done means recallable".
//
// Every read is fenced: the primary's WAL insert position is read when the read starts (one cheap round trip, shared by
// the reads that arrive while it is under way), and a replica serves the read only once it has replayed that far, so it
// sees every commit the primary had made, the one behind a `done` the client just saw included. The insert position,
// not the flush position: projections commit asynchronously (db/pool.ts asyncCommit), and their commits are visible on
// the primary before they are flushed. A replica still behind waits up to DATABASE_READ_WAIT_MS; after that the read
// goes to the primary. A replica that fails a health check, fails a read, or lags by more than
// DATABASE_READ_MAX_LAG_MS is skipped until a health check finds it well again, so a stopped or stalled standby costs
// reads nothing but the primary's load.
import { createPool, registerVectorType, type Db } from "./pool.ts";
import type { Logger } from "../config/logger.ts";
import { withTimeout } from "../config/time-bounds.ts";
import { parseLsn, replayLagSeconds, type PrimarySample } from "./wal-position.ts";

export interface ReadPoolSettings {
  /** Longest wait for a replica to replay a read's fence before the read goes to the primary. */
  readonly waitMs: number;
  /** A replica trailing the primary by more than this is skipped. */
  readonly maxLagMs: number;
  /** How often replicas and the primary's WAL position are checked. */
  readonly checkEveryMs?: number;
}

/** Why a read went where it went (the `reason` label of the reads counter). */
export type ReadRoute = "replica_fresh" | "replica_waited" | "primary_only" | "no_healthy_replica" | "replay_wait_timeout" | "replica_failed" | "fence_failed";

export interface ReplicaHealth {
  /** host:port/database, never credentials. */
  readonly name: string;
  readonly up: boolean;
  /** Undefined until the first successful check. */
  readonly lagSeconds: number | undefined;
  readonly lagBytes: number | undefined;
}

/** Where reads go. `primaryReads` when no replica is configured. */
export interface Reads {
  /** Runs `fn` on a pool that has every commit the primary had made when the read started. */
  read<T>(fn: (db: Db) => Promise<T>): Promise<T>;
}

export const primaryReads = (db: Db): Reads => ({ read: (fn) => fn(db) });

const DEFAULT_CHECK_MS = 250;
/** A check that takes longer than this finds the replica down (a stalled server must not stall the checks). */
const CHECK_TIMEOUT_MS = 1_000;
/** Replay polls of a replica that reads are waiting on. */
const REPLAY_POLL_MS = 2;
/**
 * How long a replay position seen is taken as the replica's own without asking again. Short: a standby restarted in
 * the meantime may serve reads from an earlier position (its consistent point) than the one it had reached.
 */
const REPLAY_TRUSTED_MS = 100;
/** Primary positions kept for the lag in seconds: lags beyond this window read as the window. */
const SAMPLES_KEPT = 240;

/** SQLSTATE classes that say the server or the connection is unwell, not the statement wrong. */
const SERVER_TROUBLE = /^(08|53|57|58|40)/;
/** A replica's connections: few (reads are short). */
const REPLICA_CONNECTIONS = 10;
/**
 * A replica that stops answering (a frozen host, a network black hole) fails a read after this long, which the primary
 * then answers, instead of holding it; the next check skips the replica. Far above a recall's query time.
 */
const REPLICA_TIMEOUTS = { connectMs: 1_000, queryMs: 2_000 };

/** True when a failed read says the replica is in trouble: no SQLSTATE (a socket error, a timeout) or a server one. */
export function replicaInTrouble(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code !== "string" || !/^[0-9A-Z]{5}$/.test(code) || SERVER_TROUBLE.test(code);
}

/** The name of a replica in metrics and logs: its address, without user or password. */
export function replicaName(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || "5432"}${u.pathname}`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One probe at a time; a caller arriving while one runs gets the next, since the running one may predate its call. */
export class CoalescedProbe {
  private running?: Promise<bigint>;
  private queued?: Promise<bigint>;

  constructor(private readonly probe: () => Promise<bigint>) {}

  next(): Promise<bigint> {
    if (!this.running) return this.start();
    this.queued ??= this.running.then(
      () => undefined,
      () => undefined,
    ).then(() => {
      this.queued = undefined;
      return this.start();
    });
    return this.queued;
  }

  private start(): Promise<bigint> {
    const p = this.probe();
    this.running = p;
    const clear = () => {
      if (this.running === p) this.running = undefined;
    };
    p.then(clear, clear);
    return p;
  }
}

interface ReplayWaiter {
  readonly target: bigint;
  readonly done: (reached: boolean) => void;
}

class Replica {
  readonly name: string;
  up = false;
  /** The replay position last seen, and when: see known(). */
  private replayed = -1n;
  private replayedAt = 0;
  lagSeconds: number | undefined;
  lagBytes: number | undefined;
  /** Said once: the URL names a server that is not a standby. */
  notStandbyLogged = false;
  private readonly waiters = new Set<ReplayWaiter>();
  private polling = false;

  readonly pool: Db;

  constructor(url: string) {
    this.name = replicaName(url);
    this.pool = createPool(url, REPLICA_CONNECTIONS, REPLICA_TIMEOUTS);
    registerVectorType(this.pool);
  }

  /** Where replay stands; undefined on a server that is not a standby (pg_last_wal_replay_lsn() is null there). */
  async replayPosition(): Promise<bigint | undefined> {
    const r = await withTimeout(CHECK_TIMEOUT_MS, this.pool.query<{ lsn: string | null }>("SELECT pg_last_wal_replay_lsn()::text AS lsn"));
    const lsn = r.rows[0]?.lsn;
    if (lsn === null || lsn === undefined) return undefined;
    // as seen, not the highest seen: after a restart the standby may be back at an earlier position
    this.replayed = parseLsn(lsn);
    this.replayedAt = Date.now();
    return this.replayed;
  }

  /** The replay position seen lately enough to rely on (REPLAY_TRUSTED_MS), else none. */
  known(): bigint {
    return Date.now() - this.replayedAt <= REPLAY_TRUSTED_MS ? this.replayed : -1n;
  }

  /** Skipped until a check finds it well, its replay position forgotten. */
  down(): void {
    this.up = false;
    this.replayed = -1n;
  }

  /** Resolves true once replay reaches `target`, false after `ms` or when the replica stops answering. */
  reached(target: bigint, ms: number): Promise<boolean> {
    if (this.known() >= target) return Promise.resolve(true);
    return new Promise((resolve) => {
      const w: ReplayWaiter = {
        target,
        done: (ok) => {
          clearTimeout(timer);
          this.waiters.delete(w);
          resolve(ok);
        },
      };
      const timer = setTimeout(() => w.done(false), ms);
      this.waiters.add(w);
      void this.poll();
    });
  }

  /** One poll loop per replica, however many reads wait on it. */
  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      while (this.waiters.size) {
        const at = await this.replayPosition().catch(() => undefined);
        if (at === undefined) {
          this.down();
          for (const w of [...this.waiters]) w.done(false);
          break;
        }
        for (const w of [...this.waiters]) if (at >= w.target) w.done(true);
        if (this.waiters.size) await sleep(REPLAY_POLL_MS);
      }
    } finally {
      this.polling = false;
    }
  }

  health(): ReplicaHealth {
    return { name: this.name, up: this.up, lagSeconds: this.lagSeconds, lagBytes: this.lagBytes };
  }
}

export type ReadListener = (pool: string, route: ReadRoute) => void;

export class ReadPool implements Reads {
  private readonly replicas: Replica[];
  private readonly fence: CoalescedProbe;
  private readonly samples: PrimarySample[] = [];
  private readonly listeners = new Set<ReadListener>();
  private readonly timer?: NodeJS.Timeout;
  private turn = 0;
  private checking?: Promise<void>;

  /** `replicaUrls`: DATABASE_READ_URLS; the pool opens a connection pool per replica and ends them on close. */
  constructor(
    private readonly primary: Db,
    replicaUrls: readonly string[],
    private readonly settings: ReadPoolSettings,
    private readonly logger: Logger,
  ) {
    this.replicas = replicaUrls.map((url) => new Replica(url));
    this.fence = new CoalescedProbe(async () => {
      const r = await this.primary.query<{ lsn: string }>("SELECT pg_current_wal_insert_lsn()::text AS lsn");
      return parseLsn(r.rows[0].lsn);
    });
    if (!this.replicas.length) return;
    this.timer = setInterval(() => void this.check(), settings.checkEveryMs ?? DEFAULT_CHECK_MS);
    this.timer.unref();
    void this.check();
  }

  /** Checks every replica now, or resolves with the check under way (one at a time: a slow one is not piled on). */
  check(): Promise<void> {
    this.checking ??= this.checkAll().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async checkAll(): Promise<void> {
    const primaryAt = await this.fence.next().catch(() => undefined);
    const now = Date.now();
    if (primaryAt !== undefined) {
      this.samples.push({ at: now, lsn: primaryAt });
      if (this.samples.length > SAMPLES_KEPT) this.samples.shift();
    }
    await Promise.all(this.replicas.map(async (r) => {
      const at = await r.replayPosition().catch(() => null);
      if (at === null) return r.down();
      if (at === undefined) {
        // Another primary would answer with data of its own: never read from it.
        r.down();
        if (!r.notStandbyLogged) this.logger.warn("a DATABASE_READ_URLS server is not a standby (not in recovery); reads skip it", { replica: r.name });
        r.notStandbyLogged = true;
        return;
      }
      if (primaryAt !== undefined) {
        r.lagBytes = Number(primaryAt > at ? primaryAt - at : 0n);
        r.lagSeconds = replayLagSeconds(this.samples, at, now);
      }
      r.up = true;
    }));
  }

  onRead(listener: ReadListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  health(): ReplicaHealth[] {
    return this.replicas.map((r) => r.health());
  }

  async read<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    const candidates = this.eligible();
    if (!candidates.length) return this.onPrimary(fn, this.replicas.length ? "no_healthy_replica" : "primary_only");
    let fence: bigint;
    try {
      fence = await this.fence.next();
    } catch {
      // Without the primary's position no replica can be shown fresh; the primary answers, or fails as it would alone.
      return this.onPrimary(fn, "fence_failed");
    }
    const deadline = Date.now() + this.settings.waitMs;
    for (const r of candidates) {
      const fresh = r.known() >= fence;
      if (fresh || (await r.reached(fence, deadline - Date.now()))) return this.onReplica(r, fn, fresh ? "replica_fresh" : "replica_waited");
      if (Date.now() >= deadline) break;
    }
    return this.onPrimary(fn, "replay_wait_timeout");
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all(this.replicas.map((r) => r.pool.end().catch(() => undefined)));
  }

  /** Healthy replicas within the lag bound, a different one first on each read. */
  private eligible(): Replica[] {
    const ok = this.replicas.filter((r) => r.up && (r.lagSeconds ?? 0) * 1000 <= this.settings.maxLagMs);
    if (ok.length < 2) return ok;
    const start = this.turn++ % ok.length;
    return [...ok.slice(start), ...ok.slice(0, start)];
  }

  private async onReplica<T>(r: Replica, fn: (db: Db) => Promise<T>, route: ReadRoute): Promise<T> {
    try {
      const out = await fn(r.pool);
      this.tell(r.name, route);
      return out;
    } catch (err) {
      // A statement the primary would refuse too fails there with its own error; a replica in trouble (gone, shut
      // down, a query cancelled by a conflict with recovery) is skipped until a check finds it well.
      if (replicaInTrouble(err)) r.down();
      return this.onPrimary(fn, "replica_failed");
    }
  }

  private async onPrimary<T>(fn: (db: Db) => Promise<T>, route: ReadRoute): Promise<T> {
    const out = await fn(this.primary);
    this.tell("primary", route);
    return out;
  }

  private tell(pool: string, route: ReadRoute): void {
    for (const l of this.listeners) l(pool, route);
  }
}
