import { createTestDatabase } from "../../test/support/postgres.ts";
import { createPool, toVectorLiteral } from "../../db/pool.ts";
import { memoryIndexProjection } from "../../projections/memory-index.ts";
import { HashingEmbedder } from "../../adapters/embeddings/hashing.ts";
import { randomUUID } from "node:crypto";
import { memoryTexts, queries } from "../lib/texts.ts";
const fast = (v: ArrayLike<number>) => { const p = new Array<string>(v.length); for (let i = 0; i < v.length; i++) { const x = v[i]; p[i] = x === 0 ? "0" : String(x); } return "[" + p.join(",") + "]"; };
const dbh = await createTestDatabase("memrelay_scratch");
const db = createPool(dbh.url, 4);
const e = new HashingEmbedder();
const texts = memoryTexts(10000, 0);
const vecs = texts.map((t) => Array.from(e.embedOne(t)));
const qv = queries(200, 0).map((q) => fast(e.embedOne(q)));
for (const storage of ["EXTENDED", "EXTERNAL", "PLAIN", "MAIN"]) {
  await db.query("DROP TABLE IF EXISTS memories");
  await memoryIndexProjection(1024).migrate(db);
  await db.query(`ALTER TABLE memories ALTER COLUMN vector SET STORAGE ${storage}`);
  let ins = 0, lit = 0;
  for (let b = 0; b < vecs.length; b += 2000) {
    const t0 = performance.now();
    const lits = vecs.slice(b, b + 2000).map(fast);
    const t1 = performance.now();
    const ids = lits.map(() => randomUUID());
    await db.query(`INSERT INTO memories (id, blob_id, owner, namespace, vector, created_at, importance, size)
      SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::halfvec[], $6::timestamptz[], $7::real[], $8::int[])`,
      [ids, ids, ids.map(() => "0xowner"), ids.map(() => "default"), lits, ids.map(() => new Date().toISOString()), ids.map(() => 0.5), ids.map(() => 100)]);
    ins += performance.now() - t1; lit += t1 - t0;
  }
  await db.query("VACUUM ANALYZE memories");
  const sz = (await db.query("SELECT avg(pg_column_size(vector))::int AS s, pg_total_relation_size('memories') AS t FROM memories")).rows[0];
  const lat: number[] = [];
  for (const q of qv) {
    const t = performance.now();
    await db.query("SELECT blob_id, (vector <=> $1::halfvec) AS distance FROM memories WHERE owner = $2 AND namespace = $3 ORDER BY distance, id LIMIT 10", [q, "0xowner", "default"]);
    lat.push(performance.now() - t);
  }
  lat.sort((a, b) => a - b);
  const plan = (await db.query("EXPLAIN (ANALYZE, BUFFERS) SELECT blob_id, (vector <=> $1::halfvec) AS distance FROM memories WHERE owner = $2 AND namespace = $3 ORDER BY distance, id LIMIT 10", [qv[0], "0xowner", "default"])).rows.map((r) => r["QUERY PLAN"]).join("\n");
  console.log(`${storage}: literal ${(lit / 5).toFixed(0)} ms/2000, insert ${(ins / 5).toFixed(0)} ms/2000 rows; column ${sz.s} B, table ${(sz.t / 2 ** 20).toFixed(1)} MiB; query p50 ${lat[100].toFixed(1)} ms p99 ${lat[197].toFixed(1)} ms`);
  console.log(plan.split("\n").filter((l) => /Execution|Sort|Scan|Buffers/.test(l)).slice(0, 6).join("\n"));
}
await db.end();
await dbh.drop();
