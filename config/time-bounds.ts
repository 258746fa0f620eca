// "Wait for this, but not longer than that", written once for every layer: the event log's history reads, the read
// replicas' checks, the blob store's readiness probe, and the bounded waits of a stop. It lives in config/, beside the
// logger, because config/ depends on schemas/ alone, so the event log, the database layer, the adapters and the
// gateway may all import it without one of them reaching above its layer.
//
// Two answers to "too late", because the callers want two things: a read or a check that takes too long has failed
// (withTimeout rejects), whereas a stop that takes too long is an outcome to act on, not an error (settlesWithin is
// false). Either way the late work goes on (a promise cannot be cancelled) and the timer is cleared once the race is
// decided, so neither holds the process open nor leaves a timer behind.

/** The race's result when the time ran out first: module-private, so no settled value can be mistaken for it. */
const LATE: unique symbol = Symbol("late");

async function raceTimer<T>(ms: number, work: Promise<T>): Promise<T | typeof LATE> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof LATE>((resolve) => (timer = setTimeout(() => resolve(LATE), ms)));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** `work`'s value or rejection; rejects with "<what> within <ms> ms" when it has not settled within `ms`. */
export async function withTimeout<T>(ms: number, work: Promise<T>, what = "no answer"): Promise<T> {
  const r = await raceTimer(ms, work);
  if (r === LATE) throw new Error(`${what} within ${ms} ms`);
  return r;
}

/** True when `work` settles within `ms`, false when it is still running then (it goes on); a rejection propagates. */
export async function settlesWithin(ms: number, work: Promise<unknown>): Promise<boolean> {
  return (await raceTimer(ms, work)) !== LATE;
}
