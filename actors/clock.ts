// The clock is an input: no decide and no effect reads the system clock. A time that belongs to the command (when it
// was issued or accepted: an upload's start, a sponsorship's expiry check, a memory's creation) comes with it as
// `issued_at`; a time an effect observes (a bucket activated, an upload's checks seen, a key revoked) and the `at` a
// synchronous command (the blob store's, the console directory's) gives its pure decider come from a Clock port — the
// console's and the blob store's is their log's (`ConsoleLog.clock`, `BlobstoreLog.clock`). runtime/ passes the
// system clock; tests pass a fixed one.

export interface Clock {
  /** The current time as an ISO 8601 string (what events and commands carry). */
  now(): string;
}

export const systemClock: Clock = { now: () => new Date().toISOString() };
