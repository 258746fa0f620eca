// "Wait until a read model reaches a sequence", for a process that may or may not run the projection itself: a
// runner in this process resolves the moment it applies the batch; otherwise the stored checkpoint is polled, since
// whichever process runs the projection moves it in the transaction of its writes.
import type { Db } from "../db/pool.ts";
import { readCheckpoint } from "./runtime.ts";

/** A runner of the projection in this process (ProjectionRunner, a ProjectionGroupRunner's handle). */
export interface LocalProjection {
  waitFor(seq: number, timeoutMs: number): Promise<boolean>;
}

// Polls start fast (a write's own read model is usually a batch away) and back off so that a long wait does not
// query Postgres hundreds of times a second.
const FIRST_POLL_MS = 5;
const MAX_POLL_MS = 20;

/** Resolves true once projection `name` has applied `seq`, false after `timeoutMs`. */
export async function waitForProjection(db: Db, name: string, seq: number, timeoutMs: number, local?: LocalProjection): Promise<boolean> {
  if (local) return local.waitFor(seq, timeoutMs);
  const deadline = Date.now() + timeoutMs;
  let delay = FIRST_POLL_MS;
  for (;;) {
    if ((await readCheckpoint(db, name)) >= seq) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, Math.min(delay, Math.max(1, deadline - Date.now()))));
    delay = Math.min(MAX_POLL_MS, delay * 2);
  }
}
