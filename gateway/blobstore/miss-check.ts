// A blob read that misses in a read model is "not found" only if that read model holds everything the event log held
// when the read came in. A projection can stall behind the log (its consumer lost with a NATS node, Postgres slow), and
// a 404 then tells the relayer that a `done` memory's blob is gone, and recall drops the memory. So a miss is checked
// against the log, as the sweeper checks before it deletes bytes (actors/blobstore/gc.ts): the read models it read wait
// (briefly) for the log's last event on their subjects, and the lookup runs again. Still behind after the wait: 503
// with Retry-After, an outage the caller retries. A hit costs nothing.
import { HttpError } from "../http.ts";
import { ArrivalBatcher } from "../../adapters/arrival-batcher.ts";
import type { Kind } from "../../schemas/blobstore/events.ts";

/** Where the blob store's read models stand against the event log (composed in runtime/blobstore.ts). */
export interface ReadModelPositions {
  /** Stream sequence of the last event on `subjects` (one subject, or a filter with wildcards), 0 when none. */
  lastSeq(subjects: string): Promise<number>;
  /** The stored checkpoint of the read model of `kind`: what its committed rows reflect. */
  applied(kind: Kind): Promise<number>;
  /** Resolves true once the read model of `kind` has applied `seq`, false after `timeoutMs`. */
  waitApplied(kind: Kind, seq: number, timeoutMs: number): Promise<boolean>;
}

/**
 * A read model a lookup reads, and the events a hit there would come from: its whole subject filter, or one
 * aggregate's subject when the lookup names it (a blob object by id, a bucket by name), which the log finds at once.
 */
export interface ReadFrom {
  readonly kind: Kind;
  readonly subjects: string;
}

/**
 * How long a miss waits for its read models: well past the lag of a busy but healthy projection (a batch, tens of
 * milliseconds), well within the relayer's read retries (about 2 s in all) and a client's patience.
 */
export const MISS_WAIT_MS = 1_000;

/**
 * Runs `lookup` again once each read model it reads has applied the log's last event on its subjects; its null is then
 * "not found". A hit needs a row in every one of them, so one whose subjects hold no event at all is a miss at once.
 */
export type ConfirmMiss = <T>(from: readonly ReadFrom[], lookup: () => Promise<T | null>) => Promise<T | null>;

export interface MissCheckDeps {
  readonly positions: ReadModelPositions;
  /** Throws 503 while the event log is unreachable: its position cannot be read then. */
  readonly needLog: () => void;
  /** Counts a miss answered 503 because its read models were behind. */
  readonly onBehind: () => void;
}

export function confirmMisses({ positions, needLog, onBehind }: MissCheckDeps, waitMs = MISS_WAIT_MS): ConfirmMiss {
  // The last event on a subject filter is found by a scan on the server (nats-server 2.9, measured on a stream of
  // 200,000 subjects: 0.4 ms when the filter's last event is recent, 40-90 ms when it is at the start; one aggregate's
  // subject 0.3 ms). Misses come in bursts (a recall reads many blobs, anyone may ask for ids that do not exist), so
  // they share lookups: one batch in flight, and every miss that arrives meanwhile takes the next one, which starts
  // after it arrived (an earlier one could predate an event appended before it).
  const lookups = new ArrivalBatcher<string, number>(
    async (subjects) => {
      const seqs = new Map(await Promise.all([...new Set(subjects)].map(async (s) => [s, await positions.lastSeq(s)] as const)));
      return subjects.map((s) => seqs.get(s)!);
    },
    1,
  );
  // Judged by the stored checkpoint, the one the lookup's rows were committed with: a runner in this process can think
  // itself ahead of it for a moment after another process rewound it (a replay), until it notices (runtime.ts).
  const reaches = async (kind: Kind, target: number) =>
    (await positions.applied(kind)) >= target || ((await positions.waitApplied(kind, target, waitMs)) && (await positions.applied(kind)) >= target);
  return async (from, lookup) => {
    needLog();
    // The log's position is read after the miss: an event appended before the read came in is at or below it.
    const targets = await Promise.all(from.map((r) => lookups.submit(r.subjects)));
    if (targets.includes(0)) return null;
    const reached = await Promise.all(from.map((r, i) => reaches(r.kind, targets[i])));
    if (!reached.every(Boolean)) {
      onBehind();
      throw new HttpError(503, "the blob store's read model has not caught up with its event log; retry shortly", {}, { "retry-after": "1" });
    }
    return lookup();
  };
}
