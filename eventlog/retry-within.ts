// Retrying a JetStream request while the cluster moves a stream's leadership: when a node is killed or paused, the
// streams it led answer nothing (timeouts, no responders) until the others elect a new leader, which takes seconds.
// A gateway that gave up at the first failure answered 503 for all of that time, longer than a client's own retries
// (issue 32's chaos runs); one that keeps trying for a few seconds answers late but right.

/** How long a request is worth trying again: JetStream elects a new stream leader within a few seconds. */
export const LEADER_ELECTION_BUDGET_MS = 6_000;

/** Pauses between attempts: 100 ms doubling, at most 1 s. */
const FIRST_PAUSE_MS = 100;
const MAX_PAUSE_MS = 1_000;

/**
 * Runs `attempt` until it succeeds, it fails with an error `retryable` refuses, or `budgetMs` has passed (then the
 * last error is thrown). `attempt` is told whether an earlier attempt failed (a write that timed out may have been
 * applied all the same).
 */
export async function retryWithin<T>(budgetMs: number, attempt: (retried: boolean) => Promise<T>, retryable: (err: unknown) => boolean = () => true): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let pause = FIRST_PAUSE_MS, retried = false; ; pause = Math.min(2 * pause, MAX_PAUSE_MS), retried = true) {
    try {
      return await attempt(retried);
    } catch (err) {
      if (!retryable(err) || Date.now() + pause >= deadline) throw err;
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}
