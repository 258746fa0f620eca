// What a hot standby takes off the primary (DATABASE_READ_URLS, db/read-pool.ts): the same recall rankings
// (rankMemories, exact, one owner's namespace of --ns memories built by the real memory_index projection) through the
// read pool, once without a replica and once with one, while a writer commits on the primary as projections do
// (asynchronously, a batch every 20 ms) so that every read's fence moves. Reported in one run: CPU per read of the
// primary's PostgreSQL processes, of the standby's and of this (gateway-like) process, latencies, and where the reads
// went. Its own primary and standby (scripts/pg-standby.sh), removed after.
//
//   node --import tsx bench/read-replicas.ts [--ns 5000] [--reads 3000] [--clients 8]
import { randomUUID } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { createPool, inTransaction, type Db } from "../db/pool.ts";
import { ReadPool, type ReadRoute } from "../db/read-pool.ts";
import { silentLogger } from "../config/logger.ts";
import { HashingEmbedder } from "../adapters/embeddings/hashing.ts";
import { memoryIndexProjection } from "../projections/relayer/memory-index.ts";
import { migrateCheckpoints } from "../projections/runtime.ts";
import { rankMemories } from "../projections/relayer/recall.ts";
import { DEFAULT_WEIGHTS } from "../schemas/relayer/http.ts";
import type { StoredEvent } from "../schemas/envelope.ts";
import { JOB_VECTOR_EVENT_VERSION } from "../schemas/relayer/remember-job.ts";
import type { IndexLogEvent } from "../schemas/relayer/memory-maintenance.ts";
import { encodeVectorF32 } from "../schemas/vector-wire.ts";
import { startPrimaryWithStandby, standbyDatabaseUrl } from "../test/support/pg-standby.ts";
import { latencyLine, summarize } from "./lib/stats.ts";

const args = process.argv.slice(2);
const value = (n: string) => (args.indexOf(n) >= 0 ? args[args.indexOf(n) + 1] : undefined);
const NS = Number(value("--ns") ?? 5_000);
const READS = Number(value("--reads") ?? 3_000);
const CLIENTS = Number(value("--clients") ?? 8);
const DIMS = 256;
const OWNER = "0x" + "ab".repeat(32);
const log = (m: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${m}`);
const embedder = new HashingEmbedder({ dims: DIMS });

/** CPU seconds (user + system) of a PostgreSQL cluster: its postmaster and every process it forked. */
function clusterCpuSeconds(postmasterPid: number): number {
  const tick = 100; // USER_HZ on Linux
  const fields = (pid: number) => readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ");
  let total = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const f = fields(Number(entry));
      // fields after the command: [0] state, [1] ppid, …, [11] utime, [12] stime
      if (Number(entry) === postmasterPid || Number(f[1]) === postmasterPid) total += (Number(f[11]) + Number(f[12])) / tick;
    } catch {
      // a backend that exited meanwhile
    }
  }
  return total;
}

const pg = await startPrimaryWithStandby();
try {
  const database = await pg.database();
  const primary: Db = createPool(database.url, 16);
  const primaryPid = Number(readFileSync(`${pg.dataDir}/primary/postmaster.pid`, "utf8").split("\n")[0]);
  const standbyPid = Number(readFileSync(`${pg.dataDir}/standby/postmaster.pid`, "utf8").split("\n")[0]);
  const projection = memoryIndexProjection(DIMS);
  await migrateCheckpoints(primary);
  await projection.migrate(primary);
  log(`building ${NS.toLocaleString()} memories of one namespace with the memory_index projection ...`);
  for (let start = 0; start < NS; start += 1_000) {
    const events: StoredEvent<IndexLogEvent>[] = [];
    for (let i = start; i < Math.min(NS, start + 1_000); i++) {
      const id = randomUUID();
      const at = new Date(Date.parse("2026-01-01T00:00:00Z") + i * 1_000).toISOString();
      events.push({
        seq: i + 1,
        subject: `evt.job.${id}`,
        event: {
          type: "job.indexed", version: JOB_VECTOR_EVENT_VERSION, id: randomUUID(), aggregate: `job.${id}`, occurred_at: at, causation_id: id, correlation_id: id,
          data: { object_id: "0x1", wallet: "0x2", owner: OWNER, namespace: "bench", blob_id: `blob-${i}`, vector_f32: encodeVectorF32(embedder.embedOne(`memory number ${i} about topic ${i % 97}`)), importance: 0.5, size: 100, created_at: at, submitted_at: at, position: 0 },
        },
      });
    }
    await inTransaction(primary, (tx) => projection.apply(tx, events));
  }
  await primary.query("VACUUM ANALYZE memories");
  await primary.query("CREATE TABLE writes (n bigint)");
  const vectors = Array.from({ length: 64 }, (_, i) => embedder.embedOne(`question ${i} about topic ${i % 97}`));

  async function run(label: string, replicaUrls: string[]): Promise<{ primaryCpu: number; standbyCpu: number; nodeCpu: number }> {
    const reads = new ReadPool(primary, replicaUrls, { waitMs: 100, maxLagMs: 1_000 }, silentLogger);
    await reads.check();
    const routes = new Map<string, number>();
    reads.onRead((pool, route: ReadRoute) => routes.set(`${pool === "primary" ? "primary" : "replica"} ${route}`, (routes.get(`${pool === "primary" ? "primary" : "replica"} ${route}`) ?? 0) + 1));
    // a projection-like writer: an asynchronously committed batch every 20 ms
    let writing = true;
    const writer = (async () => {
      for (let n = 0; writing; n++) {
        await inTransaction(primary, (tx) => tx.query("INSERT INTO writes SELECT generate_series($1::bigint, $1::bigint + 49)", [n * 50]), { asyncCommit: true });
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const [p0, s0, n0] = [clusterCpuSeconds(primaryPid), clusterCpuSeconds(standbyPid), process.cpuUsage()];
    const latencies: number[] = [];
    let next = 0;
    await Promise.all(Array.from({ length: CLIENTS }, async () => {
      while (next < READS) {
        const i = next++;
        const t0 = performance.now();
        await reads.read((db) => rankMemories(db, { owner: OWNER, namespace: "bench", vector: vectors[i % vectors.length], limit: 10, weights: DEFAULT_WEIGHTS, composite: false }));
        latencies.push(performance.now() - t0);
      }
    }));
    const n1 = process.cpuUsage(n0);
    const out = { primaryCpu: (clusterCpuSeconds(primaryPid) - p0) / READS, standbyCpu: (clusterCpuSeconds(standbyPid) - s0) / READS, nodeCpu: (n1.user + n1.system) / 1e6 / READS };
    writing = false;
    await writer;
    await reads.close();
    log(`${label}: ${latencyLine(summarize(latencies))}; CPU per read: primary ${(out.primaryCpu * 1e3).toFixed(2)} ms, standby ${(out.standbyCpu * 1e3).toFixed(2)} ms, this process ${(out.nodeCpu * 1e3).toFixed(2)} ms; reads: ${[...routes].map(([k, v]) => `${k} ${v}`).join(", ")}`);
    return out;
  }

  log(`${READS.toLocaleString()} rankings of a ${NS.toLocaleString()}-memory namespace, ${CLIENTS} at a time, a writer committing every 20 ms`);
  const alone = await run("primary only", []);
  const withReplica = await run("with a replica", [standbyDatabaseUrl(pg, database)]);
  log(`primary CPU per read with a replica / without: ${(withReplica.primaryCpu / alone.primaryCpu).toFixed(3)}; this process: ${(withReplica.nodeCpu / alone.nodeCpu).toFixed(2)}`);
  await primary.end();
} finally {
  pg.remove();
}
