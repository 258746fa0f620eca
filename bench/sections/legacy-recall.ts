// Section: recall through the deprecated x-delegate-key header beside recall through an exported session (issue 29).
// 8 closed-loop clients of one owner over 10 namespaces (hashing embedder), each mode on a freshly started gateway for
// longer than the legacy session's 2-minute life and the 60 s key cache age, so the windows include a session renewal
// and the key refreshes: the tail both paths had came from those (a cold fetch of every namespace's key, seconds).
import { createDelegateSession } from "../../adapters/encryption/session.ts";
import { RequestSigner } from "../../client/signer.ts";
import type { Ctx } from "../lib/context.ts";
import { ensureReal, log } from "../lib/context.ts";
import type { BenchEnv } from "../lib/env.ts";
import { closedLoop, newPool, signedPost, type Prepared } from "../lib/load.ts";
import type { IdentityWire } from "../lib/processes.ts";
import { queries } from "../lib/texts.ts";
import { latencyLine, ms, rate, summarize, type LatencySummary } from "../lib/stats.ts";
import type { Row, SectionResult } from "../lib/report.ts";

const CLIENTS = 8;
const NAMESPACES = Array.from({ length: 10 }, (_, i) => `legacy-ns${i}`);
const PER_NAMESPACE = 20;
/** Offered requests per second the prepared list covers (the runs stop at their time limit first). */
const PREPARED_RATE = 600;

interface ModeRun {
  readonly mode: string;
  readonly summary: LatencySummary;
  readonly throughput: number;
  readonly errors: number;
  readonly cpu: string;
  readonly cpuPerReq: string;
  readonly seconds: number;
}

async function measure(ctx: Ctx, env: BenchEnv, mode: string, credential: Record<string, string>, signer: RequestSigner, seconds: number): Promise<ModeRun> {
  // A fresh gateway: no decrypt session or unlocked key of the previous mode.
  await env.stopRole("gateway");
  await env.startRole("gateway");
  const prepare = (n: number, offset: number): Prepared[] =>
    queries(n, offset).map((query, i) => signedPost(signer, "/api/recall", { query, namespace: NAMESPACES[i % NAMESPACES.length], limit: 10 }, credential));
  const pool = newPool(env.relayerUrl, CLIENTS);
  try {
    await closedLoop(pool, prepare(200, 1_000), CLIENTS, { expect: 200 });
    await ctx.quiet();
    log(`legacy-recall: ${mode}: ${CLIENTS} clients for ${seconds} s ...`);
    const { result, cpu, perOp } = await ctx.cpuWindow(() => closedLoop(pool, prepare(seconds * PREPARED_RATE, 0), CLIENTS, { expect: 200, maxSeconds: seconds }));
    const summary = summarize(result.latencies);
    log(`legacy-recall: ${mode}: ${rate(summary.n / result.seconds, " req/s")}, ${latencyLine(summary)}, ${result.errors} errors`);
    return { mode, summary, throughput: summary.n / result.seconds, errors: result.errors, cpu, cpuPerReq: perOp(summary.n), seconds: result.seconds };
  } finally {
    await pool.close();
  }
}

export async function legacyRecallSection(ctx: Ctx): Promise<SectionResult> {
  const started = new Date();
  const t0 = performance.now();
  const env = await ctx.env(["gateway", "projections", "actors"]);
  const who: IdentityWire = await ctx.owner();
  for (const [i, ns] of NAMESPACES.entries()) await ensureReal(env, who, ns, PER_NAMESPACE, 90_000 + i * PER_NAMESPACE);
  await env.stopRole("actors");
  const secret = Buffer.from(who.delegateSecretKeyHex, "hex");
  const signer = new RequestSigner(secret, who.accountId);
  const seconds = ctx.n(150, 40);
  const session = await createDelegateSession({ delegateSecretKey: secret, packageId: env.workerEnv.MEMORY_PACKAGE_ID, rpcUrl: env.workerEnv.CHAIN_RPC_URL, ttlMin: 30 });
  const exported = await measure(ctx, env, "x-encryption-session", { "x-encryption-session": session.header }, signer, seconds);
  const legacy = await measure(ctx, env, "x-delegate-key", { "x-delegate-key": who.delegateSecretKeyHex }, signer, seconds);
  const p99Ratio = legacy.summary.p99 / exported.summary.p99;
  const rows: Row[] = [
    { metric: `recall, exported session (x-encryption-session): ${CLIENTS} clients, ${NAMESPACES.length} namespaces`, measured: `${latencyLine(exported.summary)} · ${rate(exported.throughput, " req/s")} · ${exported.errors} errors` },
    { metric: "recall, legacy x-delegate-key (same clients and namespaces)", measured: `${latencyLine(legacy.summary)} · ${rate(legacy.throughput, " req/s")} · ${legacy.errors} errors` },
    { metric: "legacy / exported session: p99 ratio · throughput ratio", target: "p99 ≤ 1.5×", measured: `${p99Ratio.toFixed(2)}× (${ms(legacy.summary.p99)} / ${ms(exported.summary.p99)}) · ${(legacy.throughput / exported.throughput).toFixed(2)}×`, pass: p99Ratio <= 1.5 && legacy.errors === 0 },
    { metric: "worst request: legacy / exported session", measured: `${ms(legacy.summary.max)} / ${ms(exported.summary.max)}` },
    { metric: "CPU ms per recall (exported session)", measured: exported.cpuPerReq },
    { metric: "CPU ms per recall (x-delegate-key)", measured: legacy.cpuPerReq },
    { metric: "CPU per process (exported session / x-delegate-key)", measured: `${exported.cpu} / ${legacy.cpu}` },
  ];
  return {
    name: "legacy-recall",
    title: "Recall through x-delegate-key beside an exported session",
    startedAt: started.toISOString(),
    seconds: (performance.now() - t0) / 1000,
    rows,
    notes: [
      `One owner, ${NAMESPACES.length} namespaces of ${PER_NAMESPACE} real memories (remembered through the API), hashing embedder; ${CLIENTS} closed-loop clients over keep-alive connections, requests signed beforehand, namespaces in turn, limit 10, 200 warm-up requests; each mode runs ${seconds} s on a freshly started gateway (no session or unlocked key carried over), the actor host stopped.`,
      "The window is longer than the legacy session's life (2 minutes, rebuilt 30 s before it ends) and spans two or more ages of the key cache (60 s; keys are fetched again in the background from 45 s), which is where the tail came from before (issue 29: p99 1.9 s through x-delegate-key against 57 ms through an exported session).",
      "The exported session lives 30 minutes (created once, as a client would); the x-delegate-key header carries the raw delegate key on every request, as MemWal's clients before x-seal-session did.",
    ],
    data: { exported, legacy, p99Ratio },
  };
}
