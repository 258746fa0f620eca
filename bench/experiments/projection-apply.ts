// Experiment: cost of one memory-index batch of 2000 job.indexed events, current code vs candidate fixes.
//   node --import tsx bench/experiments/projection-apply.ts
import { createTestDatabase } from "../../test/support/postgres.ts";
import { createPool, toVectorLiteral } from "../../db/pool.ts";
import { memoryIndexProjection } from "../../projections/relayer/memory-index.ts";
import { HashingEmbedder } from "../../adapters/embeddings/hashing.ts";
import { encodeCommit, decodeCommit, envelope } from "../../eventlog/event-store.ts";
import { randomUUID } from "node:crypto";
import { memoryTexts } from "../lib/texts.ts";
const dbh = await createTestDatabase("memrelay_scratch");
const db = createPool(dbh.url, 4);
const p = memoryIndexProjection(1024);
await p.migrate(db);
const e = new HashingEmbedder();
const B = 2000;
const texts = memoryTexts(B * 6, 0);
const mk = (k: number) => texts.slice(k * B, (k + 1) * B).map((t, i) => {
  const id = randomUUID();
  return encodeCommit({ events: [envelope(`job.${id}`, { type: "job.indexed", version: 1, data: { object_id: "0x1", wallet: "0x2", owner: "0xo" + (i % 50), namespace: "default", blob_id: randomUUID(), vector: Array.from(e.embedOne(t)), importance: 0.5, size: 100, created_at: new Date().toISOString() } }, { causationId: id, correlationId: id })] });
});
const t = () => performance.now();
for (let k = 0; k < 3; k++) {
  const raw = mk(k);
  let a = t();
  const evs = raw.map((r, i) => ({ seq: i + 1, subject: "evt.job.x", event: decodeCommit(r).events[0] }));
  const decode = t() - a;
  const c = await db.connect();
  a = t();
  await c.query("BEGIN"); await p.apply(c, evs); await c.query("COMMIT");
  const applyCur = t() - a;
  c.release();
  console.log(`current:  decode ${decode.toFixed(0)} ms + apply ${applyCur.toFixed(0)} ms per ${B} (${Math.round(B / ((decode + applyCur) / 1000))} rows/s on one process)`);
}
for (let k = 3; k < 6; k++) {
  const raw = mk(k);
  let a = t();
  const evs = raw.map((r) => decodeCommit(r).events[0]);
  const decode = t() - a;
  a = t();
  const ids: string[] = [], blobs: string[] = [], owners: string[] = [], nss: string[] = [], vecs: string[] = [], created: string[] = [], imps: number[] = [], sizes: number[] = [];
  for (const ev of evs) { const d = ev.data as any; ids.push(ev.aggregate.slice(4)); blobs.push(d.blob_id); owners.push(d.owner); nss.push(d.namespace); vecs.push(JSON.stringify(d.vector)); created.push(d.created_at); imps.push(d.importance); sizes.push(d.size); }
  const build = t() - a;
  a = t();
  await db.query(`INSERT INTO memories (id, blob_id, owner, namespace, vector, created_at, importance, size)
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], string_to_array($5::text, ';')::halfvec[], $6::timestamptz[], $7::real[], $8::int[]) ON CONFLICT DO NOTHING`,
    [ids, blobs, owners, nss, vecs.join(";"), created, imps, sizes]);
  const ins = t() - a;
  console.log(`candidate: decode ${decode.toFixed(0)} ms + build ${build.toFixed(0)} ms + insert ${ins.toFixed(0)} ms per ${B} (${Math.round(B / ((decode + build + ins) / 1000))} rows/s on one process)`);
}
// server-side parse cost alone
const vecs = mk(0).map((r) => JSON.stringify((decodeCommit(r).events[0].data as any).vector));
let a = t();
await db.query("SELECT count(*) FROM unnest(string_to_array($1::text, ';')::halfvec[])", [vecs.join(";")]);
console.log(`server: parse ${B} halfvec literals ${(t() - a).toFixed(0)} ms`);
a = t();
vecs.map((v) => toVectorLiteral(JSON.parse(v)));
console.log(`client: toVectorLiteral x${B} ${(t() - a).toFixed(0)} ms; JSON.stringify x${B}: ${(() => { const b = t(); vecs.map((v) => JSON.stringify(JSON.parse(v))); return (t() - b).toFixed(0); })()} ms (both include JSON.parse)`);
await db.end(); await dbh.drop();
