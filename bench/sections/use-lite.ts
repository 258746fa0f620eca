// Section 2b: the pipeline with the shipped neural embedder (USE-lite, MEMRELAY_EMBEDDER=use-lite) against that
// embedder's own batch throughput (bench/embedder-throughput.ts). Runs in its own environment (fresh nats-server
// and database: the index has 512 dimensions there).
import { UseLiteEmbedder } from "../../adapters/embeddings/use-lite.ts";
import { measureEmbedderThroughput } from "../embedder-throughput.ts";
import type { Ctx } from "../lib/context.ts";
import { log, submitBulkAndWait } from "../lib/context.ts";
import { BenchEnv } from "../lib/env.ts";
import { OTHERS } from "../lib/processes.ts";
import { memoryTexts } from "../lib/texts.ts";
import { int, ms, pct } from "../lib/stats.ts";
import type { SectionResult } from "../lib/report.ts";

export async function useLiteSection(ctx: Ctx): Promise<SectionResult> {
  const started = new Date();
  const t0 = performance.now();
  const aloneTexts = memoryTexts(ctx.n(320, 128), 3_000);
  await ctx.quiet();
  log(`use-lite: the embedder alone in the bench process (${aloneTexts.length} texts, batches of 64, as the embedding scheduler hands them at most) ...`);
  const c0 = process.cpuUsage();
  const alone = await measureEmbedderThroughput(new UseLiteEmbedder(), aloneTexts, 64);
  const c1 = process.cpuUsage(c0);
  // CPU per text of the embedder alone (the warm-up batch included: 64 more texts).
  const aloneCpuMsPerText = (c1.user + c1.system) / 1000 / (aloneTexts.length + 64);
  log(`use-lite: alone ${alone.textsPerSec.toFixed(1)} texts/s (p50 batch ${ms(alone.p50BatchMs, 0)})`);

  log("use-lite: starting its environment (nats-server, database, services, workers) ...");
  const env = await BenchEnv.start({ embedder: "use-lite", encryptedNats: ctx.opts.encryptedNats, label: "use-lite", workerNodeArgs: ctx.workerNodeArgs() }, ctx.sampler);
  try {
    await env.startRole("projections");
    await env.startRole("gateway");
    await env.startRole("actors");
    const who = await env.identity("bench-use-lite");
    log("use-lite: warm-up (40 jobs; loads the model in the actor host) ...");
    await submitBulkAndWait(env, who, "warmup", memoryTexts(40, 9_000), { timeoutMs: 180_000 });
    const n = ctx.n(600, 160);
    await ctx.quiet();
    log(`use-lite: ${n} jobs through signed bulk remembers ...`);
    const { result: run, shares, seconds: cpuSeconds, perOp, cpu } = await ctx.cpuWindow(() => submitBulkAndWait(env, who, "uselite", memoryTexts(n, 0), { concurrency: 4, pollMs: 100, progress: true, timeoutMs: 600_000 }));
    // Load-independent view: what 2 idle cores would allow. The actor host (which embeds) is single-threaded; the rest
    // can run on the other core. Capacity = 1 / max(actor-host CPU per job, all CPU per job / 2).
    const ours = shares.filter((x) => x.label !== OTHERS && !x.label.startsWith("machine total"));
    const msPerJob = (x: { share: number }) => (x.share * cpuSeconds * 1000) / n;
    const actorMs = msPerJob(ours.find((x) => x.label.endsWith("worker --roles actors")) ?? { share: 0 });
    const totalMs = ours.reduce((a, x) => a + msPerJob(x), 0);
    const capacityRatio = aloneCpuMsPerText / Math.max(actorMs, totalMs / 2);
    log(`  CPU: ${cpu}`);
    const seconds = (run.lastDoneAt - run.firstSubmitAt) / 1000;
    const jobsPerSec = run.done / seconds;
    // The machine may be shared: measure the embedder alone again right after, and compare with the faster of the two.
    log("use-lite: the embedder alone again ...");
    const after = await measureEmbedderThroughput(new UseLiteEmbedder(), aloneTexts.slice(0, 192), 64);
    const best = Math.max(alone.textsPerSec, after.textsPerSec);
    const ratio = jobsPerSec / best;
    log(`use-lite: alone ${after.textsPerSec.toFixed(1)} texts/s after; pipeline ${jobsPerSec.toFixed(1)} jobs/s = ${pct(ratio)} of the embedder alone (best of the two)`);
    return {
      name: "use-lite",
      title: "2b. Remember pipeline with the shipped neural embedder (USE-lite)",
      startedAt: started.toISOString(),
      seconds: (performance.now() - t0) / 1000,
      rows: [
        { metric: "embedder alone (measureEmbedderThroughput, batch 64, bench process), before / after the pipeline run", measured: `${alone.textsPerSec.toFixed(1)} / ${after.textsPerSec.toFixed(1)} texts/s (batch p50 ${ms(alone.p50BatchMs, 0)} / ${ms(after.p50BatchMs, 0)})` },
        { metric: `pipeline jobs/s to done (${int(n)} jobs, first submit → last done)`, measured: `${jobsPerSec.toFixed(1)} jobs/s`, },
        { metric: "pipeline / embedder alone (the faster of the two measurements)", target: "≥ 80 %", measured: pct(ratio), pass: ratio >= 0.8 && run.failed === 0 },
        { metric: "jobs failed / HTTP errors", measured: `${run.failed} / ${run.httpErrors}` },
        { metric: "CPU ms per text, embedder alone · CPU ms per job in the pipeline", measured: `${aloneCpuMsPerText.toFixed(1)} · ${perOp(n)}` },
        { metric: "capacity ratio on 2 idle cores (embedder-alone CPU per text ÷ max(actor-host CPU per job, all CPU per job ÷ 2))", measured: pct(capacityRatio) },
        { metric: "CPU per process during the pipeline run", measured: cpu },
      ],
      notes: [
        "Same process layout as section 2, in a separate environment (own nats-server and database, since the index has 512 dimensions with this embedder).",
        "The embedder alone is measured in the bench process just before and just after the pipeline run (other load on the machine changes over time; the ratio uses the faster), with texts of the same corpus; the pipeline figure includes everything else the jobs do (encryption, blob upload, chain record, events, projections) competing for the same 2 cores.",
        `Throughput after a 40-job warm-up that loads the model in the actor-host process. ${int(run.done)} jobs done.`,
      ],
      data: { aloneCpuMsPerText, actorMs, totalMs, capacityRatio, alone, after, n, jobsPerSec, ratio, seconds, failed: run.failed, httpErrors: run.httpErrors },
    };
  } finally {
    await env.teardown();
  }
}
