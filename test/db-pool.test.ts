// Named prepared statements (db/pool.ts `prepared`): prepared once per connection on the native Postgres, and run
// unnamed when the database URL turns them off — as `memrelay start` does for embedded PGlite, whose socket
// connections share one session (there, a name one pool connection prepared already exists for the next one).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { createPool, prepared, withoutPreparedStatements, type Db } from "../db/pool.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";
import { freePort } from "./support/nats-server.ts";

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

  it("keep embedded PGlite (one session behind every socket connection) working when turned off", async () => {
    const dir = mkdtempSync(join(tmpdir(), "memrelay-pglite-"));
    const pglite = await PGlite.create(dir);
    const port = await freePort();
    const server = new PGLiteSocketServer({ db: pglite, port, host: "127.0.0.1", maxConnections: 8 } as never);
    await server.start();
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    try {
      // named: the second connection's prepare collides with the first one's
      const named = createPool(url, 2);
      await expect(named.query(prepared(SQL, [1])).then(() => onEveryConnection(named, 2))).rejects.toThrow(/already exists/);
      await named.end().catch(() => undefined);
      const unnamed = createPool(withoutPreparedStatements(url), 2);
      for (let i = 0; i < 3; i++) expect(await onEveryConnection(unnamed, 2)).toEqual([1, 2]);
      await unnamed.end();
    } finally {
      await server.stop();
      await pglite.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
