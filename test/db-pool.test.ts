// Named prepared statements (db/pool.ts `prepared`): prepared once per connection on the native Postgres, and run
// unnamed when the database URL turns them off — as `memrelay start` does for embedded PGlite, whose socket
// connections share one session (there, a name one pool connection prepared already exists for the next one); and
// that embedded server, which must keep each connection's exchanges and transactions whole.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { createPool, prepared, withoutPreparedStatements, type Db } from "../db/pool.ts";
import { servePglite } from "../db/pglite-server.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";

const SQL = "SELECT $1::int + 1 AS x";
const preparedNames = async (db: Db) => {
  const c = await db.connect();
  try {
    await c.query(prepared(SQL, [1]));
    return (await c.query<{ name: string }>("SELECT name FROM pg_prepared_statements")).rows.map((r) => r.name);
  } finally {
    c.release();
  }
};
/** The statement on `n` pool connections at once (each its own client). */
const onEveryConnection = async (db: Db, n: number) => {
  const clients = await Promise.all(Array.from({ length: n }, () => db.connect()));
  try {
    return await Promise.all(clients.map(async (c, i) => (await c.query<{ x: number }>(prepared(SQL, [i]))).rows[0].x));
  } finally {
    clients.forEach((c) => c.release());
  }
};

/** Embedded PGlite behind db/pglite-server.ts for `fn`, torn down after. */
async function withPglite(fn: (url: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "memrelay-pglite-"));
  const pglite = await PGlite.create(dir);
  const server = await servePglite(pglite, "127.0.0.1", 0);
  try {
    await fn(`postgres://postgres@127.0.0.1:${server.port}/postgres`);
  } finally {
    await server.stop();
    await pglite.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

describe("prepared statements", () => {
  it("are prepared once per connection on a server with a session per connection", async () => {
    const db = createPool(database.url, 2);
    try {
      expect((await preparedNames(db)).some((n) => n.startsWith("p_"))).toBe(true);
      expect(await onEveryConnection(db, 2)).toEqual([1, 2]);
    } finally {
      await db.end();
    }
  });

  it("run unnamed when the URL turns them off, which the server then accepts", async () => {
    const url = withoutPreparedStatements(database.url);
    expect(url).toContain("prepared_statements=off");
    const db = createPool(url, 2);
    try {
      expect(await preparedNames(db)).toEqual([]);
      expect(await onEveryConnection(db, 2)).toEqual([1, 2]);
    } finally {
      await db.end();
    }
  });

  it("keep embedded PGlite (one session behind every connection) working when turned off", () =>
    withPglite(async (url) => {
      // named: the second connection's prepare collides with the first one's
      const named = createPool(url, 2);
      await expect(named.query(prepared(SQL, [1])).then(() => onEveryConnection(named, 2))).rejects.toThrow(/already exists/);
      await named.end().catch(() => undefined);
      const unnamed = createPool(withoutPreparedStatements(url), 2);
      for (let i = 0; i < 3; i++) expect(await onEveryConnection(unnamed, 2)).toEqual([1, 2]);
      await unnamed.end();
    }), 60_000);
});

describe("embedded PGlite server (db/pglite-server.ts)", () => {
  it("keeps each connection's exchanges and transactions whole while many connections run at once", () =>
    withPglite(async (url) => {
      const db = createPool(withoutPreparedStatements(url), 8);
      try {
        await db.query("CREATE TABLE t (k int PRIMARY KEY, v text NOT NULL)");
        // extended-protocol statements with parameters (Parse, Bind, Describe, Execute, Sync each) from 8 connections,
        // and transactions whose rows must land together or not at all
        const big = "x".repeat(100_000);
        const work = Array.from({ length: 200 }, async (_, i) => {
          if (i % 10 === 0) {
            const c = await db.connect();
            try {
              await c.query("BEGIN");
              await c.query("INSERT INTO t (k, v) VALUES ($1, $2)", [i, big]);
              await c.query("INSERT INTO t (k, v) VALUES ($1, $2)", [10_000 + i, "pair"]);
              if (i % 20 === 0) await c.query("ROLLBACK");
              else await c.query("COMMIT");
            } finally {
              c.release();
            }
            return;
          }
          await db.query("INSERT INTO t (k, v) VALUES ($1, $2)", [i, String(i)]);
          expect((await db.query<{ v: string }>("SELECT v FROM t WHERE k = $1", [i])).rows[0].v).toBe(String(i));
        });
        await Promise.all(work);
        const n = (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM t")).rows[0].n;
        // 180 single rows, 10 committed pairs (i % 20 = 10), 10 rolled back
        expect(n).toBe(180 + 20);
        expect((await db.query<{ n: number }>("SELECT count(*)::int AS n FROM t WHERE v = $1", [big])).rows[0].n).toBe(10);
        // a connection that goes away inside a transaction does not leave it open for the others
        const c = await db.connect();
        await c.query("BEGIN");
        await c.query("INSERT INTO t (k, v) VALUES (-1, 'orphan')");
        c.release(new Error("drop this connection"));
        expect((await db.query<{ n: number }>("SELECT count(*)::int AS n FROM t WHERE k = -1")).rows[0].n).toBe(0);
      } finally {
        await db.end();
      }
    }), 60_000);
});
