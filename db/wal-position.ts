// WAL positions (PostgreSQL's pg_lsn, text "X/Y": two 32-bit hex halves) and how far a standby's replay trails the
// primary, in bytes and in seconds. Pure: the read pool (db/read-pool.ts) feeds it what it sampled.

/** A pg_lsn's text as one number, comparable and subtractable. */
export function parseLsn(text: string): bigint {
  const m = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  if (!m) throw new Error(`not a WAL position: ${JSON.stringify(text)}`);
  return (BigInt("0x" + m[1]) << 32n) | BigInt("0x" + m[2]);
}

/** The primary's WAL insert position at a moment. */
export interface PrimarySample {
  readonly at: number;
  readonly lsn: bigint;
}

/**
 * Seconds a standby that has replayed up to `replayed` trails the primary, from the primary's positions sampled
 * oldest first: zero when it has replayed the newest sample, else the age of the oldest sample it has not replayed
 * (it misses WAL written since then). Positions alone cannot say it in seconds: an idle primary writes nothing for
 * minutes, and a standby that has replayed all of it lags by nothing however old its last replayed commit is.
 */
export function replayLagSeconds(samples: readonly PrimarySample[], replayed: bigint, now: number): number {
  const missing = samples.find((s) => s.lsn > replayed);
  return missing ? Math.max(0, now - missing.at) / 1000 : 0;
}
