// Section 2c: long texts through the embedding scheduler with the default embedder (USE-lite, EMBEDDING_WORKERS model
// threads, default windows): embedding time per KiB from 1 KiB to 1 MiB (issue 28: flat, not growing with the
// text), the time a short text and a query wait while long texts are embedded, and the embedder's ceiling on short
// texts with those workers. In the bench process, no stack: what the model and the scheduler cost.
import { availableParallelism } from "node:os";
import { embeddingFromEnv } from "../../config/env.ts";
import type { Ctx } from "../lib/context.ts";
import { log } from "../lib/context.ts";
import { ceilingOf, withUseLiteScheduler } from "../lib/embedder-ceiling.ts";
import { memoryTexts, prose } from "../lib/texts.ts";
import { ms, summarize } from "../lib/stats.ts";
import type { SectionResult } from "../lib/report.ts";

const SIZES_KIB = [1, 4, 16, 64, 256, 1024];

export async function longTextsSection(ctx: Ctx): Promise<SectionResult> {
  const started = new Date();
  const t0 = performance.now();
  const settings = embeddingFromEnv(process.env);
  return withUseLiteScheduler(settings, async (scheduler) => {
    await ctx.quiet();

    // 1. Embedding time per KiB, one text at a time (each alone on the model threads).
    const perKib: { kib: number; secs: number; msPerKib: number; windows: number }[] = [];
    for (const kib of ctx.opts.quick ? SIZES_KIB.slice(0, 4) : SIZES_KIB) {
      const text = prose(kib * 1024, kib);
      const s = performance.now();
      await scheduler.embedDocument(undefined, text);
      const secs = (performance.now() - s) / 1000;
      const windows = Math.round((scheduler.deadlineMsFor(text) - settings.deadlineBaseMs) / Math.max(1, settings.deadlineMsPerWindow));
      perKib.push({ kib, secs, msPerKib: (secs * 1000) / kib, windows });
      log(`long-texts: ${kib} KiB in ${secs.toFixed(2)} s (${((secs * 1000) / kib).toFixed(1)} ms/KiB)`);
    }
    const slopes = perKib.map((x) => x.msPerKib);
    // "Grows at most linearly": the largest per-KiB time over the 1 KiB one (a window budget makes long texts cheaper per KiB).
    const growth = Math.max(...slopes) / slopes[0];

    // 2. The embedder's ceiling on short texts with these workers: everything queued at once, batched by the scheduler.
    const short = memoryTexts(ctx.n(512, 128), 4_000);
    const ceiling = (await ceilingOf(short, (t) => scheduler.embedDocument(undefined, t))).perSec;
    log(`long-texts: ceiling ${ceiling.toFixed(1)} short texts/s with ${settings.workers} worker(s)`);

    // 3. Short texts and queries while long texts are embedded: one 1 MiB and ten 100 KiB documents queued first.
    const longs = [prose(1024 * 1024, 11), ...Array.from({ length: 10 }, (_, i) => prose(100 * 1024, 20 + i))];
    const shortWaits = async () => {
      const waits: number[] = [];
      await Promise.all(Array.from({ length: 16 }, async (_, c) => {
        for (let k = 0; k < ctx.n(8, 3); k++) {
          const a = performance.now();
          await scheduler.embedDocument(undefined, `client ${c} note ${k}: the plumber comes on Thursday at ten`);
          await scheduler.embed([`when does the plumber come ${c} ${k}`]);
          waits.push(performance.now() - a);
        }
      }));
      return waits;
    };
    const alone = await shortWaits();
    const s = performance.now();
    const background = Promise.all(longs.map((t) => scheduler.embedDocument(undefined, t)));
    const withLong = await shortWaits();
    await background;
    const backgroundSecs = (performance.now() - s) / 1000;
    const [p99Alone, p99WithLong] = [summarize(alone).p99, summarize(withLong).p99];
    const p99Ratio = p99WithLong / p99Alone;
    log(`long-texts: short remember+query p99 ${ms(p99Alone, 0)} alone, ${ms(p99WithLong, 0)} beside 1 MiB + 10 × 100 KiB (${backgroundSecs.toFixed(1)} s)`);

    return {
      name: "long-texts",
      title: "2c. Long texts: windows, scheduling and the default embedder's ceiling (USE-lite)",
      startedAt: started.toISOString(),
      seconds: (performance.now() - t0) / 1000,
      rows: [
        ...perKib.map((x) => ({ metric: `embed ${x.kib} KiB (${x.windows} windows)`, measured: `${x.secs.toFixed(2)} s = ${x.msPerKib.toFixed(1)} ms/KiB` })),
        { metric: "largest per-KiB time ÷ the 1 KiB one (cost grows at most linearly)", target: "≤ 1.5", measured: growth.toFixed(2), pass: growth <= 1.5 },
        { metric: `embedder ceiling, short texts (${short.length}, ${settings.workers} model thread(s), scheduler batches)`, measured: `${ceiling.toFixed(1)} texts/s = ${(ceiling / settings.workers).toFixed(1)} per thread` },
        { metric: "16 clients' short remember-embedding + query embedding, p99 alone · beside one 1 MiB and ten 100 KiB texts", measured: `${ms(p99Alone, 0)} · ${ms(p99WithLong, 0)}` },
        { metric: "p99 beside the long texts ÷ p99 alone", target: "≤ 2", measured: p99Ratio.toFixed(2), pass: p99Ratio <= 2 },
        { metric: "the 1 MiB and ten 100 KiB texts, all embedded", measured: `${backgroundSecs.toFixed(1)} s` },
      ],
      notes: [
        `Defaults: EMBEDDING_WORKERS=${settings.workers} (cores: ${availableParallelism()}), EMBEDDING_MAX_WINDOWS=${settings.maxWindows}, windows of 480 characters overlapping by 64; a text of more windows is represented by ${settings.maxWindows} spread over it (docs/long-memories.md).`,
        "In the bench process against the model threads and the scheduler only: no stack. Section 2d (long-relayer) measures the same through the relayer: 16 signed clients remembering and recalling beside long remembers.",
        `One short text per remember: the default configuration's remember throughput cannot exceed the ceiling (${ceiling.toFixed(1)}/s in this run); section 2b measures the pipeline against the embedder alone.`,
      ],
      data: { perKib, growth, ceiling, workers: settings.workers, alone, withLong, p99Ratio, backgroundSecs },
    };
  });
}
