// Section: memrelay against the peer an agent developer would pick instead, mem0 (the `mem0ai` npm package, OSS
// mode), on the same native Postgres + pgvector with the same near-free embedder (the hashing embedder; the bench
// serves it to mem0 over an OpenAI-compatible /v1/embeddings). Workload (issue 15): 2,000 memories over 10 users by 16
// concurrent clients, each waiting until its memory is recallable (mem0: `add` with infer:false returns once it is
// searchable; memrelay: remember → done, with encryption, the blob upload and the chain record), then 1,000 recalls by
// 8 concurrent clients, 10 results each. Goals are the ratios, taken in this run.
import { createServer, type Server } from "node:http";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { pidsByCmdline, repoRoot } from "../lib/processes.ts";
import { closedOps, type ClosedOpsResult } from "../lib/closed-ops.ts";
import { HashingEmbedder } from "../../adapters/embeddings/hashing.ts";
import { createTestDatabase } from "../../test/support/postgres.ts";
import type { Ctx } from "../lib/context.ts";
import { appendsPerOp, log, natsPerOp } from "../lib/context.ts";
import type { BenchEnv } from "../lib/env.ts";
import type { MemrelayClient } from "../../client/memrelay-client.ts";
import { memoryTexts, queries } from "../lib/texts.ts";
import { latencyLine, rate, sleep, summarize, type LatencySummary } from "../lib/stats.ts";
import type { Row, SectionResult } from "../lib/report.ts";
import { closedLoop, newPool, signedPost, type Prepared } from "../lib/load.ts";
import { RequestSigner } from "../../client/signer.ts";
import { STREAMS } from "../../eventlog/subjects.ts";
import type { IdentityWire } from "../lib/processes.ts";

const USERS = 10;
const WRITERS = 16;
const READERS = 8;

/** The hashing embedder behind an OpenAI-compatible embeddings route, for mem0. */
async function embeddingServer(dims: number): Promise<{ url: string; server: Server }> {
  const embedder = new HashingEmbedder({ dims });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { input: string | string[] };
      const inputs = Array.isArray(body.input) ? body.input : [body.input];
      const vectors = await embedder.embed(inputs);
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ object: "list", model: "hashing", usage: { prompt_tokens: 0, total_tokens: 0 }, data: vectors.map((v, index) => ({ object: "embedding", index, embedding: Array.from(v) })) }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`, server };
}

interface Side { add: { rate: number; s: LatencySummary; errors: number; perOp: string; trips?: string }; search: { rate: number; s: LatencySummary; errors: number; perOp: string } }
interface Accepted { rate: number; s: LatencySummary; errors: number; perOp: string }

const ACCEPT_CONNECTIONS = 64;

/**
 * Accepted remembers (202s) per second from 64 connections, requests signed beforehand, the actor host stopped so that
 * the gateway's front door is measured (as section 1, phase A); the queued commands are purged afterwards.
 */
async function acceptedRemembers(ctx: Ctx, env: BenchEnv, users: readonly IdentityWire[], texts: readonly string[]): Promise<Accepted> {
  await env.stopRole("actors");
  const signers = users.map((u) => new RequestSigner(Buffer.from(u.delegateSecretKeyHex, "hex"), u.accountId));
  const n = ctx.n(10_000, 1_000);
  const warm = ctx.n(2_000, 200);
  const prep = (count: number, off: number): Prepared[] =>
    Array.from({ length: count }, (_, i) => signedPost(signers[(i + off) % signers.length]!, "/api/remember", { text: texts[(i + off) % texts.length], namespace: "peer-accept" }));
  const warmReqs = prep(warm, 0);
  const reqs = prep(n, warm);
  const pool = newPool(env.relayerUrl, ACCEPT_CONNECTIONS);
  try {
    await closedLoop(pool, warmReqs, ACCEPT_CONNECTIONS, { expect: 202 });
    await ctx.quiet();
    log(`peer: memrelay accepted remembers, ${n} requests over ${ACCEPT_CONNECTIONS} connections (actor host stopped) ...`);
    const w = await ctx.cpuWindow(() => closedLoop(pool, reqs, ACCEPT_CONNECTIONS, { expect: 202 }));
    const accepted = { rate: w.result.latencies.length / w.result.seconds, s: summarize(Array.from(w.result.latencies)), errors: w.result.errors, perOp: w.perOp(n) };
    log(`  memrelay: accepted ${rate(accepted.rate, "/s")} (${latencyLine(accepted.s)}), ${accepted.errors} errors; CPU ms per request: ${accepted.perOp}`);
    return accepted;
  } finally {
    await pool.close();
    await env.log.jsm.streams.purge(STREAMS.commands);
  }
}

async function runMem0(ctx: Ctx, dims: number, n: number, searches: number): Promise<Side> {
  const db = await createTestDatabase("mem0_bench");
  const emb = await embeddingServer(dims);
  const child = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "bench", "peer-mem0.ts")], {
    cwd: repoRoot,
    env: { ...process.env, PEER_DB_URL: db.url, PEER_EMBED_URL: emb.url, PEER_DIMS: String(dims), PEER_ADDS: String(n), PEER_SEARCHES: String(searches), PEER_USERS: String(USERS), PEER_WRITERS: String(WRITERS), PEER_READERS: String(READERS) },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise<number | null>((r) => child.once("exit", r));
  const out = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const expectLine = async (prefix: string) => {
    for (;;) {
      const { value, done } = await out.next();
      if (done) throw new Error(`the mem0 process ended before "${prefix}" (exit ${await exited})`);
      if (value.startsWith(prefix)) return value.slice(prefix.length).trim();
    }
  };
  ctx.sampler.track("mem0 (library, its own process)", child.pid!);
  ctx.sampler.track("postgres backends (mem0 database)", () => pidsByCmdline(` ${db.name} `));
  try {
    const phase = async (name: string, ops: number) => {
      await expectLine(`ready ${name}`);
      await ctx.quiet();
      log(`peer: mem0 ${name}, ${ops} operations ...`);
      const w = await ctx.cpuWindow(async () => {
        child.stdin!.write("go\n");
        return JSON.parse(await expectLine(`done ${name}`)) as ClosedOpsResult;
      });
      if (w.result.firstError) log(`  first error: ${w.result.firstError}`);
      const perOp = w.perOp(ops);
      log(`  CPU ms per operation: ${perOp}`);
      return { rate: ops / w.result.seconds, s: summarize(w.result.latencies), errors: w.result.errors, perOp };
    };
    const add = await phase("add", n);
    const search = await phase("search", searches);
    return { add, search };
  } finally {
    child.kill();
    await exited;
    emb.server.close();
    await db.drop().catch(() => undefined);
  }
}

/**
 * `texts` remembered by 16 clients, each waiting until its memory is recallable (one request: `rememberAndWait`), in a
 * CPU window; with the round trips per memory, which do not depend on the machine's load, unlike its times.
 */
async function rememberToDone(ctx: Ctx, env: BenchEnv, clients: readonly MemrelayClient[], texts: readonly string[], namespace: string, label: string): Promise<Side["add"]> {
  await ctx.quiet();
  log(`peer: ${label}, ${texts.length} memories, ${WRITERS} clients ...`);
  const [n0, s0, x0] = await Promise.all([env.natsCounters(), env.streamSeqs(), pgTransactions(env)]);
  const w = await ctx.cpuWindow(() => closedOps(texts.length, WRITERS, async (i) => {
    const j = await clients[i % clients.length]!.rememberAndWait(texts[i]!, namespace, 120_000);
    if (j.status !== "done") throw new Error(`job ${j.status}: ${j.error ?? ""}`);
  }));
  // Postgres publishes a backend's counters when it goes idle, at most once a second.
  await sleep(1_500);
  const [n1, s1, x1] = await Promise.all([env.natsCounters(), env.streamSeqs(), pgTransactions(env)]);
  const trips = `NATS ${natsPerOp(n0, n1, texts.length)}; appends ${appendsPerOp(s0, s1, texts.length)}; Postgres transactions ${((x1 - x0) / texts.length).toFixed(1)}`;
  const perOp = w.perOp(texts.length);
  log(`  per memory: ${trips}`);
  log(`  CPU ms per memory: ${perOp}`);
  if (w.result.firstError) log(`  first error: ${w.result.firstError}`);
  return { rate: texts.length / w.result.seconds, s: summarize(w.result.latencies), errors: w.result.errors, perOp, trips };
}

/**
 * The same workload through the pipeline floor: the actor host with the blob upload and the chain record stood in by
 * ports that do no I/O (bench/pipeline-floor-worker.ts), everything else as above. Runs after the accepted remembers,
 * which stop the actor host; the floor's own is stopped at the end.
 */
async function pipelineFloor(ctx: Ctx, env: BenchEnv, clients: readonly MemrelayClient[], texts: readonly string[]): Promise<Side["add"]> {
  await env.startPipelineFloorActors();
  try {
    await Promise.all(clients.map(async (c) => {
      const j = await c.rememberAndWait("warm-up", "peer-floor", 60_000);
      if (j.status !== "done") throw new Error(`pipeline floor warm-up: job ${j.status}: ${j.error ?? ""}`);
    }));
    return await rememberToDone(ctx, env, clients, texts, "peer-floor", "memrelay pipeline floor (blob upload and chain record stood in) remember → done");
  } finally {
    await env.stopRole("actors");
  }
}

async function runMemrelay(ctx: Ctx, env: BenchEnv, texts: string[], qs: string[]): Promise<Side & { accepted: Accepted; floor: Side["add"] }> {
  const users = await Promise.all(Array.from({ length: USERS }, (_, i) => env.identity(`peer-${i}`)));
  const clients: MemrelayClient[] = await Promise.all(users.map((u) => env.client(u, undefined, true)));
  // Warm-up per user: a remember to done and a recall (each user's first recall fetches its decryption keys).
  await Promise.all(clients.map(async (c) => {
    const { job_id } = await c.remember("warm-up", "peer");
    await c.waitForJob(job_id);
    await c.recall("warm-up", { namespace: "peer", limit: 10 });
  }));
  const add = await rememberToDone(ctx, env, clients, texts, "peer", "memrelay remember → done");
  log(`peer: memrelay recall, ${qs.length} queries, ${READERS} clients ...`);
  const search = await ctx.cpuWindow(() => closedOps(qs.length, READERS, (i) => clients[i % USERS].recall(qs[i], { namespace: "peer", limit: 10 })));
  const accepted = await acceptedRemembers(ctx, env, users, texts);
  const floor = await pipelineFloor(ctx, env, clients, texts);
  return {
    accepted,
    floor,
    add,
    search: { rate: qs.length / search.result.seconds, s: summarize(search.result.latencies), errors: search.result.errors, perOp: search.perOp(qs.length) },
  };
}

/** Transactions the bench database has committed or rolled back (every process's, the blob store's included). */
async function pgTransactions(env: BenchEnv): Promise<number> {
  const r = await env.db.query<{ n: string }>("SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()");
  return Number(r.rows[0].n);
}

export async function peerSection(ctx: Ctx): Promise<SectionResult> {
  const started = new Date();
  const t0 = performance.now();
  const env = await ctx.env(["gateway", "projections", "actors"]);
  const n = ctx.n(2_000, 300);
  const texts = memoryTexts(n, 120_000);
  const qs = queries(ctx.n(1_000, 200), 0);
  const m = await runMemrelay(ctx, env, texts, qs);
  log(`  memrelay: done ${rate(m.add.rate, "/s")} (${latencyLine(m.add.s)}), recall ${rate(m.search.rate, "/s")} (${latencyLine(m.search.s)}); pipeline floor: done ${rate(m.floor.rate, "/s")} (${latencyLine(m.floor.s)})`);
  const p = await runMem0(ctx, env.services.embedderDims, n, qs.length);
  log(`  mem0: add ${rate(p.add.rate, "/s")} (${latencyLine(p.add.s)}), search ${rate(p.search.rate, "/s")} (${latencyLine(p.search.s)})`);
  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
  const rows: Row[] = [
    { metric: `mem0 add (infer: false), ${WRITERS} clients`, measured: `${rate(p.add.rate, "/s")}; ${latencyLine(p.add.s)}; ${p.add.errors} errors; CPU ms per memory: ${p.add.perOp}` },
    { metric: `memrelay remember → done, ${WRITERS} clients (encrypted, uploaded, recorded on chain)`, measured: `${rate(m.add.rate, "/s")}; ${latencyLine(m.add.s)}; ${m.add.errors} errors; CPU ms per memory: ${m.add.perOp}` },
    { metric: "memrelay round trips per memory (remember → done)", measured: m.add.trips ?? "" },
    { metric: "remember → done throughput ÷ mem0 add", target: "≥ 1.0×", measured: ratio(m.add.rate, p.add.rate), pass: m.add.rate >= p.add.rate && m.add.errors === 0 },
    { metric: "remember → done p99 ÷ mem0 add p99", target: "≤ 2×", measured: ratio(m.add.s.p99, p.add.s.p99), pass: m.add.s.p99 <= 2 * p.add.s.p99 },
    { metric: `memrelay pipeline floor: remember → done, ${WRITERS} clients, blob upload and chain record stood in by no-I/O ports`, measured: `${rate(m.floor.rate, "/s")}; ${latencyLine(m.floor.s)}; ${m.floor.errors} errors; CPU ms per memory: ${m.floor.perOp}` },
    { metric: "memrelay pipeline floor round trips per memory", measured: m.floor.trips ?? "" },
    { metric: "pipeline floor throughput ÷ mem0 add (what the goal above could reach at most with free blob uploads and chain records)", measured: ratio(m.floor.rate, p.add.rate) },
    { metric: "remember → done throughput ÷ pipeline floor (the share the blob upload and chain record leave)", measured: ratio(m.add.rate, m.floor.rate) },
    { metric: `memrelay accepted remembers (202), ${ACCEPT_CONNECTIONS} connections, actor host stopped`, measured: `${rate(m.accepted.rate, "/s")}; ${latencyLine(m.accepted.s)}; ${m.accepted.errors} errors; CPU ms per request: ${m.accepted.perOp}` },
    { metric: "accepted remembers ÷ mem0 add", target: "≥ 3×", measured: ratio(m.accepted.rate, p.add.rate), pass: m.accepted.rate >= 3 * p.add.rate && m.accepted.errors === 0 },
    { metric: `mem0 search, ${READERS} clients, 10 results`, measured: `${rate(p.search.rate, "/s")}; ${latencyLine(p.search.s)}; CPU ms per search: ${p.search.perOp}` },
    { metric: `memrelay recall, ${READERS} clients, 10 results (decrypted)`, measured: `${rate(m.search.rate, "/s")}; ${latencyLine(m.search.s)}; CPU ms per recall: ${m.search.perOp}` },
    { metric: "recall throughput ÷ mem0 search", target: "≥ 1.0×", measured: ratio(m.search.rate, p.search.rate), pass: m.search.rate >= p.search.rate && m.search.errors === 0 },
    { metric: "recall p99 ÷ mem0 search p99", target: "≤ 1.0×", measured: ratio(m.search.s.p99, p.search.s.p99), pass: m.search.s.p99 <= p.search.s.p99 },
  ];
  return {
    name: "peer",
    title: "Against mem0 on the same machine (issue 15)",
    startedAt: started.toISOString(),
    seconds: (performance.now() - t0) / 1000,
    rows,
    notes: [
      `${n} memories over ${USERS} users (memrelay: ${USERS} accounts, one namespace each), ${qs.length} recalls; the same texts and queries for both; hashing embedder (${env.services.embedderDims} dims) for both, served to mem0 over HTTP by the bench.`,
      "mem0 3.3.1 OSS: pgvector on a fresh database of the same Postgres, history off, no language model (infer: false), as a library in its own process (bench/peer-mem0.ts: its row is mem0 and its load loop). memrelay: the gateway, actor host and projections in their own processes; each client remembers and waits in one request (`POST /api/remember?wait=`, the TypeScript client's `rememberAndWait`), long polling only if that wait ran out.",
      `Accepted remembers: ${ACCEPT_CONNECTIONS} keep-alive connections of signed POST /api/remember (requests signed before the window, the 10 users' keys), with the actor host stopped so that the gateway is measured alone, as in section 1 phase A (commands queue on CMD and are purged afterwards); mem0's add rate is the one above.`,
      "Pipeline floor: the same 2,000 memories and clients (another namespace) after the actor host is replaced by bench/pipeline-floor-worker.ts — the production actor host (command consumer, remember-job machine, embedder, envelope encryption, event appends, lexical terms) whose blob upload answers the bytes' SHA-256 without storing them and whose chain record answers the derived blob objects without a transaction. The gateway, projections, NATS and Postgres are the run's own. It bounds what batching the blob uploads and chain records (issue 15's levers) could bring: at most the floor's rate.",
    ],
    data: { mem0: p, memrelay: m },
  };
}
