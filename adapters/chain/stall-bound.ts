// How long a wallet's transaction may go unanswered before its batch moves to another wallet. A fixed bound is wrong
// both ways: long enough for a slow network it makes every stall on a fast one cost that long (20 s decided a whole
// one-memory-per-agent burst, issue 31), short enough for a fast one it gives up on healthy transactions on a slow
// one. So the bound follows what the pool saw: a few times the median of its recent transactions, never under a floor
// (a short burst of fast answers must not make ordinary jitter look like a stall) and never over the ceiling (the
// old fixed bound; also what applies before enough has been seen).

export interface StallBoundOptions {
  /** Times the recent median a call may run. */
  readonly factor: number;
  readonly floorMs: number;
  readonly ceilingMs: number;
  /** Fewer recent durations than this: the ceiling (a median of one or two says little). */
  readonly minSamples: number;
}

export const DEFAULT_STALL_BOUND: StallBoundOptions = { factor: 4, floorMs: 3_000, ceilingMs: 20_000, minSamples: 3 };

/** The stall bound (ms) for the durations (ms) of recent transactions that ended. */
export function stallBound(recentMs: readonly number[], o: StallBoundOptions = DEFAULT_STALL_BOUND): number {
  if (recentMs.length < o.minSamples) return o.ceilingMs;
  return Math.min(o.ceilingMs, Math.max(o.floorMs, o.factor * median(recentMs)));
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
