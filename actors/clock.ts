// The clock is an input, never read inside a decision or an effect. Time enters where a command is issued: an actor's
// command carries it as `issued_at` (its decide and its effects use that, so a redelivered command appends the very
// same events), and a synchronous command (the blob store's, the console directory's) stamps the `at` its pure
// decider gets from the service's Clock. runtime/ passes the system clock; tests pass a fixed one.

export interface Clock {
  /** The current time as an ISO 8601 string (what events and commands carry). */
  now(): string;
}

export const systemClock: Clock = { now: () => new Date().toISOString() };
