// Ranking cost of hybrid recall against plain cosine, in Postgres alone (no HTTP, no blobs, no embedding): the
// queried owner has 10,000 memories in one namespace (LoCoMo turns, cycled) and the index holds 200,000 rows across
// 201 owners (other owners: LoCoMo turns under their own lexical keys). Rows are built by the real projections
// (memory_index and lexical_index `apply` on synthetic job.indexed events), in a fresh database on the native Postgres.
//
//   node --import tsx bench/hybrid-latency.ts [--rows 200000] [--ns 10000] [--queries 2000] [--keep] [--db NAME]
// --keep leaves the database for another run (--db NAME reuses it); --only 0,1 runs some of the rankings. Prints p50/p95/p99 per ranking, 1 and 32 at a
// time on a 16-connection pool (as the gateway has).
import { randomUUID } from "node:crypto";
import pg from "pg";
import { createPool, inTransaction, type Db } from "../db/pool.ts";
import { adminUrl, createTestDatabase } from "../test/support/postgres.ts";
import { HashingEmbedder } from "../adapters/embeddings/hashing.ts";
import { LexicalKeyring } from "../adapters/lexical/keys.ts";
import { documentTerms, queryTerms } from "../adapters/lexical/terms.ts";
import { memoryIndexProjection } from "../projections/relayer/memory-index.ts";
import { lexicalIndexProjection } from "../projections/relayer/lexical-index.ts";
import { migrateCheckpoints } from "../projections/runtime.ts";
import { rankMemories } from "../projections/relayer/recall.ts";
import { DEFAULT_HYBRID, rankHybrid, type HybridSettings } from "../projections/relayer/hybrid-rank.ts";
import { DEFAULT_WEIGHTS, type ScoringWeights } from "../schemas/relayer/http.ts";
import type { StoredEvent } from "../schemas/envelope.ts";
import type { IndexLogEvent } from "../schemas/relayer/memory-maintenance.ts";
import { JOB_VECTOR_EVENT_VERSION } from "../schemas/relayer/remember-job.ts";
import { encodeVectorF32 } from "../schemas/vector-wire.ts";
import { loadLocomo } from "./locomo-offline.ts";
import { summarize, latencyLine } from "./lib/stats.ts";

const args = process.argv.slice(2);
const value = (n: string) => (args.indexOf(n) >= 0 ? args[args.indexOf(n) + 1] : undefined);
const ROWS = Number(value("--rows") ?? 200_000);
const NS = Number(value("--ns") ?? 10_000);
const NQ = Number(value("--queries") ?? 2_000);
const OWNER = "0x" + "ab".repeat(32);
const NAMESPACE = "ns10k";
const log = (m: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${m}`);

const convs = loadLocomo();
const texts = convs.flatMap((c) => c.turns.map((t) => t.text));
const questions = convs.flatMap((c) => c.queries.map((q) => q.question));
const embedder = new HashingEmbedder({ dims: 1024 });
const ring = new LexicalKeyring(new Uint8Array(32).fill(7));

let dbName = value("--db");
let url: string;
if (dbName) {
  const u = new URL(adminUrl());
  u.pathname = `/${dbName}`;
  url = u.toString();
} else {
  const d = await createTestDatabase("memrelay_hybrid_bench");
  dbName = d.name;
  url = d.url;
}
const db: Db = createPool(url, 16);
const projections = [memoryIndexProjection(1024), lexicalIndexProjection];
await migrateCheckpoints(db);
for (const p of projections) await p.migrate(db);

const have = Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM memories")).rows[0].n);
if (have < ROWS) {
  log(`building ${ROWS.toLocaleString()} rows (${NS.toLocaleString()} in ${OWNER.slice(0, 8)}…/${NAMESPACE}) in ${dbName} ...`);
  const t0 = performance.now();
  const owners = Array.from({ length: 200 }, (_, i) => "0x" + i.toString(16).padStart(64, "0"));
  const base = Date.parse("2026-01-01T00:00:00Z");
  let seq = 0;
  for (let start = 0; start < ROWS; start += 2_000) {
    const events: StoredEvent<IndexLogEvent>[] = [];
    for (let i = start; i < Math.min(ROWS, start + 2_000); i++) {
      const mine = i < NS;
      const owner = mine ? OWNER : owners[i % owners.length];
      const namespace = mine ? NAMESPACE : `ns${i % 7}`;
      const text = texts[(mine ? i : i * 7919) % texts.length];
      const at = new Date(base + i * 1_000).toISOString();
      const id = randomUUID();
      events.push({
        seq: ++seq,
        subject: `evt.job.${id}`,
        event: {
          type: "job.indexed", version: JOB_VECTOR_EVENT_VERSION, id: randomUUID(), aggregate: `job.${id}`, occurred_at: at, causation_id: id, correlation_id: id,
          data: {
            object_id: "0x1", wallet: "0x2", owner, namespace, blob_id: `blob-${i}`, vector_f32: encodeVectorF32(embedder.embedOne(text)),
            importance: 0.5, size: 100, created_at: at, lexical: documentTerms(ring.forOwner(owner), text), submitted_at: at, position: 0,
          },
        },
      });
    }
    for (const p of projections) await inTransaction(db, (tx) => p.apply(tx, events));
    if ((start / 2_000) % 10 === 9) log(`  ${(start + 2_000).toLocaleString()} rows, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  // As autovacuum would: statistics, and visibility maps for index-only scans.
  await db.query("VACUUM ANALYZE");
  log(`built in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}
const sizes = (await db.query<{ m: string; p: string; d: string; np: string }>(
  "SELECT pg_total_relation_size('memories') AS m, pg_total_relation_size('lexical_postings') AS p, pg_total_relation_size('lexical_docs') AS d, (SELECT count(*) FROM lexical_postings) AS np",
)).rows[0];
log(`sizes: memories ${(Number(sizes.m) / 2 ** 20).toFixed(0)} MiB, lexical_postings ${(Number(sizes.p) / 2 ** 20).toFixed(0)} MiB (${Number(sizes.np).toLocaleString()} rows), lexical_docs ${(Number(sizes.d) / 2 ** 20).toFixed(0)} MiB`);

const qs = Array.from({ length: NQ }, (_, i) => questions[(i * 31) % questions.length]);
const prepared = qs.map((q) => ({ vector: embedder.embedOne(q), terms: queryTerms(ring.forOwner(OWNER), q) }));
const COMPOSITE: ScoringWeights = { semantic: 1, recency: 0.5, recency_half_life_days: 30, importance: 0.3 };

type Ranker = (i: number) => Promise<unknown>;
const base = { owner: OWNER, namespace: NAMESPACE, limit: 10 };
const rankers: [string, Ranker][] = [
  ["cosine (rankMemories)", (i) => rankMemories(db, { ...base, vector: prepared[i].vector, weights: DEFAULT_WEIGHTS, composite: false })],
  ["hybrid, dense weight 0 (default for hashing)", (i) => rankHybrid(db, { ...base, ...prepared[i], weights: DEFAULT_WEIGHTS, composite: false })],
  ["hybrid, dense weight 0.3 (semantic embedders)", (i) => rankHybrid(db, { ...base, ...prepared[i], weights: DEFAULT_WEIGHTS, composite: false }, { ...DEFAULT_HYBRID, denseWeight: 0.3 } satisfies HybridSettings)],
  ["composite, cosine (rankMemories)", (i) => rankMemories(db, { ...base, vector: prepared[i].vector, weights: COMPOSITE, composite: true })],
  ["composite, hybrid", (i) => rankHybrid(db, { ...base, ...prepared[i], weights: COMPOSITE, composite: true })],
];

async function run(fn: Ranker, concurrency: number, n: number): Promise<{ line: string; p50: number; p99: number; rps: number }> {
  const lat = new Float64Array(n);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) {
      const i = next++;
      const a = performance.now();
      await fn(i % prepared.length);
      lat[i] = performance.now() - a;
    }
  }));
  const s = summarize(lat);
  const rps = n / ((performance.now() - t0) / 1000);
  return { line: `${latencyLine(s)} · ${Math.round(rps)} q/s`, p50: s.p50, p99: s.p99, rps };
}

const only = value("--only")?.split(",").map(Number);
const chosen = only ? rankers.filter((_, i) => only.includes(i)) : rankers;
for (const [, fn] of chosen) await run(fn, 16, 200); // warm caches
for (const [name, fn] of chosen) {
  const one = await run(fn, 1, Math.min(NQ, 500));
  const many = await run(fn, 32, NQ);
  log(`${name}\n    1 at a time:   ${one.line}\n    32 concurrent: ${many.line}`);
}
await db.end();
if (!args.includes("--keep") && !value("--db")) {
  const c = new pg.Client({ connectionString: adminUrl() });
  await c.connect();
  await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await c.end();
} else log(`kept database ${dbName} (reuse with --db ${dbName})`);
