// Section 2d: issue 28's benchmark through the relayer, with the default embedder (USE-lite) in the default
// configuration (EMBEDDING_WORKERS unset: one model thread per core in each process that embeds).
// (a) The embedder's ceiling with those threads, in the bench process, on short memories and on recall queries.
// (b) remember → done/s at 16 clients and recall/s at 8 clients through signed HTTP, and their ratio to the ceiling.
// (c) 16 clients of other owners remembering and recalling alone, then while one 1 MiB and ten 100 KiB remembers run:
//     their p99 to done and recall p99 beside the long texts over alone, and the 1 MiB remember reaching `done`.
import { Agent, request } from "undici";
import { embeddingFromEnv } from "../../config/env.ts";
import type { Job, MemrelayClient } from "../../client/memrelay-client.ts";
import type { Ctx } from "../lib/context.ts";
import { log } from "../lib/context.ts";
import { closedOps } from "../lib/closed-ops.ts";
import { documentAndQueryCeilings, type Ceiling } from "../lib/embedder-ceiling.ts";
import { BenchEnv } from "../lib/env.ts";
import { memoryTexts, prose, queries } from "../lib/texts.ts";
import { latencyLine, ms, sleep, summarize } from "../lib/stats.ts";
import type { Row, SectionResult } from "../lib/report.ts";

const REMEMBER_CLIENTS = 16;
const RECALL_CLIENTS = 8;
const NS = "long-relayer";

/** Remembers through `POST /api/remember?wait=` (held until done) and fails on a job that did not reach `done`. */
async function rememberDone(client: MemrelayClient, text: string, timeoutMs = 120_000): Promise<Job> {
  const job = await client.rememberAndWait(text, NS, timeoutMs);
  if (job.status !== "done") throw new Error(`job ${job.job_id} ended ${job.status}${job.error ? `: ${job.error}` : ""}`);
  return job;
}

interface MixedRun {
  readonly toDone: number[];
  readonly recall: number[];
  readonly errors: number;
  readonly firstError?: string;
  /** Of `errors`, the recalls that failed, and the first one's message. */
  readonly recallErrors: number;
  readonly firstRecallError?: string;
  readonly rounds: number;
}

/** Each client, in a loop until `stop()`: remember a short memory, wait for `done`, recall in its namespace. */
async function mixedClients(clients: readonly MemrelayClient[], stop: () => boolean, textOffset: number): Promise<MixedRun> {
  const toDone: number[] = [], recall: number[] = [];
  let errors = 0, rounds = 0, recallErrors = 0;
  let firstError: string | undefined, firstRecallError: string | undefined;
  await Promise.all(clients.map(async (client, c) => {
    for (let k = 0; !stop(); k++) {
      const i = textOffset + c * 1_000 + k;
      let recalling = false;
      try {
        let t = performance.now();
        await rememberDone(client, memoryTexts(1, i)[0]);
        toDone.push(performance.now() - t);
        recalling = true;
        t = performance.now();
        await client.recall(queries(1, i)[0], { namespace: NS, limit: 10 });
        recall.push(performance.now() - t);
        rounds++;
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        errors++;
        firstError ??= message;
        if (recalling) {
          recallErrors++;
          firstRecallError ??= message;
        }
      }
    }
  }));
  return { toDone, recall, errors, firstError, recallErrors, firstRecallError, rounds };
}

/** Samples `GET /ready` every 2 s until `stop()`: the longest waits it reported and how often it answered 503. */
async function watchReadiness(relayerUrl: string, stop: () => boolean) {
  let samples = 0, notReady = 0, maxJobWait = 0, maxEmbeddingWait = 0;
  while (!stop()) {
    const res = await request(`${relayerUrl}/ready`).catch(() => undefined);
    if (res) {
      const body = (await res.body.json().catch(() => ({}))) as { oldest_remember_job_wait_secs?: number; oldest_embedding_wait_secs?: number };
      samples++;
      if (res.statusCode !== 200) notReady++;
      maxJobWait = Math.max(maxJobWait, body.oldest_remember_job_wait_secs ?? 0);
      maxEmbeddingWait = Math.max(maxEmbeddingWait, body.oldest_embedding_wait_secs ?? 0);
    }
    await sleep(2_000);
  }
  return { samples, notReady, maxJobWait, maxEmbeddingWait };
}

interface Bound {
  readonly ratio: number;
  readonly embedMs: number;
  readonly totalMs: number;
}
const bound = (embedMs: number, totalMs: number): Bound => ({ ratio: embedMs / totalMs, embedMs, totalMs });
const boundLine = (b: Bound) =>
  `${b.ratio.toFixed(2)} (${b.embedMs.toFixed(1)} ÷ ${b.totalMs.toFixed(1)} ms)${b.ratio >= 0.8 ? "" : ": ≥ 0.8 cannot be reached on these cores while the pipeline shares them with the model"}`;

const ceilingLine = (c: Ceiling) => `${c.perSec.toFixed(1)}/s (bench process CPU ${c.cpuMsPerText.toFixed(1)} ms per text)`;

export async function longRelayerSection(ctx: Ctx): Promise<SectionResult> {
  const started = new Date();
  const t0 = performance.now();
  const settings = embeddingFromEnv(process.env);
  const ceilingDocs = memoryTexts(ctx.n(384, 128), 5_000);
  const ceilingQueries = queries(ctx.n(384, 128), 2_000);
  await ctx.quiet();
  log(`long-relayer: the embedder's ceiling (${settings.workers} model thread(s), scheduler batches) ...`);
  const before = await documentAndQueryCeilings(settings, ceilingDocs, ceilingQueries);
  log(`long-relayer: ceiling ${ceilingLine(before.documents)} short memories, ${ceilingLine(before.queries)} queries`);

  log("long-relayer: starting its environment (USE-lite; nats-server, database, services, workers) ...");
  const env = await BenchEnv.start({ embedder: "use-lite", encryptedNats: ctx.opts.encryptedNats, label: "long-relayer", workerNodeArgs: ctx.workerNodeArgs() }, ctx.sampler);
  const agent = new Agent({ keepAliveTimeout: 60_000 });
  try {
    await env.startRole("projections");
    await env.startRole("gateway");
    await env.startRole("actors");
    const owners = await Promise.all(Array.from({ length: REMEMBER_CLIENTS }, (_, i) => env.identity(`bench-long-relayer-${i}`)));
    const clients = await Promise.all(owners.map((who) => env.client(who, agent, true)));
    const longClient = await env.client(await env.identity("bench-long-relayer-long-texts"), agent, true);
    // Warm-up: every owner's first remember and recall (the model threads, each owner's keys from the key servers).
    log("long-relayer: warm-up (two remembers and a recall per owner) ...");
    await Promise.all(clients.map(async (client, c) => {
      for (const text of memoryTexts(2, 7_000 + 2 * c)) await rememberDone(client, text, 180_000);
      await client.recall(queries(1, c)[0], { namespace: NS, limit: 10 });
    }));

    // (b) Throughput of the default configuration through the relayer.
    const nRemember = ctx.n(480, 96);
    await ctx.quiet();
    log(`long-relayer: ${nRemember} remembers → done, ${REMEMBER_CLIENTS} clients ...`);
    const remembered = await ctx.cpuWindow(() => closedOps(nRemember, REMEMBER_CLIENTS, (i, w) => rememberDone(clients[w], memoryTexts(1, 10_000 + i)[0])));
    const rememberPerSec = (nRemember - remembered.result.errors) / remembered.result.seconds;
    log(`long-relayer: ${rememberPerSec.toFixed(1)} remembers/s to done, ${latencyLine(summarize(remembered.result.latencies))}, ${remembered.result.errors} errors`);
    const nRecall = ctx.n(480, 96);
    await ctx.quiet();
    log(`long-relayer: ${nRecall} recalls, ${RECALL_CLIENTS} clients ...`);
    const recalled = await ctx.cpuWindow(() => closedOps(nRecall, RECALL_CLIENTS, (i, w) => clients[w].recall(queries(1, 3_000 + i)[0], { namespace: NS, limit: 10 })));
    const recallPerSec = (nRecall - recalled.result.errors) / recalled.result.seconds;
    log(`long-relayer: ${recallPerSec.toFixed(1)} recalls/s, ${latencyLine(summarize(recalled.result.latencies))}, ${recalled.result.errors} errors`);

    // (c) 16 clients alone, then beside one 1 MiB and ten 100 KiB remembers of another owner.
    const aloneSecs = ctx.n(45, 15);
    await ctx.quiet();
    log(`long-relayer: ${REMEMBER_CLIENTS} clients remember → done + recall for ${aloneSecs} s alone ...`);
    let until = performance.now() + aloneSecs * 1000;
    const alone = await ctx.cpuWindow(() => mixedClients(clients, () => performance.now() > until, 20_000));
    const longTexts = [prose(1024 * 1024, 11), ...Array.from({ length: ctx.n(10, 2) }, (_, i) => prose(100 * 1024, 20 + i))];
    await ctx.quiet();
    log(`long-relayer: the same beside 1 MiB + ${longTexts.length - 1} × 100 KiB remembers ...`);
    let longRunning = true;
    const beside = await ctx.cpuWindow(async () => {
      const submitted = performance.now();
      const jobs = await Promise.all(longTexts.map((text) => longClient.remember(text, NS)));
      const longDone = Promise.all(jobs.map(async (j) => {
        const job = await longClient.waitForJob(j.job_id, 900_000);
        return { status: job.status, error: job.error, secs: (performance.now() - submitted) / 1000 };
      })).finally(() => (longRunning = false));
      // The short clients keep going while any long remember runs (at least as long as alone).
      until = performance.now() + aloneSecs * 1000;
      const [mixed, long, ready] = await Promise.all([
        mixedClients(clients, () => !longRunning && performance.now() > until, 40_000),
        longDone,
        watchReadiness(env.relayerUrl, () => !longRunning),
      ]);
      return { mixed, long, ready };
    });
    const { mixed: withLong, long, ready } = beside.result;
    const [mib, ...kib100] = long;
    const allLongDone = long.every((x) => x.status === "done");
    const s = {
      doneAlone: summarize(alone.result.toDone), doneBeside: summarize(withLong.toDone),
      recallAlone: summarize(alone.result.recall), recallBeside: summarize(withLong.recall),
    };
    const doneRatio = s.doneBeside.p99 / s.doneAlone.p99;
    const recallRatio = s.recallBeside.p99 / s.recallAlone.p99;
    log(`long-relayer: p99 to done ${ms(s.doneAlone.p99, 0)} alone, ${ms(s.doneBeside.p99, 0)} beside (${doneRatio.toFixed(2)}×); recall p99 ${ms(s.recallAlone.p99, 0)} / ${ms(s.recallBeside.p99, 0)} (${recallRatio.toFixed(2)}×); 1 MiB ${mib.status} after ${mib.secs.toFixed(1)} s`);

    // (a) again after the relayer runs: the machine is shared, the ratios use the faster of the two measurements.
    await env.stopRole("actors");
    await ctx.quiet();
    log("long-relayer: the embedder's ceiling again ...");
    const after = await documentAndQueryCeilings(settings, ceilingDocs, ceilingQueries);
    log(`long-relayer: ceiling ${ceilingLine(after.documents)} short memories, ${ceilingLine(after.queries)} queries`);
    const docFaster = before.documents.perSec >= after.documents.perSec ? before.documents : after.documents;
    const queryFaster = before.queries.perSec >= after.queries.perSec ? before.queries : after.queries;
    const docCeiling = docFaster.perSec;
    const queryCeiling = queryFaster.perSec;
    // What the CPU allows: the ceiling spends the cores on the model alone, the relayer on the model and everything
    // around it, so on the same cores remember/s ÷ ceiling ≤ the embedding's CPU per text ÷ a job's CPU in all processes.
    const rememberBound = bound(docFaster.cpuMsPerText, remembered.totalMsPerOp(nRemember));
    const recallBound = bound(queryFaster.cpuMsPerText, recalled.totalMsPerOp(nRecall));
    const rememberRatio = rememberPerSec / docCeiling;
    const recallRatioToCeiling = recallPerSec / queryCeiling;
    const errors = remembered.result.errors + recalled.result.errors + alone.result.errors + withLong.errors;
    const firstError = remembered.result.firstError ?? recalled.result.firstError ?? alone.result.firstError ?? withLong.firstError;

    const rows: Row[] = [
      { metric: `embedder ceiling, short memories as documents (${ceilingDocs.length}, ${settings.workers} model threads), before / after the relayer runs`, measured: `${ceilingLine(before.documents)} / ${ceilingLine(after.documents)}` },
      { metric: `embedder ceiling, recall queries (${ceilingQueries.length}, one per call, as the gateway hands them), before / after`, measured: `${ceilingLine(before.queries)} / ${ceilingLine(after.queries)}` },
      { metric: `remember → done through the relayer, ${REMEMBER_CLIENTS} clients (${nRemember} signed remembers held until done)`, measured: `${rememberPerSec.toFixed(1)}/s · ${latencyLine(summarize(remembered.result.latencies), 0)}` },
      { metric: "remember → done/s ÷ the embedder's ceiling on short memories (the faster measurement)", target: "≥ 0.8", measured: `${rememberRatio.toFixed(2)} (${rememberPerSec.toFixed(1)} / ${docCeiling.toFixed(1)})`, pass: rememberRatio >= 0.8 && remembered.result.errors === 0 },
      { metric: "remember: CPU ms per job by process", measured: remembered.perOp(nRemember) },
      { metric: "remember: the ratio the CPU allows here (the embedding's CPU per text in that ceiling ÷ a job's CPU in all processes)", target: "≥ 0.8 reachable", measured: boundLine(rememberBound), pass: rememberBound.ratio >= 0.8 },
      { metric: "remember: CPU per process (1 core = 100 %)", measured: remembered.cpu },
      { metric: `recall through the relayer, ${RECALL_CLIENTS} clients (${nRecall} signed recalls, limit 10)`, measured: `${recallPerSec.toFixed(1)}/s · ${latencyLine(summarize(recalled.result.latencies), 0)}` },
      { metric: "recall/s ÷ the embedder's ceiling on queries (the faster measurement)", target: "≥ 0.8", measured: `${recallRatioToCeiling.toFixed(2)} (${recallPerSec.toFixed(1)} / ${queryCeiling.toFixed(1)})`, pass: recallRatioToCeiling >= 0.8 && recalled.result.errors === 0 },
      { metric: "recall: CPU ms per recall by process", measured: recalled.perOp(nRecall) },
      { metric: "recall: the ratio the CPU allows here (the query embedding's CPU in that ceiling ÷ a recall's CPU in all processes)", target: "≥ 0.8 reachable", measured: boundLine(recallBound), pass: recallBound.ratio >= 0.8 },
      { metric: "recall: CPU per process", measured: recalled.cpu },
      { metric: `${REMEMBER_CLIENTS} clients of other owners (remember → done, then recall): p99 to done alone · beside one 1 MiB and ${kib100.length} × 100 KiB remembers`, measured: `${ms(s.doneAlone.p99, 0)} · ${ms(s.doneBeside.p99, 0)} (${s.doneAlone.n} · ${s.doneBeside.n} remembers)` },
      { metric: "p99 to done beside the long remembers ÷ alone (and their remembers that failed)", target: "≤ 2, none failed", measured: `${doneRatio.toFixed(2)} · ${withLong.errors - withLong.recallErrors} failed`, pass: doneRatio <= 2 && withLong.errors === withLong.recallErrors },
      { metric: "their recall p99 alone · beside the long remembers", measured: `${ms(s.recallAlone.p99, 0)} · ${ms(s.recallBeside.p99, 0)} (${s.recallAlone.n} · ${s.recallBeside.n} recalls)` },
      { metric: "recall p99 beside the long remembers ÷ alone (and their recalls that failed)", target: "≤ 2, none failed", measured: `${recallRatio.toFixed(2)} · ${withLong.recallErrors} failed${withLong.firstRecallError ? ` (first: ${withLong.firstRecallError})` : ""}`, pass: recallRatio <= 2 && withLong.recallErrors === 0 },
      { metric: "the 1 MiB remember reaches done", target: "done", measured: `${mib.status} after ${mib.secs.toFixed(1)} s${mib.error ? ` (${mib.error})` : ""}`, pass: mib.status === "done" },
      { metric: `the ${kib100.length} × 100 KiB remembers`, measured: `${kib100.filter((x) => x.status === "done").length} done, the last after ${Math.max(...kib100.map((x) => x.secs)).toFixed(1)} s` },
      { metric: "CPU ms per round (remember → done + recall) by process: alone · beside the long remembers (their CPU included)", measured: `${alone.perOp(Math.max(1, alone.result.rounds))} · ${beside.perOp(Math.max(1, withLong.rounds))}` },
      { metric: "CPU per process: alone · beside the long remembers", measured: `${alone.cpu} · ${beside.cpu}` },
      { metric: "GET /ready during the long remembers (sampled every 2 s): 503 answers · longest oldest-job wait · longest oldest-embedding wait (gateway)", measured: `${ready.notReady} of ${ready.samples} · ${ready.maxJobWait} s · ${ready.maxEmbeddingWait} s` },
      { metric: "errors (requests failed or jobs not done)", measured: `${errors}${firstError ? ` (first: ${firstError})` : ""}` },
    ];
    return {
      name: "long-relayer",
      title: "2d. Long memories through the relayer, and the default configuration's throughput against the embedder's ceiling (USE-lite)",
      startedAt: started.toISOString(),
      seconds: (performance.now() - t0) / 1000,
      rows,
      notes: [
        `Default configuration: USE-lite, EMBEDDING_WORKERS unset (${settings.workers} model threads per embedding process on ${settings.workers} cores: the actor host embeds the memories, the gateway the recall queries), default windows and scheduler; gateway, actor host and projections each in their own \`memrelay worker\` process, chain, key servers and blob store in the services process, as in sections 2 and 2b.`,
        "The ceiling: the same embedder and scheduler (createScheduler, same thread count) in the bench process with no stack running, every text queued at once — short LoCoMo turns as remember documents, LoCoMo questions as queries (one per call, as recall hands them). Measured before the stack starts and again after its runs (the actor host stopped); the ratios use the faster, since other work on the machine varies.",
        `Clients: ${REMEMBER_CLIENTS} owners (one per client), signed requests through MemrelayClient; a remember is \`POST /api/remember?wait=\` (the relayer answers once the job is done, long-polling the job status past 20 s), timed from the request to \`done\`; recall carries an exported session (x-encryption-session), limit 10, in the owner's namespace (a few dozen of its memories). Closed loops: each client starts its next operation when the last answers.`,
        `Long remembers: another owner's one 1 MiB and ${kib100.length} × 100 KiB texts (LoCoMo prose), all submitted at once; the 16 clients' loop (remember → done, then recall) runs while any of them is in progress, and at least as long as the alone run (${aloneSecs} s). Each long text is embedded as ${settings.maxWindows} windows (the window budget).`,
      ],
      data: { workers: settings.workers, before, after, docCeiling, queryCeiling, rememberPerSec, recallPerSec, rememberRatio, recallRatioToCeiling, remember: { n: nRemember, seconds: remembered.result.seconds, latency: summarize(remembered.result.latencies), cpu: remembered.shares }, recall: { n: nRecall, seconds: recalled.result.seconds, latency: summarize(recalled.result.latencies), cpu: recalled.shares }, interference: { ...s, doneRatio, recallRatio, long, ready, allLongDone, rounds: { alone: alone.result.rounds, beside: withLong.rounds } }, errors, firstError },
    };
  } finally {
    await agent.close().catch(() => undefined);
    await env.teardown();
  }
}
