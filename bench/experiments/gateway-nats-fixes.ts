// Experiment: gateway CPU per accepted remember with two candidate fixes emulated by preloading nats-patch.mjs into
// the gateway process (no repo change): noAsyncTraces, and NATS socket writes coalesced per event-loop turn.
//   node --import tsx bench/experiments/gateway-nats-fixes.ts        (VARIANTS=base,traces,flush,both)
import { fileURLToPath } from "node:url";
import { Ctx } from "../lib/context.ts";
import { BenchEnv } from "../lib/env.ts";
import { RequestSigner } from "../../client/signer.ts";
import { closedLoop, newPool, signedPost } from "../lib/load.ts";
import { summarize, latencyLine } from "../lib/stats.ts";
const ctx = new Ctx({ quick: false, encryptedNats: true, cpuProf: false, profileDir: "" });
const variants = (process.env.VARIANTS ?? "base,traces,flush,both").split(",");
const envs: Record<string, Record<string, string>> = { base: {}, traces: { MR_NO_ASYNC_TRACES: "1" }, flush: { MR_IMMEDIATE_FLUSH: "1" }, both: { MR_NO_ASYNC_TRACES: "1", MR_IMMEDIATE_FLUSH: "1" } };
const env = await BenchEnv.start({ embedder: "hashing", encryptedNats: true, label: "main", workerNodeArgs: ["--import", fileURLToPath(new URL("./nats-patch.mjs", import.meta.url)), ...(process.env.PROF ? ["--cpu-prof", "--cpu-prof-dir=bench/profiles"] : [])] }, ctx.sampler);
const ids = await Promise.all([0, 1, 2, 3].map((i) => env.identity(`x${i}`)));
const signers = ids.map((w) => new RequestSigner(Buffer.from(w.delegateSecretKeyHex, "hex"), w.accountId));
const prep = (n: number) => Array.from({ length: n }, (_, i) => signedPost(signers[i % 4], "/api/remember", { text: `hello world number ${i} about cats`, namespace: "x" }));
for (const round of [1, 2]) for (const v of variants) {
  await env.stopRole("gateway");
  await env.startRole("gateway", envs[v]);
  const pool = newPool(env.relayerUrl, 64);
  await closedLoop(pool, prep(3000), 64, { expect: 202 });
  const { result: r, cpu, perOp } = await ctx.cpuWindow(() => closedLoop(pool, prep(10000), 64, { expect: 202 }));
  console.log(`${v} #${round}: ${Math.round(10000 / r.seconds)} req/s ${latencyLine(summarize(r.latencies))} errors ${r.errors}\n  CPU: ${cpu}\n  per req: ${perOp(10000)}`);
  await pool.close();
}
await env.teardown();
await ctx.teardown();
process.exit(0);
