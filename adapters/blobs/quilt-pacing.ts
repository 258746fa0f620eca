// When the quilt writer (quilt-writer.ts) closes the quilt it is gathering, when neither its count nor its bytes
// bound closed it first. A Walrus publisher stores a few quilts at once (its sub-wallets pay one transaction each at a
// time), and a quilt's store takes seconds on a real network: a quilt sent on a fixed short timer is small, and many
// of them queue at the publisher. Instead the writer keeps up to `maxInFlight` quilts in flight, spaced a
// `maxInFlight`-th of one quilt's store time apart, and closes the next one when one returns: a quilt then holds what
// arrived during that spacing (it grows with the store time), and a memory waits at most one spacing plus its own
// store. The short wait (`maxWaitMs`) is kept for a quilt sent while nothing is in flight, and as the least spacing.
// Pure: the writer brings the clock's readings.

import type { QuiltLimits } from "../../config/env.ts";

/** QUILT_MAX_IN_FLIGHT and QUILT_MAX_WAIT_MS. */
export type QuiltPacing = Pick<QuiltLimits, "maxInFlight" | "maxWaitMs">;

export interface GatheringNow {
  /** Quilts closed and not yet answered by the publisher (those waiting for their members included). */
  readonly inFlight: number;
  /** Since this quilt's first reservation. */
  readonly sinceFirstMs: number;
  /** Since the writer last closed a quilt; undefined before its first. */
  readonly sinceLastCloseMs: number | undefined;
  /** One quilt's recent store time (seal to the publisher's answer); undefined before the first answer. */
  readonly storeMs: number | undefined;
}

/** Close the quilt now; look again in `ms`; or wait for a quilt in flight to return (the writer looks again then). */
export type QuiltMove = { readonly kind: "close" } | { readonly kind: "wait"; readonly ms: number } | { readonly kind: "hold" };

const close: QuiltMove = { kind: "close" };
const hold: QuiltMove = { kind: "hold" };
const waitFor = (ms: number): QuiltMove => (ms <= 0 ? close : { kind: "wait", ms });

export function nextQuiltMove(now: GatheringNow, pacing: QuiltPacing): QuiltMove {
  if (now.inFlight >= pacing.maxInFlight) return hold;
  if (now.inFlight === 0) return waitFor(pacing.maxWaitMs - now.sinceFirstMs);
  // Some in flight and a place free: the next quilt goes a share of one store after the last, so that the quilts in
  // flight return spread out rather than together (quilts sent together return together and leave the next ones tiny).
  const spacing = Math.max(pacing.maxWaitMs, (now.storeMs ?? 0) / pacing.maxInFlight);
  return waitFor(spacing - (now.sinceLastCloseMs ?? Infinity));
}

/** A store time's running estimate: recent stores count most (the publisher's queue and the network change). */
export const nextStoreEstimate = (previous: number | undefined, measured: number): number => (previous === undefined ? measured : 0.7 * previous + 0.3 * measured);
