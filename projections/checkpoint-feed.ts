// Where projections' checkpoints stand, as their runners announce them after every batch they commit (core NATS,
// eventlog/subjects.ts PROJECTION_APPLIED): a reader waits for read models to reach a sequence without polling
// Postgres. Announcements are at most once and say nothing of what happened before this process subscribed, so a
// wait reads the stored checkpoints when it starts on an unknown projection and again every RECHECK_MS.
import type { EventLog } from "../eventlog/connection.ts";
import { PROJECTION_APPLIED } from "../eventlog/subjects.ts";
import type { Db } from "../db/pool.ts";

const RECHECK_MS = 250;

export class CheckpointFeed {
  private readonly seqs = new Map<string, number>();
  private readonly waiters = new Set<() => void>();

  constructor(log: EventLog, private readonly db: Db) {
    const prefix = `${PROJECTION_APPLIED}.`;
    log.nc.subscribe(`${PROJECTION_APPLIED}.>`, {
      callback: (err, m) => {
        if (!err) this.advance(m.subject.slice(prefix.length), Number(m.string()));
      },
    });
  }

  /** Resolves true once every named projection has applied `seq`, false when `timeoutMs` passes first. */
  async waitFor(names: readonly string[], seq: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    if (names.some((n) => !this.seqs.has(n))) await this.reread(names);
    while (!this.reached(names, seq)) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      const announced = await new Promise<boolean>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve(true);
        };
        const timer = setTimeout(() => {
          this.waiters.delete(wake);
          resolve(false);
        }, Math.min(left, RECHECK_MS));
        this.waiters.add(wake);
      });
      if (!announced) await this.reread(names);
    }
    return true;
  }

  private reached(names: readonly string[], seq: number): boolean {
    return names.every((n) => (this.seqs.get(n) ?? 0) >= seq);
  }

  private advance(name: string, seq: number): void {
    if (!Number.isFinite(seq)) return;
    // A reset (replay) rewinds a checkpoint: follow it down as well as up.
    if (this.seqs.get(name) === seq) return;
    this.seqs.set(name, seq);
    for (const wake of [...this.waiters]) wake();
  }

  private async reread(names: readonly string[]): Promise<void> {
    const r = await this.db.query<{ name: string; seq: string }>("SELECT name, seq FROM projection_checkpoints WHERE name = ANY($1::text[])", [names]).catch(() => undefined);
    for (const row of r?.rows ?? []) this.advance(row.name, Number(row.seq));
  }
}
