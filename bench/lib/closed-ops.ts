// `n` operations over `workers` closed-loop workers, each starting its next operation when the last one ends (the
// worker's index is passed too, for workers that hold their own connection or session).
export interface ClosedOpsResult {
  readonly latencies: number[];
  readonly seconds: number;
  readonly errors: number;
  readonly firstError?: string;
}

export async function closedOps(n: number, workers: number, op: (i: number, worker: number) => Promise<unknown>): Promise<ClosedOpsResult> {
  const latencies: number[] = [];
  let next = 0, errors = 0;
  let firstError: string | undefined;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: workers }, async (_, worker) => {
    for (let i = next++; i < n; i = next++) {
      const t = performance.now();
      try {
        await op(i, worker);
      } catch (err) {
        errors++;
        firstError ??= err instanceof Error ? err.message : String(err);
      }
      latencies.push(performance.now() - t);
    }
  }));
  return { latencies, seconds: (performance.now() - t0) / 1000, errors, firstError };
}
