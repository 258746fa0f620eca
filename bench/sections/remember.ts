// Section 1: accepted remembers. Signed POST /api/remember with distinct nonces, all requests signed before the
// timed window, replayed by 64 closed-loop connections. The gateway runs alone in its own process.
import { RequestSigner } from "../../client/signer.ts";
import { STREAMS } from "../../eventlog/subjects.ts";
import type { Ctx } from "../lib/context.ts";
import { log, natsPerOp } from "../lib/context.ts";
import { closedLoop, newPool, signedPost, type LoadResult, type Prepared } from "../lib/load.ts";
import { meanMsBetween, scrapeHistogram } from "../lib/metrics.ts";
import { memoryTexts } from "../lib/texts.ts";
import { int, latencyLine, ms, rate, sleep, summarize } from "../lib/stats.ts";
import type { Row, SectionResult } from "../lib/report.ts";

const CONNECTIONS = 64;

export async function rememberSection(ctx: Ctx): Promise<SectionResult> {
  const started = new Date();
  const t0 = performance.now();
  const env = await ctx.env(["gateway", "projections"]);
  // The actor host is not running in phase A (its process is started for phase B only): commands accumulate on the
  // CMD work queue, so phase A measures the gateway alone.
  await env.stopRole("actors");
  const warm = ctx.n(3_000, 500);
  const nA = ctx.n(20_000, 2_000);
  const nB = ctx.n(8_000, 1_000);
  const identities = await Promise.all(Array.from({ length: 4 }, (_, i) => env.identity(`bench-remember-${i}`)));
  const signers = identities.map((w) => new RequestSigner(Buffer.from(w.delegateSecretKeyHex, "hex"), w.accountId));
  const texts = memoryTexts(2_000, 0);
  log(`remember: signing ${warm * 2 + nA + nB} requests before the timed window ...`);
  const tSign = performance.now();
  const prep = (n: number, off: number): Prepared[] =>
    Array.from({ length: n }, (_, i) => signedPost(signers[(i + off) % signers.length], "/api/remember", { text: texts[(i + off) % texts.length], namespace: "bench-remember" }));
  const warmA = prep(warm, 0), runA = prep(nA, warm), warmB = prep(warm, 1), runB = prep(nB, 2);
  const signSeconds = (performance.now() - tSign) / 1000;
  const pool = newPool(env.relayerUrl, CONNECTIONS);

  const measure = async (label: string, w: Prepared[], r: Prepared[]) => {
    log(`remember ${label}: warm-up ${w.length} requests ...`);
    await closedLoop(pool, w, CONNECTIONS, { expect: 202 });
    await ctx.quiet();
    const before = await scrapeHistogram(env.relayerUrl, "memrelay_http_request_duration_seconds", 'route="remember"');
    log(`remember ${label}: ${r.length} requests over ${CONNECTIONS} connections ...`);
    const n0 = await env.natsCounters();
    const { result: res, cpu, shares, perOp } = await ctx.cpuWindow(() => closedLoop(pool, r, CONNECTIONS, { expect: 202 }));
    const natsPerReq = natsPerOp(n0, await env.natsCounters(), r.length);
    const cpuPerReq = perOp(r.length);
    log(`  CPU: ${cpu}`);
    log(`  CPU ms per request: ${cpuPerReq}`);
    const after = await scrapeHistogram(env.relayerUrl, "memrelay_http_request_duration_seconds", 'route="remember"');
    const s = summarize(res.latencies);
    log(`remember ${label}: ${rate(r.length / res.seconds, " req/s")}, ${latencyLine(s)}, ${res.errors} errors`);
    return { res, s, serverMeanMs: meanMsBetween(before, after), cpu, shares, cpuPerReq, natsPerReq };
  };

  const a = await measure("A (actor host not running)", warmA, runA);
  log("remember: starting the actor host for phase B (it drains the queued commands meanwhile) ...");
  await env.startRole("actors");
  await sleep(1_000);
  const b = await measure("B (actor host running)", warmB, runB);
  await pool.close();

  // The accepted jobs are not needed later: stop the actor host and drop the queued commands so that the next
  // sections start from an empty work queue.
  await env.stopRole("actors");
  const cmd = await env.log.jsm.streams.info(STREAMS.commands);
  const leftover = cmd.state.messages;
  await env.log.jsm.streams.purge(STREAMS.commands);

  const row = (label: string, x: { res: LoadResult; s: ReturnType<typeof summarize>; serverMeanMs: number; cpu: string; cpuPerReq: string; natsPerReq: string }, targets: boolean): Row[] => {
    const thr = x.res.latencies.length / x.res.seconds;
    return [
      { metric: `${label}: throughput`, target: targets ? "≥ 3,000 req/s" : undefined, measured: rate(thr, " req/s"), pass: targets ? thr >= 3000 : undefined },
      { metric: `${label}: p99 latency`, target: targets ? "≤ 25 ms" : undefined, measured: ms(x.s.p99), pass: targets ? x.s.p99 <= 25 : undefined },
      { metric: `${label}: errors`, target: targets ? "0" : undefined, measured: `${x.res.errors} of ${int(x.res.latencies.length)}`, pass: targets ? x.res.errors === 0 : undefined },
      { metric: `${label}: latency`, measured: `${latencyLine(x.s)} · mean ${ms(x.s.mean)}` },
      { metric: `${label}: gateway-side mean (route histogram)`, measured: ms(x.serverMeanMs, 2) },
      { metric: `${label}: CPU per process (1 core = 100 %)`, measured: x.cpu },
      { metric: `${label}: CPU ms per request`, measured: x.cpuPerReq },
      { metric: `${label}: NATS messages per request (server counters)`, measured: x.natsPerReq },
    ];
  };
  return {
    name: "remember",
    title: "1. Accepted remembers (signed POST /api/remember)",
    startedAt: started.toISOString(),
    seconds: (performance.now() - t0) / 1000,
    rows: [...row(`A, actor host stopped (${int(nA)} req)`, a, true), ...row(`B, actor host running (${int(nB)} req)`, b, false)],
    notes: [
      `Load generator: the bench process, undici Pool of ${CONNECTIONS} keep-alive connections, ${CONNECTIONS} closed-loop workers; ${int(warm * 2 + nA + nB)} requests signed (distinct UUID v4 nonces, 4 delegate keys) in ${signSeconds.toFixed(1)} s before the timed windows; each phase after a ${int(warm)}-request warm-up.`,
      "Gateway: its own process (`memrelay worker --roles gateway`); projections in another worker process; chain, key servers and blob store in the services process; nats-server (repo nats.conf) and Postgres are separate processes; all on the same 2 cores.",
      "Phase A: no actor-host process runs (it is started after phase A), so commands accumulate on the CMD work queue: this isolates the gateway. Phase B: the actor-host process runs and drains that backlog at full speed while the load runs, i.e. the gateway shares the 2 cores with the whole pipeline (informational; the target applies to A).",
      `After the section the actor host was stopped and ${int(leftover)} still-queued commands were purged from CMD, so later sections start from an empty queue.`,
      `Statuses A: ${JSON.stringify(a.res.statuses)}; B: ${JSON.stringify(b.res.statuses)}.${[...a.res.errorSamples, ...b.res.errorSamples].length ? ` Error samples: ${[...a.res.errorSamples, ...b.res.errorSamples].join(" / ")}` : ""}`,
    ],
    data: { cpuPerReqA: a.cpuPerReq, natsPerReqA: a.natsPerReq, connections: CONNECTIONS, signSeconds, phaseA: { cpu: a.shares, n: nA, seconds: a.res.seconds, summary: a.s, errors: a.res.errors, statuses: a.res.statuses, serverMeanMs: a.serverMeanMs }, phaseB: { cpu: b.shares, n: nB, seconds: b.res.seconds, summary: b.s, errors: b.res.errors, statuses: b.res.statuses, serverMeanMs: b.serverMeanMs }, purgedCommands: leftover },
  };
}
