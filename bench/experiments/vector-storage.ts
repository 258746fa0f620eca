// Exact-scan cost of a 10,000-memory namespace (hashing vectors) by vector storage, interleaved to share the noise.
//   node --import tsx bench/experiments/vector-storage.ts
import { createTestDatabase } from "../../test/support/postgres.ts";
import { createPool } from "../../db/pool.ts";
import { HashingEmbedder } from "../../adapters/embeddings/hashing.ts";
import { randomUUID } from "node:crypto";
import { memoryTexts, queries } from "../lib/texts.ts";
const dense = (v: ArrayLike<number>) => JSON.stringify(Array.from(v));
const sparse = (v: ArrayLike<number>) => { const p: string[] = []; for (let i = 0; i < v.length; i++) if (v[i] !== 0) p.push(`${i + 1}:${v[i]}`); return `{${p.join(",")}}/${v.length}`; };
const dbh = await createTestDatabase("memrelay_scratch");
const db = createPool(dbh.url, 4);
await db.query("CREATE EXTENSION IF NOT EXISTS vector");
const e = new HashingEmbedder();
const vecs = memoryTexts(10000, 0).map((t) => e.embedOne(t));
const qs = queries(200, 0).map((q) => e.embedOne(q));
const variants = [["external (default)", "halfvec", null], ["extended", "halfvec", "EXTENDED"], ["plain", "halfvec", "PLAIN"], ["sparsevec", "sparsevec", null]] as const;
for (const [i, [, type, storage]] of variants.entries()) {
  await db.query(`CREATE TABLE t${i} (id uuid PRIMARY KEY, owner text, namespace text, created_at timestamptz, importance real, v ${type}(1024))`);
  if (storage) await db.query(`ALTER TABLE t${i} ALTER COLUMN v SET STORAGE ${storage}`);
  for (let b = 0; b < vecs.length; b += 2000) {
    const ids = vecs.slice(b, b + 2000).map(() => randomUUID());
    await db.query(`INSERT INTO t${i} SELECT id, 'o', 'n', now(), 0.5, v FROM unnest($1::uuid[], string_to_array($2::text, ';')::${type}[]) AS u(id, v)`, [ids, vecs.slice(b, b + 2000).map(type === "halfvec" ? dense : sparse).join(";")]);
  }
  await db.query(`CREATE INDEX ON t${i} (owner, namespace)`);
  await db.query(`VACUUM ANALYZE t${i}`);
}
const lat = variants.map(() => [] as number[]);
const comp = variants.map(() => [] as number[]);
const compFenced = variants.map(() => [] as number[]);
for (const q of qs) for (const [i, [, type]] of variants.entries()) {
  const lit = type === "halfvec" ? dense(q) : sparse(q);
  let t = performance.now();
  await db.query(`SELECT id, v <=> $1::${type} AS d FROM t${i} WHERE owner = 'o' AND namespace = 'n' ORDER BY d, id LIMIT 10`, [lit]);
  lat[i].push(performance.now() - t);
  const c = `SELECT id, d, 1 * (1 - d) + 0.5 * power(2, -(extract(epoch FROM (now() - created_at)) / 86400.0) / 30) + 0.3 * importance AS score FROM (SELECT id, (v <=> $1::${type}) AS d, created_at, importance FROM t${i} WHERE owner = 'o' AND namespace = 'n' FENCE) m ORDER BY score DESC, id LIMIT 10`;
  t = performance.now();
  await db.query(c.replace("FENCE", ""), [lit]);
  comp[i].push(performance.now() - t);
  t = performance.now();
  await db.query(c.replace("FENCE", "OFFSET 0"), [lit]);
  compFenced[i].push(performance.now() - t);
}
const p = (a: number[], q: number) => [...a].sort((x, y) => x - y)[Math.floor((a.length - 1) * q)].toFixed(1);
for (const [i, [name]] of variants.entries()) {
  const size = (await db.query(`SELECT pg_size_pretty(pg_total_relation_size('t${i}')) s, avg(pg_column_size(v))::int c FROM t${i}`)).rows[0];
  const buf = (await db.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT id, v <=> $1::${variants[i][1]} AS d FROM t${i} WHERE owner = 'o' AND namespace = 'n' ORDER BY d, id LIMIT 10`, [variants[i][1] === "halfvec" ? dense(qs[0]) : sparse(qs[0])])).rows[0]["QUERY PLAN"][0].Plan["Shared Hit Blocks"];
  console.log(`${name.padEnd(20)} cosine p50 ${p(lat[i], 0.5)} ms p99 ${p(lat[i], 0.99)} | composite p50 ${p(comp[i], 0.5)} ms, with OFFSET 0 fence p50 ${p(compFenced[i], 0.5)} ms | ${size.s}, column ${size.c} B, buffers/query ${buf}`);
}
await db.end(); await dbh.drop();
