// PostgreSQL access: one pool per process, pgvector types registered on every connection.
import { createHash } from "node:crypto";
import pg from "pg";
import pgvector from "pgvector/pg";

export type Db = pg.Pool;
export type Tx = pg.PoolClient;

/** URL parameter that turns named prepared statements off for a server whose connections share one session. */
const PREPARED_PARAM = "prepared_statements";

/** A database URL whose pools run every statement unnamed (see createPool). */
export function withoutPreparedStatements(url: string): string {
  const u = new URL(url);
  u.searchParams.set(PREPARED_PARAM, "off");
  return u.toString();
}

/**
 * A client that runs named statements unnamed: embedded PGlite serves every socket connection from one session, where
 * a statement one pool connection prepared already exists for the next one (42P05) and the pool breaks.
 */
class UnnamedStatementsClient extends pg.Client {
  override query(config: unknown, ...rest: unknown[]): never {
    const unnamed = config && typeof config === "object" && "name" in config ? { ...(config as pg.QueryConfig), name: undefined } : config;
    return (super.query as (...a: unknown[]) => never)(unnamed, ...rest);
  }
}

/** How long a pool waits for a connection and, when set, for a query's answer (a stalled server must not hold reads). */
export interface PoolTimeouts {
  readonly connectMs?: number;
  readonly queryMs?: number;
}

export function createPool(url: string, max = 10, timeouts: PoolTimeouts = {}): Db {
  const u = new URL(url);
  const unnamed = u.searchParams.get(PREPARED_PARAM) === "off";
  u.searchParams.delete(PREPARED_PARAM);
  const pool = new pg.Pool({
    connectionString: u.toString(),
    max,
    connectionTimeoutMillis: timeouts.connectMs ?? 3_000,
    ...(timeouts.queryMs ? { query_timeout: timeouts.queryMs } : {}),
    idleTimeoutMillis: 30_000,
    ...(unnamed ? { Client: UnnamedStatementsClient } : {}),
  });
  // Without a listener, an idle client's error (e.g. Postgres restarted) would crash the process.
  pool.on("error", () => undefined);
  return pool;
}

export async function ensureVectorExtension(db: Db): Promise<void> {
  await db.query("CREATE EXTENSION IF NOT EXISTS vector");
}

/** Registers pgvector's type parser on new connections (after the extension exists). */
export function registerVectorType(db: Db): void {
  db.on("connect", (client) => {
    void pgvector.registerTypes(client).catch(() => undefined);
  });
}

export interface TransactionOptions {
  /**
   * Commit without waiting for the WAL flush (synchronous_commit off, this transaction only): for writes that can be
   * derived again, such as a projection and its checkpoint, which a crash loses together and the runner re-applies.
   */
  readonly asyncCommit?: boolean;
}

export async function inTransaction<T>(db: Db, fn: (tx: Tx) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
  const client = await db.connect();
  // A checked-out client has no pool listener: if the server goes away mid-transaction, pg emits 'error' on it
  // (besides failing the query), which would crash the process. Keep it, and discard the broken client.
  let broken: Error | undefined;
  const onError = (err: Error) => (broken = err);
  client.on("error", onError);
  try {
    // (one round trip either way: a simple query may hold several statements)
    await client.query(opts.asyncCommit ? "BEGIN; SET LOCAL synchronous_commit = off" : "BEGIN");
    const out = await fn(client);
    await client.query("COMMIT");
    return out;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    client.off("error", onError);
    client.release(broken);
  }
}

/**
 * A hot statement, prepared once per connection and named after its text (hashing it costs microseconds): Postgres
 * then skips parsing and planning it on every execution, keeping a generic plan only when that costs no more than a
 * custom one. For statements whose best plan does not depend on the values (lookups and writes by key), not searches.
 */
export function prepared(text: string, values: readonly unknown[]): pg.QueryConfig {
  return { name: "p_" + createHash("sha1").update(text).digest("hex").slice(0, 20), text, values: values as unknown[] };
}

/** Text form of a vector for a `$n::vector` parameter. */
export function toVectorLiteral(v: ArrayLike<number>): string {
  let s = "[";
  for (let i = 0; i < v.length; i++) s += (i ? "," : "") + v[i];
  return s + "]";
}
