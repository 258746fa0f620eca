// Small statistics helpers for the benchmarks: percentiles (nearest rank), summaries and formatting.

export interface LatencySummary {
  readonly n: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p95: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (!sorted.length) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export function summarize(values: ArrayLike<number>): LatencySummary {
  const a = Float64Array.from(values as ArrayLike<number>).sort();
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i];
  return {
    n: a.length,
    mean: a.length ? sum / a.length : NaN,
    p50: percentile(a, 50),
    p90: percentile(a, 90),
    p95: percentile(a, 95),
    p99: percentile(a, 99),
    p999: percentile(a, 99.9),
    max: a.length ? a[a.length - 1] : NaN,
  };
}

export const ms = (v: number, digits = 1) => (Number.isFinite(v) ? `${v.toFixed(digits)} ms` : "n/a");
export const rate = (v: number, unit = "/s") => (Number.isFinite(v) ? `${Math.round(v).toLocaleString("en-US")}${unit}` : "n/a");
export const int = (v: number) => Math.round(v).toLocaleString("en-US");
export const pct = (v: number, digits = 1) => `${(v * 100).toFixed(digits)} %`;
export const mib = (kb: number) => `${(kb / 1024).toFixed(0)} MiB`;

/** "p50 a / p95 b / p99 c (max d)" */
export function latencyLine(s: LatencySummary, digits = 1): string {
  return `p50 ${ms(s.p50, digits)} · p95 ${ms(s.p95, digits)} · p99 ${ms(s.p99, digits)} · max ${ms(s.max, digits)}`;
}

export const sleep = (msec: number) => new Promise<void>((r) => setTimeout(r, msec));

/** Polls `cond` every `everyMs` until it returns true or `timeoutMs` passes (then throws). */
export async function until(cond: () => Promise<boolean> | boolean, timeoutMs: number, what: string, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Runs `fn(i)` for i in [0, n) with at most `concurrency` in flight. */
export async function pooled(n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      await fn(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
}
