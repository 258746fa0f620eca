// Experiment: the composite score with extract(epoch ...) (numeric) vs date_part (float8), on a 10,000-memory namespace.
//   node --import tsx bench/experiments/composite-recency.ts
import { createTestDatabase } from "../../test/support/postgres.ts";
import { createPool } from "../../db/pool.ts";
import { HashingEmbedder } from "../../adapters/embeddings/hashing.ts";
import { randomUUID } from "node:crypto";
import { memoryTexts, queries } from "../lib/texts.ts";
const dense = (v: ArrayLike<number>) => JSON.stringify(Array.from(v));
const dbh = await createTestDatabase("memrelay_scratch");
const db = createPool(dbh.url, 4);
await db.query("CREATE EXTENSION IF NOT EXISTS vector");
const e = new HashingEmbedder();
const vecs = memoryTexts(10000, 0).map((t) => e.embedOne(t));
const qs = queries(100, 0).map((q) => dense(e.embedOne(q)));
await db.query(`CREATE TABLE t (id uuid PRIMARY KEY, owner text, namespace text, created_at timestamptz, importance real, v halfvec(1024))`);
await db.query(`ALTER TABLE t ALTER COLUMN v SET STORAGE EXTENDED`);
for (let b = 0; b < vecs.length; b += 2000) {
  const ids = vecs.slice(b, b + 2000).map(() => randomUUID());
  await db.query(`INSERT INTO t SELECT id, 'o', 'n', now() - random() * interval '90 days', 0.5, v FROM unnest($1::uuid[], string_to_array($2::text, ';')::halfvec[]) AS u(id, v)`, [ids, vecs.slice(b, b + 2000).map(dense).join(";")]);
}
await db.query(`CREATE INDEX ON t (owner, namespace)`); await db.query(`VACUUM ANALYZE t`);
const forms = {
  cosine: `SELECT id, v <=> $1::halfvec AS d FROM t WHERE owner = 'o' AND namespace = 'n' ORDER BY d, id LIMIT 10`,
  "composite (current: extract → numeric)": `SELECT id, d, 1 * (1 - d) + 0.5 * power(2, -(extract(epoch FROM (now() - created_at)) / 86400.0) / 30::float8) + 0.3 * importance AS score FROM (SELECT id, (v <=> $1::halfvec) AS d, created_at, importance FROM t WHERE owner = 'o' AND namespace = 'n') m ORDER BY score DESC, id LIMIT 10`,
  "composite (date_part → float8)": `SELECT id, d, 1 * (1 - d) + 0.5 * power(2::float8, -(date_part('epoch', now() - created_at) / 86400.0::float8) / 30::float8) + 0.3 * importance AS score FROM (SELECT id, (v <=> $1::halfvec) AS d, created_at, importance FROM t WHERE owner = 'o' AND namespace = 'n' OFFSET 0) m ORDER BY score DESC, id LIMIT 10`,
};
const lat: Record<string, number[]> = {};
for (const q of qs) for (const [k, sql] of Object.entries(forms)) { const t = performance.now(); await db.query(sql, [q]); (lat[k] ??= []).push(performance.now() - t); }
for (const [k, a] of Object.entries(lat)) { a.sort((x, y) => x - y); console.log(`${k.padEnd(40)} p50 ${a[50].toFixed(1)} ms p99 ${a[98].toFixed(1)} ms`); }
const same = async () => { let eq = 0; for (const q of qs.slice(0, 20)) { const a = (await db.query(forms["composite (current: extract → numeric)"], [q])).rows.map((r) => r.id).join(); const b = (await db.query(forms["composite (date_part → float8)"], [q])).rows.map((r) => r.id).join(); if (a === b) eq++; } return eq; };
console.log("same top-10 order in", await same(), "of 20 queries");
await db.end(); await dbh.drop();
