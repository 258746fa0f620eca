// Exact-scan cost of one namespace of 10,000 hashing vectors: halfvec(1024) vs sparsevec(1024).
import { createTestDatabase } from "../../test/support/postgres.ts";
import { createPool } from "../../db/pool.ts";
import { HashingEmbedder } from "../../adapters/embeddings/hashing.ts";
import { randomUUID } from "node:crypto";
import { memoryTexts, queries } from "../lib/texts.ts";
const dense = (v: ArrayLike<number>) => { const p = new Array<string>(v.length); for (let i = 0; i < v.length; i++) { const x = v[i]; p[i] = x === 0 ? "0" : String(x); } return "[" + p.join(",") + "]"; };
const sparse = (v: ArrayLike<number>) => { const p: string[] = []; for (let i = 0; i < v.length; i++) if (v[i] !== 0) p.push(`${i + 1}:${v[i]}`); return `{${p.join(",")}}/${v.length}`; };
const dbh = await createTestDatabase("memrelay_scratch");
const db = createPool(dbh.url, 4);
await db.query("CREATE EXTENSION IF NOT EXISTS vector");
const e = new HashingEmbedder();
const vecs = memoryTexts(10000, 0).map((t) => e.embedOne(t));
const qs = queries(300, 0).map((q) => e.embedOne(q));
await db.query("CREATE TABLE h (id uuid PRIMARY KEY, owner text, namespace text, v halfvec(1024))");
await db.query("CREATE TABLE s (id uuid PRIMARY KEY, owner text, namespace text, v sparsevec(1024))");
for (let b = 0; b < vecs.length; b += 2000) {
  const ids = vecs.slice(b, b + 2000).map(() => randomUUID());
  await db.query("INSERT INTO h SELECT id, 'o', 'n', v FROM unnest($1::uuid[], $2::halfvec[]) AS u(id, v)", [ids, vecs.slice(b, b + 2000).map(dense)]);
  await db.query("INSERT INTO s SELECT id, 'o', 'n', v FROM unnest($1::uuid[], $2::sparsevec[]) AS u(id, v)", [ids, vecs.slice(b, b + 2000).map(sparse)]);
}
await db.query("CREATE INDEX ON h (owner, namespace)"); await db.query("CREATE INDEX ON s (owner, namespace)");
await db.query("VACUUM ANALYZE h"); await db.query("VACUUM ANALYZE s");
for (let r = 0; r < 2; r++) for (const [t, f] of [["h", dense], ["s", sparse]] as const) {
  const lat: number[] = []; let agree = 0;
  for (const q of qs) {
    const t0 = performance.now();
    await db.query(`SELECT id, v <=> $1::${t === "h" ? "halfvec" : "sparsevec"} AS d FROM ${t} WHERE owner = 'o' AND namespace = 'n' ORDER BY d, id LIMIT 10`, [f(q)]);
    lat.push(performance.now() - t0);
  }
  lat.sort((a, b) => a - b);
  console.log(`${t === "h" ? "halfvec  " : "sparsevec"}: p50 ${lat[150].toFixed(2)} ms, p99 ${lat[296].toFixed(2)} ms (one at a time, 10,000 rows)`);
}
// same top-10?
let same = 0, tot = 0;
for (const q of qs.slice(0, 50)) {
  const a = (await db.query("SELECT id::text FROM h ORDER BY v <=> $1::halfvec, id LIMIT 10", [dense(q)])).rows.map((x) => x.id);
  const b = new Set((await db.query("SELECT id::text FROM s ORDER BY v <=> $1::sparsevec, id LIMIT 10", [sparse(q)])).rows.map((x) => x.id));
  for (const x of a) { tot++; if (b.has(x)) same++; }
}
console.log(`top-10 overlap halfvec vs sparsevec: ${(same / tot).toFixed(3)}`);
console.log(await db.query("SELECT pg_size_pretty(pg_total_relation_size('h')) h, pg_size_pretty(pg_total_relation_size('s')) s").then((r) => r.rows[0]));
await db.end(); await dbh.drop();
