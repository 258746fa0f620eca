// The binary halfvec encoder (db/halfvec.ts) against pgvector's own text input: the same bits for every value,
// including rounding ties, subnormals and the edges of the range; a binary halfvec[] inserts like the text form.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";
import { halfvecArrayBinary, halfvecBinary, toHalfBits } from "../db/halfvec.ts";
import { toVectorLiteral } from "../db/pool.ts";

let db: TestDatabase;
let client: pg.Client;

beforeAll(async () => {
  db = await createTestDatabase("memrelay_halfvec");
  client = new pg.Client({ connectionString: db.url });
  await client.connect();
  await client.query("CREATE EXTENSION IF NOT EXISTS vector");
});

afterAll(async () => {
  await client?.end();
  await db?.drop();
});

/** Values around every kind of edge: ties between two halves, subnormals, the largest finite half. */
function edgeValues(): number[] {
  const out = [0, -0, 1, -1, 0.1, 1 / 3, 65504, -65504, 65519.99, 2 ** -14, 2 ** -24, 2 ** -25, 1.5 * 2 ** -25, 3 * 2 ** -26, 2 ** -26, 1e-9];
  // Exact ties between consecutive halves, in the normal and the subnormal range.
  for (const e of [-20, -15, -14, -3, 0, 7, 14]) for (let m = 0; m < 6; m++) out.push((1 + (2 * m + 1) / 2048) * 2 ** e, -(1 + (2 * m + 1) / 2048) * 2 ** e);
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let i = 0; i < 2_000; i++) out.push((rnd() - 0.5) * 2 ** Math.floor(rnd() * 40 - 28));
  return out;
}

describe("binary halfvec", () => {
  it("stores the same bits as pgvector's text input", async () => {
    const values = edgeValues();
    for (let i = 0; i < values.length; i += 500) {
      const v = values.slice(i, i + 500);
      const r = await client.query<{ same: boolean; a: string; b: string }>("SELECT $1::halfvec = $2::halfvec AS same, $1::halfvec::text AS a, $2::halfvec::text AS b", [halfvecBinary(v), toVectorLiteral(v)]);
      expect(r.rows[0].a).toBe(r.rows[0].b);
      expect(r.rows[0].same).toBe(true);
    }
  });

  it("refuses what a halfvec cannot hold, as the text input does", async () => {
    for (const x of [65520, -1e6, Infinity, NaN]) {
      expect(() => toHalfBits(x)).toThrow(RangeError);
      await expect(client.query("SELECT $1::halfvec", [toVectorLiteral([x])])).rejects.toThrow();
    }
  });

  it("a binary halfvec[] inserts through unnest like the text array", async () => {
    await client.query("CREATE TABLE t (id int, v halfvec(3))");
    const oid = (await client.query<{ oid: number }>("SELECT 'halfvec'::regtype::oid::int AS oid")).rows[0].oid;
    const vs = [[1, 2, 3], [0.5, -0.25, 1e-5]];
    await client.query("INSERT INTO t SELECT * FROM unnest($1::int[], $2::halfvec[])", [[1, 2], halfvecArrayBinary(oid, vs.map(halfvecBinary))]);
    const r = await client.query<{ v: string }>("SELECT v::text FROM t ORDER BY id");
    const expected = await client.query<{ v: string }>("SELECT $1::halfvec::text AS v UNION ALL SELECT $2::halfvec::text", vs.map(toVectorLiteral));
    expect(r.rows.map((x) => x.v)).toEqual(expected.rows.map((x) => x.v));
    // A wrong dimension is refused by the column, as with text.
    await expect(client.query("INSERT INTO t SELECT * FROM unnest($1::int[], $2::halfvec[])", [[3], halfvecArrayBinary(oid, [halfvecBinary([1, 2])])])).rejects.toThrow(/dimensions/);
  });
});
