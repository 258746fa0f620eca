// Section 2: the remember pipeline with the hashing embedder. (a) Sustained jobs/s to `done`: N jobs submitted
// through signed bulk remembers, timed from the first submit to the last job seen done. (b) Latency from the 202 to
// the index row being present (what recall reads), at 100 jobs/s offered (open loop) for ~20 s.
import { RequestSigner } from "../../client/signer.ts";
import type { Ctx } from "../lib/context.ts";
import type { BenchEnv } from "../lib/env.ts";
import { EventStore } from "../../eventlog/event-store.ts";
import { JOB_EVENTS } from "../../schemas/relayer/remember-job.ts";
import { appendsPerOp, log, natsPerOp, submitBulkAndWait } from "../lib/context.ts";
import { newPool, openLoop, signedPost } from "../lib/load.ts";
import { memoryTexts } from "../lib/texts.ts";
import { int, latencyLine, ms, rate, sleep, summarize } from "../lib/stats.ts";
import type { SectionResult } from "../lib/report.ts";

/**
 * Where the time of 202 → recallable goes, from the events' own timestamps (one clock: the same machine): the job's
 * first commit (accepted + uploaded: pickup, embedding, encryption, blob upload), its indexed commit (chain record)
 * and the row seen in the index (projection). Sampled jobs; EventStore.load per job.
 */
async function stageBreakdown(env: BenchEnv, wall: Map<string, [number, number]>, sample: number) {
  const store = new EventStore(env.log.js, env.log.jsm);
  const ids = [...wall.keys()].filter((id) => wall.get(id)![1] > 0);
  const step = Math.max(1, Math.floor(ids.length / sample));
  const upload: number[] = [], record: number[] = [], project: number[] = [], accept: number[] = [];
  for (let i = 0; i < ids.length; i += step) {
    const [t202, seen] = wall.get(ids[i])!;
    const { events } = await store.load(`job.${ids[i]}`);
    const byType = new Map(events.map((e) => [e.event.type, e.event] as const));
    const acc = byType.get(JOB_EVENTS.accepted), up = byType.get(JOB_EVENTS.uploaded), idx = byType.get(JOB_EVENTS.indexed);
    if (!acc || !up || !idx) continue;
    const tAccepted = Date.parse((acc.data as { accepted_at: string }).accepted_at);
    accept.push(t202 - tAccepted);
    upload.push(Date.parse(up.occurred_at) - tAccepted);
    record.push(Date.parse(idx.occurred_at) - Date.parse(up.occurred_at));
    project.push(seen - Date.parse(idx.occurred_at));
  }
  const f = (x: number[]) => {
    const s = summarize(x);
    return `${Math.round(s.p50)} / ${Math.round(s.p99)} ms`;
  };
  return {
    n: upload.length,
    text: `gateway accepts → first commit (pickup, embed, encrypt, blob upload) ${f(upload)}; → indexed commit (chain record) ${f(record)}; → row seen (projection, ≤ 5 ms polling) ${f(project)}; gateway accept → client has the 202 ${f(accept)}`,
    data: { upload: summarize(upload), record: summarize(record), project: summarize(project), accept: summarize(accept) },
  };
}

/** Namespace of the queried owner that the pipeline fills and the recall section queries. */
export const BIG_NS = "ns10k";

export async function pipelineSection(ctx: Ctx): Promise<SectionResult> {
  const started = new Date();
  const t0 = performance.now();
  const env = await ctx.env(["gateway", "projections", "actors"]);
  const who = await ctx.owner();
  const n = ctx.n(10_000, 1_000);

  log("pipeline: warm-up (300 jobs) ...");
  await submitBulkAndWait(env, who, "warmup", memoryTexts(300, 20_000), { timeoutMs: 120_000 });

  await ctx.quiet();
  log(`pipeline: ${int(n)} jobs through signed bulk remembers (namespace ${BIG_NS}) ...`);
  const n0 = await env.natsCounters();
  const s0 = await env.streamSeqs();
  const { result: run, cpu, shares, perOp } = await ctx.cpuWindow(() => submitBulkAndWait(env, who, BIG_NS, memoryTexts(n, 0), { concurrency: 8, pollMs: 100, progress: true, timeoutMs: 600_000 }));
  const cpuPerJob = perOp(n);
  const natsPerJob = natsPerOp(n0, await env.natsCounters(), n);
  const streamsPerJob = appendsPerOp(s0, await env.streamSeqs(), n);
  log(`  NATS per job: ${natsPerJob}; stream appends per job: ${streamsPerJob}`);
  log(`  CPU: ${cpu}`);
  log(`  CPU ms per job: ${cpuPerJob}`);
  const seconds = (run.lastDoneAt - run.firstSubmitAt) / 1000;
  const jobsPerSec = run.done / seconds;
  // Steady state: between 10 % and 90 % done.
  const at = (frac: number) => run.timeline.find(([, d]) => d >= frac * n)?.[0] ?? NaN;
  const steady = (0.8 * n) / ((at(0.9) - at(0.1)) / 1000);
  log(`pipeline: ${run.done} done, ${run.failed} failed in ${seconds.toFixed(1)} s → ${rate(jobsPerSec, " jobs/s")} (steady ${rate(steady, " jobs/s")}); submitted in ${run.submitSeconds.toFixed(1)} s`);

  // (b) latency at a fixed offered rate.
  const offered = 100;
  const latN = ctx.n(2_000, 400);
  const signer = new RequestSigner(Buffer.from(who.delegateSecretKeyHex, "hex"), who.accountId);
  const reqs = memoryTexts(latN, 40_000).map((text) => signedPost(signer, "/api/remember", { text, namespace: "latency" }));
  const pool = newPool(env.relayerUrl, 16);
  const accepted = new Map<string, number>();
  /** job id → [Date.now() at the 202, Date.now() when its row was seen]. */
  const wall = new Map<string, [number, number]>();
  const acceptMs: number[] = [];
  const recallable: number[] = [];
  let rejected = 0;
  let polling = true;
  let maxPending = 0;
  let deadline = Infinity;
  const poller = (async () => {
    while (polling || accepted.size) {
      if (accepted.size) {
        maxPending = Math.max(maxPending, accepted.size);
        const ids = [...accepted.keys()];
        const r = await env.db.query<{ id: string }>("SELECT id::text FROM memories WHERE id = ANY($1::uuid[])", [ids]);
        const now = performance.now();
        const nowWall = Date.now();
        for (const { id } of r.rows) {
          recallable.push(now - accepted.get(id)!);
          accepted.delete(id);
          const w = wall.get(id);
          if (w) w[1] = nowWall;
        }
      }
      await sleep(5);
      if (!polling && performance.now() > deadline) break;
    }
  })();
  await ctx.quiet();
  log(`pipeline: latency 202 → recallable at ${offered} jobs/s offered for ${latN / offered} s ...`);
  const { result: ol, cpu: latCpu, shares: latShares } = await ctx.cpuWindow(() => openLoop(pool, reqs, offered, (_i, status, body, sentAt, answeredAt) => {
    if (status !== 202) {
      rejected++;
      return;
    }
    acceptMs.push(answeredAt - sentAt);
    const id = (JSON.parse(body) as { job_id: string }).job_id;
    accepted.set(id, answeredAt);
    wall.set(id, [Date.now(), 0]);
  }));
  deadline = performance.now() + 30_000;
  polling = false;
  await poller;
  await pool.close();
  const lost = accepted.size;
  const stages = await stageBreakdown(env, wall, 200);
  log(`pipeline: stages (p50 / p99): ${stages.text}`);
  const lat = summarize(recallable);
  const acc = summarize(acceptMs);
  log(`pipeline: 202 → recallable ${latencyLine(lat)} (${lost} not indexed within 30 s, ${rejected} rejected)`);

  return {
    name: "pipeline",
    title: "2. Remember pipeline (hashing embedder)",
    startedAt: started.toISOString(),
    seconds: (performance.now() - t0) / 1000,
    rows: [
      { metric: `sustained jobs/s to done (${int(n)} jobs, first submit → last done)`, target: "≥ 500 jobs/s", measured: rate(jobsPerSec, " jobs/s"), pass: jobsPerSec >= 500 && run.failed === 0 },
      { metric: "steady state (10 % → 90 % done)", measured: rate(steady, " jobs/s") },
      { metric: "jobs failed / HTTP errors", measured: `${run.failed} / ${run.httpErrors}` },
      { metric: "CPU per process during the throughput run (1 core = 100 %)", measured: cpu },
      { metric: "CPU ms per job", measured: cpuPerJob },
      { metric: "NATS messages per job (server counters)", measured: natsPerJob },
      { metric: "JetStream appends per job, by stream", measured: streamsPerJob },
      { metric: `submission alone (${int(n / 20)} bulk requests of 20, 8 in flight)`, measured: `${run.submitSeconds.toFixed(2)} s (${rate(n / run.submitSeconds, " jobs/s")} accepted)` },
      { metric: `202 → recallable p50 (${offered} jobs/s offered, ${int(latN)} jobs)`, target: "≤ 150 ms", measured: ms(lat.p50), pass: lat.p50 <= 150 && lost === 0 },
      { metric: "202 → recallable p99", target: "≤ 1 s", measured: ms(lat.p99), pass: lat.p99 <= 1000 && lost === 0 },
      { metric: "202 → recallable distribution", measured: `${latencyLine(lat)} · mean ${ms(lat.mean)}` },
      { metric: "request → 202 during the latency run", measured: latencyLine(acc) },
      { metric: "not indexed within 30 s / rejected / late sends", measured: `${lost} / ${rejected} / ${ol.lateSends}` },
      { metric: "CPU per process during the latency run", measured: latCpu },
      { metric: `stages of 202 → recallable (p50 / p99 over ${stages.n} jobs, from event timestamps)`, measured: stages.text },
    ],
    notes: [
      "Processes: gateway, actor host and projections each in their own `memrelay worker` process (actor concurrency 64, EmbeddingScheduler batches of ≤ 64); chain, key servers and blob store in the services process; the bench process submits and observes. Every job goes the whole way: embed, envelope-encrypt (AES-256-GCM under a Seal-sealed data key), upload to the blob store over the Walrus HTTP API, record the blob object on the local chain, append events, project into the index and job-status read models.",
      "Throughput: jobs seen `done` in the job-status read model (polled every 100 ms, so the end time is late by ≤ 100 ms), after a 300-job warm-up; the submission itself is fast and overlaps processing.",
      `Latency: requests signed beforehand and sent open-loop at ${offered}/s; a job counts as recallable when its row is in \`memories\` (the table recall ranks), found by polling every 5 ms (adds ≤ ~5 ms plus one query). The clock starts when the client has the 202. Peak jobs awaiting their row: ${maxPending}.`,
    ],
    data: { streamsPerJob, natsPerJob, cpuPerJob, cpu: shares, latencyCpu: latShares, n, jobsPerSec, steady, seconds, submitSeconds: run.submitSeconds, failed: run.failed, httpErrors: run.httpErrors, timeline: run.timeline.filter((_, i) => i % 5 === 0), latency: { stages: stages.data, offered, n: latN, recallable: lat, accept: acc, lost, rejected, lateSends: ol.lateSends, maxPending } },
  };
}
