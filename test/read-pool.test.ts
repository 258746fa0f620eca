// The read pool's pure parts (WAL positions, lag in seconds, replica names, DATABASE_READ_* parsing) and how it treats
// replica URLs that cannot serve reads: a server that is not a standby (the native PostgreSQL, a primary) and an
// address where nothing listens. Reads from a real standby: test/read-replicas.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseLsn, replayLagSeconds } from "../db/wal-position.ts";
import { CoalescedProbe, ReadPool, replicaInTrouble, replicaName, type ReadRoute } from "../db/read-pool.ts";
import { ConfigError, databaseReadFromEnv, loadConfig } from "../config/env.ts";
import { createPool, type Db } from "../db/pool.ts";
import { createLogger } from "../config/logger.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";
import { freePort } from "./support/free-port.ts";

describe("WAL positions", () => {
  it("parses pg_lsn text into comparable numbers", () => {
    expect(parseLsn("0/0")).toBe(0n);
    expect(parseLsn("0/3000000")).toBe(0x3000000n);
    expect(parseLsn("1/0")).toBe(1n << 32n);
    expect(parseLsn("A/FFFFFFFF") > parseLsn("9/FFFFFFFF")).toBe(true);
    expect(parseLsn("16/B374D848") - parseLsn("16/B374D800")).toBe(0x48n);
  });

  it.each(["", "0", "0/", "/1", "0/1/2", "G/1", "123456789/0", " 0/1", "0x1/0"])("refuses %j", (text) => {
    expect(() => parseLsn(text)).toThrow(/not a WAL position/);
  });

  it("says lag in seconds from the primary's samples: the age of the oldest sample not replayed", () => {
    const samples = [
      { at: 1_000, lsn: 100n },
      { at: 2_000, lsn: 200n },
      { at: 3_000, lsn: 300n },
    ];
    expect(replayLagSeconds(samples, 300n, 3_500)).toBe(0);
    expect(replayLagSeconds(samples, 400n, 3_500)).toBe(0);
    expect(replayLagSeconds(samples, 250n, 3_500)).toBe(0.5);
    expect(replayLagSeconds(samples, 150n, 3_500)).toBe(1.5);
    expect(replayLagSeconds(samples, 0n, 3_500)).toBe(2.5);
    // an idle primary: nothing new to replay, no lag however long ago the last write was
    expect(replayLagSeconds([{ at: 0, lsn: 100n }], 100n, 600_000)).toBe(0);
    expect(replayLagSeconds([], 0n, 1_000)).toBe(0);
  });
});

describe("the fence probe", () => {
  it("never answers a caller with a probe that started before its call; callers arriving together share one", async () => {
    const started: ((v: bigint) => void)[] = [];
    const probe = new CoalescedProbe(() => new Promise<bigint>((resolve) => started.push(resolve)));
    const a = probe.next();
    const b = probe.next(); // arrives while a's probe runs: that probe may have read the position before b's call
    const c = probe.next();
    expect(started).toHaveLength(1);
    started[0](1n);
    expect(await a).toBe(1n);
    await new Promise((r) => setImmediate(r));
    expect(started).toHaveLength(2);
    started[1](2n);
    expect([await b, await c]).toEqual([2n, 2n]);
    const d = probe.next();
    expect(started).toHaveLength(3);
    started[2](3n);
    expect(await d).toBe(3n);
  });

  it("a failed probe fails its callers only; the next call probes again", async () => {
    let n = 0;
    const probe = new CoalescedProbe(async () => {
      n++;
      if (n === 1) throw new Error("primary down");
      return BigInt(n);
    });
    await expect(probe.next()).rejects.toThrow("primary down");
    expect(await probe.next()).toBe(2n);
  });
});

describe("a failed read on a replica", () => {
  it.each([
    [{ code: "ECONNREFUSED" }, true],
    [new Error("Query read timeout"), true],
    [{ code: "57P01" }, true], // admin shutdown
    [{ code: "08006" }, true], // connection failure
    [{ code: "40001" }, true], // canceled by a conflict with recovery
    [{ code: "53300" }, true], // too many connections
    [{ code: "42P01" }, false], // the statement's own error: the primary would refuse it too
    [{ code: "22P02" }, false],
  ])("%j puts the replica aside: %s", (err, trouble) => {
    expect(replicaInTrouble(err)).toBe(trouble);
  });
});

describe("DATABASE_READ_* variables", () => {
  it("defaults: no replica, a 100 ms wait, a 1 s lag bound", () => {
    expect(databaseReadFromEnv({})).toEqual({ urls: [], waitMs: 100, maxLagMs: 1_000 });
    expect(loadConfig({}).databaseRead.urls).toEqual([]);
  });

  it("reads a comma-separated list of postgres URLs and the two bounds", () => {
    expect(databaseReadFromEnv({ DATABASE_READ_URLS: " postgres://r1:5433/m , postgresql://u:p@r2/m,", DATABASE_READ_WAIT_MS: "0", DATABASE_READ_MAX_LAG_MS: "5000" })).toEqual({
      urls: ["postgres://r1:5433/m", "postgresql://u:p@r2/m"],
      waitMs: 0,
      maxLagMs: 5_000,
    });
  });

  it.each([
    ["DATABASE_READ_URLS", "not a url"],
    ["DATABASE_READ_URLS", "http://replica:5432/m"],
    ["DATABASE_READ_URLS", "postgres://ok:5432/m,mysql://u:secret@x/m"],
    ["DATABASE_READ_URLS", "postgres:///m"],
    ["DATABASE_READ_WAIT_MS", "abc"],
    ["DATABASE_READ_WAIT_MS", "-1"],
    ["DATABASE_READ_WAIT_MS", "1.5"],
    ["DATABASE_READ_WAIT_MS", "60001"],
    ["DATABASE_READ_MAX_LAG_MS", "soon"],
    ["DATABASE_READ_MAX_LAG_MS", "3600001"],
  ])("refuses %s=%j with a ConfigError naming it, and no password in the message", (name, value) => {
    const env = { [name]: value };
    expect(() => databaseReadFromEnv(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(new RegExp(name));
    try {
      databaseReadFromEnv(env);
    } catch (err) {
      expect((err as Error).message).not.toContain("secret");
    }
  });

  it("names replicas by address, without credentials", () => {
    expect(replicaName("postgres://reader:s3cret@10.0.0.7:5433/memrelay")).toBe("10.0.0.7:5433/memrelay");
    expect(replicaName("postgresql://db.internal/memrelay?sslmode=require")).toBe("db.internal:5432/memrelay");
  });
});

describe("replica URLs that cannot serve reads", () => {
  let database: TestDatabase;
  let primary: Db;
  beforeAll(async () => {
    database = await createTestDatabase();
    primary = createPool(database.url, 4);
    await primary.query("CREATE TABLE facts (n int); INSERT INTO facts VALUES (1), (2)");
  });
  afterAll(async () => {
    await primary?.end();
    await database?.drop();
  });

  async function withPool(urls: string[], fn: (pool: ReadPool, routes: string[], logs: string[]) => Promise<void>): Promise<void> {
    const logs: string[] = [];
    const pool = new ReadPool(primary, urls, { waitMs: 100, maxLagMs: 1_000, checkEveryMs: 50 }, createLogger({ format: "json", sink: (l) => logs.push(l) }));
    const routes: string[] = [];
    pool.onRead((p, r: ReadRoute) => routes.push(`${p} ${r}`));
    try {
      await fn(pool, routes, logs);
    } finally {
      await pool.close();
    }
  }

  it("a server that is not a standby (another primary) is never read from, and said once in the log", async () => {
    // the native cluster is a primary: a URL to it in DATABASE_READ_URLS is a mistake reads must not follow
    const notStandby = new URL(database.url);
    notStandby.username = "postgres";
    notStandby.password = "pw-not-logged";
    await withPool([notStandby.toString()], async (pool, routes, logs) => {
      await pool.check();
      await pool.check();
      expect(pool.health()).toEqual([{ name: replicaName(notStandby.toString()), up: false, lagSeconds: undefined, lagBytes: undefined }]);
      expect((await pool.read((db) => db.query("SELECT count(*)::int AS n FROM facts"))).rows[0].n).toBe(2);
      expect(routes).toEqual(["primary no_healthy_replica"]);
      expect(logs.filter((l) => l.includes("not a standby"))).toHaveLength(1);
      expect(logs.join("\n")).not.toContain("pw-not-logged");
    });
  });

  it("an address where nothing listens: reads answer from the primary at once", async () => {
    const url = `postgres://postgres@127.0.0.1:${await freePort()}/memrelay`;
    await withPool([url], async (pool, routes) => {
      await pool.check();
      expect(pool.health()[0].up).toBe(false);
      const t0 = performance.now();
      for (let i = 0; i < 5; i++) expect((await pool.read((db) => db.query("SELECT 1 AS one"))).rows[0].one).toBe(1);
      expect(performance.now() - t0).toBeLessThan(1_000);
      expect(new Set(routes)).toEqual(new Set(["primary no_healthy_replica"]));
    });
  });

  it("without replicas every read is the primary's, and a statement's own error is not swallowed", async () => {
    await withPool([], async (pool, routes) => {
      expect(pool.health()).toEqual([]);
      await expect(pool.read((db) => db.query("SELECT * FROM no_such_table"))).rejects.toThrow(/no_such_table/);
      expect((await pool.read((db) => db.query("SELECT 2 AS two"))).rows[0].two).toBe(2);
      expect(routes).toEqual(["primary primary_only"]);
    });
  });
});
