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
