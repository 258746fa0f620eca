// Where projections' checkpoints stand, as their runners announce them after every batch they commit (core NATS,
// eventlog/subjects.ts projectionAppliedSubject): a reader waits for read models to reach a sequence without polling
// Postgres. Announcements are at most once and say nothing of what happened before this process subscribed, so a
// wait reads the stored checkpoints when it starts on an unknown projection, and again when one it waits on, still
// behind, went RECHECK_MS without announcing.
import type { EventLog } from "../eventlog/connection.ts";
import { projectionAppliedSubject } from "../eventlog/subjects.ts";
import type { Db } from "../db/pool.ts";

const RECHECK_MS = 250;

/** A wait in progress: woken when its projections reach its sequence, not by every announcement. */
interface Waiter {
  readonly names: readonly string[];
  readonly seq: number;
  readonly reached: () => void;
}

export class CheckpointFeed {
  private readonly seqs = new Map<string, number>();
  private readonly waiters = new Set<Waiter>();
  private readonly followed = new Set<string>();
  /** When each followed projection last announced its checkpoint. */
  private readonly heardAt = new Map<string, number>();

  constructor(private readonly log: EventLog, private readonly db: Db) {}

  /** Resolves true once every named projection has applied `seq`, false when `timeoutMs` passes first. */
  async waitFor(names: readonly string[], seq: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (const n of names) this.follow(n);
    if (names.some((n) => !this.seqs.has(n))) await this.reread(names);
    while (!this.reached(names, seq)) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      const since = Date.now();
      await this.window(names, seq, Math.min(left, RECHECK_MS));
      // One still behind that announced nothing in the window may have had its announcement lost (each announcement
      // carries the checkpoint, so one heard from is known).
      if (names.some((n) => (this.seqs.get(n) ?? 0) < seq && (this.heardAt.get(n) ?? 0) < since)) await this.reread(names);
    }
    return true;
  }

  /** Resolves when `names` reach `seq`, or after `ms`. */
  private window(names: readonly string[], seq: number, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const w: Waiter = {
        names,
        seq,
        reached: () => {
          clearTimeout(timer);
          this.waiters.delete(w);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(w);
        resolve();
      }, ms);
      this.waiters.add(w);
    });
  }

  /** Subscribes to a projection's announcements once: only those someone waited on, not every projection's. */
  private follow(name: string): void {
    if (this.followed.has(name)) return;
    this.followed.add(name);
    this.log.nc.subscribe(projectionAppliedSubject(name), {
      callback: (err, m) => {
        const seq = err ? NaN : Number(m.string());
        if (!Number.isFinite(seq)) return;
        this.heardAt.set(name, Date.now());
        this.advance(name, seq);
      },
    });
  }

  private reached(names: readonly string[], seq: number): boolean {
    return names.every((n) => (this.seqs.get(n) ?? 0) >= seq);
  }

  private advance(name: string, seq: number): void {
    if (!Number.isFinite(seq)) return;
    // A reset (replay) rewinds a checkpoint: follow it down as well as up.
    if (this.seqs.get(name) === seq) return;
    this.seqs.set(name, seq);
    for (const w of this.waiters) if (w.names.includes(name) && this.reached(w.names, w.seq)) w.reached();
  }

  private async reread(names: readonly string[]): Promise<void> {
    const r = await this.db.query<{ name: string; seq: string }>("SELECT name, seq FROM projection_checkpoints WHERE name = ANY($1::text[])", [names]).catch(() => undefined);
    for (const row of r?.rows ?? []) this.advance(row.name, Number(row.seq));
  }
}
