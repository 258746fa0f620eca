// The ciphertexts of a recall's hits, read so that "done means recallable" holds: a blob that cannot be read now
// must not vanish from the answer. A read that fails as an outage (the aggregators answered 5xx or 429, timed out,
// refused or reset the connection: walrus-http.ts's "unavailable", after its race over every aggregator) is tried
// again a few times within the request, and when it still fails the whole read fails with that outage, which the
// routes answer 503 with Retry-After (gateway/relayer/routes.ts toReply), naming the blob store and nothing else.
// A blob that is gone or cannot be had (404 from every aggregator, another refusal, a quilt it cannot be cut from)
// is null: the recall leaves it out and counts it in `dropped_count`, as it always did.
// The port itself does not retry (its race is one round over the aggregators), so this is the only retry of a read.
// A restore reads the blobs it re-indexes through this too (restore-namespace.ts, with its own ReadRetry): an outage
// is not a blob that failed.
import type { BlobPort } from "../../adapters/ports.ts";
import { isUnavailable } from "../../adapters/unavailable.ts";
import { retryWithin, type RetryPacing } from "../../eventlog/retry-within.ts";

/** Reads of one blob at most (`attempts`, the first included) and the pause after the first failed read. */
export interface ReadRetry extends Pick<RetryPacing, "attempts" | "firstPauseMs"> {
  /**
   * No read starts past this long after the first began: a read that failed by timing out (30 s) is not sent again,
   * and the request stays well within a client's patience (the MemWal SDK gives a recall 15 s).
   */
  readonly budgetMs: number;
}

/** About a second of retries (reads at 0, 0.2 and 0.8 s): past that the client's own retry is the better wait. */
export const RECALL_READ_RETRY: ReadRetry = { attempts: 3, firstPauseMs: 200, budgetMs: 2_000 };

/** The blobs' bytes in order, null for a blob that is gone or cannot be had; rejects with the outage if one stays unreadable. */
export function readCiphertexts(blobs: BlobPort, blobIds: readonly string[], retry: ReadRetry = RECALL_READ_RETRY): Promise<(Uint8Array | null)[]> {
  // Each next pause three times the previous.
  const pacing: RetryPacing = { firstPauseMs: retry.firstPauseMs, factor: 3, maxPauseMs: Infinity, attempts: retry.attempts };
  return Promise.all(blobIds.map((id) => readOne(blobs, id, retry.budgetMs, pacing)));
}

/** A blob read again while it fails as an outage; null once it fails otherwise (gone, or not to be had). */
function readOne(blobs: BlobPort, blobId: string, budgetMs: number, pacing: RetryPacing): Promise<Uint8Array | null> {
  return retryWithin(budgetMs, () => blobs.read(blobId), isUnavailable, pacing).catch((err: unknown) => {
    if (isUnavailable(err)) throw err;
    return null;
  });
}
