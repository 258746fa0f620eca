// How long a wallet's transaction may go unanswered before its batch moves to another wallet. A fixed bound is wrong
// both ways: long enough for a slow network it makes every stall on a fast one cost that long (20 s decided a whole
// one-memory-per-agent burst, issue 31), short enough for a fast one it gives up on healthy transactions on a slow
// one. So the bound follows what the pool saw: a few times the median of its recent transactions, never under a floor
// (a short burst of fast answers must not make ordinary jitter look like a stall) and never over the ceiling (the
// old fixed bound). Before enough has been seen — a relayer just started — the missing durations are taken as the
// prior, what a healthy transaction is expected to take on that network (its published finality), so a first
// transaction that hangs costs a few times that, not the ceiling; one early answer cannot move the median on its
// own, two can. Without a prior, the ceiling until enough has been seen.

export interface StallBoundOptions {
  /** Times the recent median a call may run. */
  readonly factor: number;
  readonly floorMs: number;
  readonly ceilingMs: number;
  /** Fewer recent durations than this: the prior stands in for the missing ones (no prior: the ceiling). */
  readonly minSamples: number;
  /** What a healthy call is expected to take (ms) before enough have ended; unset: no expectation. */
  readonly priorMs?: number;
}

export const DEFAULT_STALL_BOUND: StallBoundOptions = { factor: 4, floorMs: 3_000, ceilingMs: 20_000, minSamples: 3 };

/** The stall bound (ms) for the durations (ms) of recent transactions that ended. */
export function stallBound(recentMs: readonly number[], o: StallBoundOptions = DEFAULT_STALL_BOUND): number {
  const missing = o.minSamples - recentMs.length;
  if (missing > 0 && o.priorMs === undefined) return o.ceilingMs;
  const seen = missing > 0 ? [...recentMs, ...Array<number>(missing).fill(o.priorMs!)] : recentMs;
  return Math.min(o.ceilingMs, Math.max(o.floorMs, o.factor * median(seen)));
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
