// "Wait for this, but not longer than that": the bounded waits of a stop (the actor host's commands in flight, the
// blob port's requests, the roles of `memrelay start`), written once.

/** True when `work` settles within `ms`, false when it is still running then (it goes on); a rejection propagates. */
export async function settlesWithin(ms: number, work: Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([work.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
