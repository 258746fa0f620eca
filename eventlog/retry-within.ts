// Retrying a JetStream request while the cluster moves a stream's leadership: when a node is killed or paused, the
// streams it led answer nothing (timeouts, no responders) until the others elect a new leader, which takes seconds.
// A gateway that gave up at the first failure answered 503 for all of that time, longer than a client's own retries
// (issue 32's chaos runs); one that keeps trying for a few seconds answers late but right.

/** How long a request is worth trying again: JetStream elects a new stream leader within a few seconds. */
export const LEADER_ELECTION_BUDGET_MS = 6_000;

/** How `retryWithin` paces its attempts. */
export interface RetryPacing {
  /** The pause after the first failed attempt. */
  readonly firstPauseMs: number;
  /** Each next pause is the previous times this. */
  readonly factor: number;
  readonly maxPauseMs: number;
  /** Attempts at most, the first included. */
  readonly attempts: number;
}

/** Leader elections: 100 ms doubling, at most 1 s, for as long as the budget lasts. */
const ELECTION_PACING: RetryPacing = { firstPauseMs: 100, factor: 2, maxPauseMs: 1_000, attempts: Infinity };

/**
 * Runs `attempt` until it succeeds, it fails with an error `retryable` refuses, its attempts are used up, or the next
 * would start past `budgetMs` (then the last error is thrown). `attempt` is told whether an earlier attempt failed (a
 * write that timed out may have been applied all the same).
 */
export async function retryWithin<T>(budgetMs: number, attempt: (retried: boolean) => Promise<T>, retryable: (err: unknown) => boolean = () => true, pacing: RetryPacing = ELECTION_PACING): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let n = 1, pause = pacing.firstPauseMs; ; n++, pause = Math.min(pacing.factor * pause, pacing.maxPauseMs)) {
    try {
      return await attempt(n > 1);
    } catch (err) {
      if (!retryable(err) || n >= pacing.attempts || Date.now() + pause >= deadline) throw err;
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}
