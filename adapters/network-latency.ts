// The waits of a network profile (config/network-profile.ts): a latency drawn from a range, slept on a timer. The
// random source and the sleep are injected so tests can drive them with a fake clock.
import type { LatencyRange } from "../config/network-profile.ts";

export interface LatencyClock {
  /** A number in [0, 1). */
  readonly random: () => number;
  readonly sleep: (ms: number) => Promise<void>;
}

const timerClock: LatencyClock = {
  random: Math.random,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** A latency drawn uniformly from `range`, whole milliseconds. */
export function sampleLatency(range: LatencyRange, random: () => number = Math.random): number {
  return Math.round(range.minMs + (range.maxMs - range.minMs) * random());
}

/** Waits a latency drawn from `range`; a zero range (the `local` profile) resolves without touching a timer. */
export function networkDelay(range: LatencyRange, clock: LatencyClock = timerClock): Promise<void> {
  if (range.maxMs <= 0) return Promise.resolve();
  return clock.sleep(sampleLatency(range, clock.random));
}

/**
 * A fixed number of wallets that each carry one transaction at a time (their coins are owned objects): `hold` waits
 * for a free one, keeps it for the transaction's latency, then hands it to the longest waiter. 0 wallets: no limit,
 * only the latency. Used by the blob store's Walrus publisher for its sub-wallets (config/network-profile.ts).
 */
export class TransactionWallets {
  private busy = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly count: number, private readonly clock: LatencyClock = timerClock) {}

  /** Transactions waiting for a free wallet now. */
  get queued(): number {
    return this.waiting.length;
  }

  async hold(range: LatencyRange): Promise<void> {
    if (this.count <= 0) return networkDelay(range, this.clock);
    if (this.busy < this.count) this.busy++;
    else await new Promise<void>((take) => this.waiting.push(take)); // the releaser passes its wallet on
    try {
      await networkDelay(range, this.clock);
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.busy--;
    }
  }
}
