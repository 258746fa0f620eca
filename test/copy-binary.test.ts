// Binary COPY FROM STDIN (db/copy-binary.ts) against a real Postgres: values of every column type arrive exact (int8
// beyond 32 bits, negatives), an identity column takes the given values, and a failing COPY rejects without
// breaking the connection's transaction handling.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, inTransaction, type Db } from "../db/pool.ts";
import { copyBinary, encodeBinaryCopy, exactEpochMicros } from "../db/copy-binary.ts";
import { halfvecBinary } from "../db/halfvec.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = createPool(database.url, 2);
  await db.query("CREATE TABLE copied (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, a smallint NOT NULL, b integer NOT NULL, c bigint NOT NULL)");
}, 30_000);

afterAll(async () => {
  await db?.end();
  await database?.drop();
});

describe("binary COPY", () => {
  it("copies integer columns exactly, identity values included", async () => {
    const id = [1, 2, 3];
    const a = [0, -32768, 32767];
    const b = [7, -1, 2_147_483_647];
    const c = [2 ** 48 - 1, -5, 4_294_967_296 + 3];
    const n = await inTransaction(db, (tx) => copyBinary(tx, "copied (id, a, b, c)", encodeBinaryCopy(["int8", "int2", "int4", "int8"], [id, a, b, c])));
    expect(n).toBe(3);
    const rows = (await db.query<{ id: string; a: number; b: number; c: string }>("SELECT id, a, b, c FROM copied ORDER BY id")).rows;
    expect(rows.map((r) => [Number(r.id), r.a, r.b, Number(r.c)])).toEqual(id.map((x, i) => [x, a[i], b[i], c[i]]));
  });

  it("copies uuid, text, timestamptz, float4, raw binary values and nulls as Postgres reads them from text", async () => {
    await db.query("CREATE EXTENSION IF NOT EXISTS vector");
    await db.query("CREATE TABLE mixed (u uuid, t text, at timestamptz, r real, v halfvec(3), n integer)");
    const at = "2026-11-26T05:39:44.123Z";
    const u = "0F8FAD5B-D9CB-469F-A165-70867728950E";
    await inTransaction(db, (tx) =>
      copyBinary(tx, "mixed (u, t, at, r, v, n)", encodeBinaryCopy(["uuid", "text", "timestamptz", "float4", "bytes", "int4"], [[u, null], ["zoë ✓", null], [exactEpochMicros(at)!, null], [0.3, null], [halfvecBinary([1, -0.5, 0.25]), null], [null, null]])),
    );
    const r = await db.query(`SELECT u = $1::uuid AS u, t = 'zoë ✓' AS t, at = $2::timestamptz AS at, r = '0.3'::real AS r, v = '[1,-0.5,0.25]'::halfvec AS v, n IS NULL AS n FROM mixed WHERE u IS NOT NULL`, [u, at]);
    expect(r.rows).toEqual([{ u: true, t: true, at: true, r: true, v: true, n: true }]);
    expect((await db.query("SELECT count(*)::int AS c FROM mixed WHERE u IS NULL AND t IS NULL AND at IS NULL AND r IS NULL AND v IS NULL")).rows[0].c).toBe(1);
    expect(exactEpochMicros("2026-11-26T05:39:44.123456Z")).toBeUndefined();
    expect(() => encodeBinaryCopy(["uuid"], [["{0f8fad5b-d9cb-469f-a165-70867728950e}"]])).toThrow(TypeError);
  });

  it("rejects a COPY that Postgres refuses, and the transaction rolls back", async () => {
    const copy = inTransaction(db, async (tx) => {
      await copyBinary(tx, "copied (id, a, b, c)", encodeBinaryCopy(["int8", "int2", "int4", "int8"], [[10], [1], [1], [1]]));
      // a duplicate key: the whole transaction, the row above included, is rolled back
      await copyBinary(tx, "copied (id, a, b, c)", encodeBinaryCopy(["int8", "int2", "int4", "int8"], [[1], [1], [1], [1]]));
    });
    await expect(copy).rejects.toThrow(/duplicate key/);
    expect((await db.query("SELECT 1 FROM copied WHERE id = 10")).rowCount).toBe(0);
    expect((await db.query<{ n: string }>("SELECT count(*) AS n FROM copied")).rows[0].n).toBe("3");
  });
});
