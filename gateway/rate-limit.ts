// Rate limits shared by every gateway replica (state in Postgres), and the client address they key on.
//
// Algorithm: a sliding window over 60 slots. A limit "N per W" keeps, per key, request counts in slots of W/60 (one
// second for a minute, one minute for an hour); a request is admitted when the slots of the last W hold fewer than N
// requests. The window slides one slot at a time, so it never admits more than N in any W (it may refuse up to one
// slot early), and its state stays 60 numbers whatever N is — a deployment-wide cap of thousands per minute costs the
// same as 10 per minute.
//
// Atomicity: one transaction locks the rows of every key a request touches (upsert in key order, so concurrent
// requests never deadlock), decides against all its limits together and records the request in all of them or in
// none. There is no check-then-record race across replicas, and a refused request consumes nothing. When Postgres is
// unavailable the request fails closed with 503 (gateway/relayer/routes.ts toReply).
import { isIP } from "node:net";
import type { Db } from "../db/pool.ts";
import { inTransaction } from "../db/pool.ts";
import { HttpError, type Request } from "./http.ts";

export interface WindowLimit {
  /** Name of the limit in 429 bodies (`layer`), e.g. `exists_ip_minute`. */
  readonly layer: string;
  /** What is counted, e.g. `exists:ip:203.0.113.9`; several limits may share a key (with different windows). */
  readonly key: string;
  readonly limit: number;
  readonly windowMs: number;
}

export type RateDecision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly layer: string; readonly limit: number; readonly windowMs: number; readonly retryAfterSeconds: number };

const SLOTS = 60;
const slotMsOf = (windowMs: number) => Math.max(1, Math.floor(windowMs / SLOTS));

/** Counts per slot of one (key, window). Pure, so the arithmetic is testable without a database. */
export interface WindowState {
  slots: number[];
  counts: number[];
}

/** Drops slots that left the window ending at `now`. */
export function prune(state: WindowState, windowMs: number, now: number): WindowState {
  const slotMs = slotMsOf(windowMs);
  const oldest = Math.floor(now / slotMs) - (SLOTS - 1);
  const slots: number[] = [], counts: number[] = [];
  state.slots.forEach((s, i) => {
    if (s >= oldest && state.counts[i] > 0) {
      slots.push(s);
      counts.push(state.counts[i]);
    }
  });
  return { slots, counts };
}

/** Seconds until `limit` requests per window admit one more, or 0 when one is admitted now. */
export function retryAfterMs(state: WindowState, limit: number, windowMs: number, now: number): number {
  const slotMs = slotMsOf(windowMs);
  let total = state.counts.reduce((a, b) => a + b, 0);
  if (total < limit) return 0;
  const order = state.slots.map((s, i) => [s, state.counts[i]] as const).sort((a, b) => a[0] - b[0]);
  for (const [slot, count] of order) {
    total -= count;
    // This slot leaves the window when the window's oldest slot becomes slot + 1.
    if (total < limit) return Math.max(1, (slot + SLOTS) * slotMs - now);
  }
  return windowMs;
}

export function record(state: WindowState, windowMs: number, now: number): WindowState {
  const slot = Math.floor(now / slotMsOf(windowMs));
  const i = state.slots.indexOf(slot);
  if (i >= 0) state.counts[i]++;
  else {
    state.slots.push(slot);
    state.counts.push(1);
  }
  return state;
}

export class PgRateLimiter {
  private migrated?: Promise<void>;
  private takes = 0;

  constructor(
    private readonly db: Db,
    private readonly now: () => number = () => Date.now(),
  ) {}

  migrate(): Promise<void> {
    this.migrated ??= this.db
      .query(`CREATE TABLE IF NOT EXISTS rate_limit_windows (
        key text PRIMARY KEY, slots bigint[] NOT NULL, counts integer[] NOT NULL, expires_at timestamptz NOT NULL)`)
      .then(
        () => undefined,
        (err) => {
          this.migrated = undefined;
          throw err;
        },
      );
    return this.migrated;
  }

  /** Admits the request under every limit (and records it in all of them), or refuses it with the longest wait. */
  async take(limits: readonly WindowLimit[], now = this.now()): Promise<RateDecision> {
    const active = limits.filter((l) => l.limit > 0);
    if (!active.length) return { allowed: true };
    await this.migrate();
    // One row per (key, window): counts of one window's slot size.
    const rowKey = (l: WindowLimit) => `${l.key}|${l.windowMs}`;
    const keys = [...new Set(active.map(rowKey))].sort();
    const decision = await inTransaction(this.db, async (tx) => {
      const r = await tx.query<{ key: string; slots: string[]; counts: number[] }>(
        `INSERT INTO rate_limit_windows AS w (key, slots, counts, expires_at)
         SELECT k, '{}', '{}', now() FROM unnest($1::text[]) AS k ORDER BY k
         ON CONFLICT (key) DO UPDATE SET key = EXCLUDED.key
         RETURNING w.key, w.slots, w.counts`,
        [keys],
      );
      const states = new Map<string, WindowState>();
      for (const row of r.rows) states.set(row.key, { slots: row.slots.map(Number), counts: row.counts.map(Number) });
      let refused: RateDecision | undefined;
      for (const l of active) {
        const k = rowKey(l);
        const s = prune(states.get(k) ?? { slots: [], counts: [] }, l.windowMs, now);
        states.set(k, s);
        const wait = retryAfterMs(s, l.limit, l.windowMs, now);
        if (wait > 0) {
          const seconds = Math.max(1, Math.ceil(wait / 1000));
          if (!refused || (!refused.allowed && seconds > refused.retryAfterSeconds)) {
            refused = { allowed: false, layer: l.layer, limit: l.limit, windowMs: l.windowMs, retryAfterSeconds: seconds };
          }
        }
      }
      if (refused) return refused;
      const windows = new Map(active.map((l) => [rowKey(l), l.windowMs]));
      const updates = keys.map((k) => {
        const windowMs = windows.get(k)!;
        const s = record(states.get(k)!, windowMs, now);
        return { k, slots: `{${s.slots.join(",")}}`, counts: `{${s.counts.join(",")}}`, expires: new Date(now + windowMs).toISOString() };
      });
      await tx.query(
        `UPDATE rate_limit_windows AS w SET slots = u.slots::bigint[], counts = u.counts::integer[], expires_at = u.expires
         FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) AS u(k, slots, counts, expires) WHERE w.key = u.k`,
        [updates.map((u) => u.k), updates.map((u) => u.slots), updates.map((u) => u.counts), updates.map((u) => u.expires)],
      );
      return { allowed: true } as const;
    });
    // Rows of keys nobody used for a whole window are garbage: sweep them now and then.
    if (++this.takes % 500 === 0) void this.db.query("DELETE FROM rate_limit_windows WHERE expires_at < now()").catch(() => undefined);
    return decision;
  }

  /** take() that throws the 429 HttpError when refused. */
  async enforce(limits: readonly WindowLimit[]): Promise<void> {
    const d = await this.take(limits);
    if (!d.allowed) throw rateLimited(d);
  }
}

const windowName = (ms: number) => (ms === 60_000 ? "minute" : ms === 3_600_000 ? "hour" : `${Math.round(ms / 1000)} s`);

/** 429 with `Retry-After` and `{error, layer, limit, retry_after_seconds}` (REFERENCE.md). */
export function rateLimited(d: Extract<RateDecision, { allowed: false }>): HttpError {
  return new HttpError(
    429,
    "rate limit exceeded",
    { layer: d.layer, limit: `${d.limit} requests/${windowName(d.windowMs)}`, retry_after_seconds: d.retryAfterSeconds },
    { "retry-after": String(d.retryAfterSeconds) },
  );
}

/**
 * Canonical text of an IP address, or null if it is not one: IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 fully
 * expanded in lowercase (one spelling per address, so case or zero compression never makes a new rate-limit bucket).
 */
export function canonicalIp(raw: string): string | null {
  let s = raw.trim();
  if (s.startsWith("[") && s.endsWith("]")) s = s.slice(1, -1);
  const kind = isIP(s);
  if (kind === 4) return s;
  if (kind !== 6 || s.includes("%")) return null;
  // The WHATWG URL parser canonicalises IPv6 (lowercase, zero compression, embedded IPv4 as hex groups).
  const host = new URL(`http://[${s}]/`).hostname.slice(1, -1);
  const [head, tail] = host.split("::");
  const a = head ? head.split(":") : [], b = tail ? tail.split(":") : [];
  const groups = [...a, ...new Array(tail === undefined ? 0 : 8 - a.length - b.length).fill("0"), ...b].map((g) => parseInt(g, 16));
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return `${groups[6] >> 8}.${groups[6] & 255}.${groups[7] >> 8}.${groups[7] & 255}`;
  }
  return groups.map((g) => g.toString(16).padStart(4, "0")).join(":");
}

/**
 * The client address per TRUSTED_PROXY_HOPS (spec): 0 uses the TCP peer and ignores X-Forwarded-For (which any client
 * can send); N > 0 takes the N-th entry from the right, the address the outermost trusted proxy saw. Entries to its
 * left are client-supplied and never consulted. A chain shorter than N or a malformed selected entry falls back to the
 * peer, never to another entry.
 */
export function clientIp(req: Request, trustedProxyHops: number): string {
  const peer = canonicalIp(req.remoteAddress) ?? req.remoteAddress;
  if (trustedProxyHops <= 0) return peer;
  const xff = req.headers["x-forwarded-for"];
  if (!xff) return peer;
  const entries = xff.split(",").map((e) => e.trim());
  const i = entries.length - trustedProxyHops;
  if (i < 0) return peer;
  return canonicalIp(entries[i]) ?? peer;
}

/**
 * The rate-limit key of a client address: IPv4 as is, IPv6 by its /64 (one subscriber's allocation, so rotating
 * through the addresses of one network does not multiply the budget).
 */
export function ipBucket(ip: string): string {
  if (!ip.includes(":")) return ip;
  return ip.split(":").slice(0, 4).join(":") + "::/64";
}
