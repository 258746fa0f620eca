// Retrying sponsored transactions: the backoff schedule (SPONSOR_TRANSIENT_* and SPONSOR_INVALIDATED_*), and the loop
// that sponsors again while a provider reports the previous sponsorship invalidated (expired before execution).
import { SponsorshipInvalidated } from "../ports.ts";
import type { RetryPolicy } from "../../schemas/relayer/sponsor.ts";

/** The pause after failed attempt `attempt` (1-based): exponential from the base, capped at the max delay. */
export const backoffDelay = (p: RetryPolicy, attempt: number): number => Math.min(p.maxDelayMs, p.baseDelayMs * 2 ** (attempt - 1));

export const sleepMs = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Runs `attempt` (a whole sponsor → sign → execute round) up to `policy.maxAttempts` times while it fails with
 * SponsorshipInvalidated, pausing per backoffDelay; any other failure ends it at once. When every attempt was
 * invalidated, throws SponsorshipInvalidated saying so.
 */
export async function retryWhileInvalidated<T>(policy: RetryPolicy, attempt: (n: number) => Promise<T>, sleep: (ms: number) => Promise<void> = sleepMs): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (!(err instanceof SponsorshipInvalidated)) throw err;
      if (n >= policy.maxAttempts) throw new SponsorshipInvalidated(`sponsored transaction invalidated ${n} times in a row (SPONSOR_INVALIDATED_MAX_ATTEMPTS=${policy.maxAttempts}): ${err.message.replace(/^sponsor: /, "")}`);
      await sleep(backoffDelay(policy, n));
    }
  }
}
