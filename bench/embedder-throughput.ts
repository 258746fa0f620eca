// Embedder throughput on real conversational text (LoCoMo turns, "Speaker: text").
//   node --import tsx bench/embedder-throughput.ts [--use-lite]
import { pathToFileURL } from "node:url";
import type { EmbeddingPort } from "../adapters/ports.ts";
import { HashingEmbedder } from "../adapters/embeddings/hashing.ts";
import { UseLiteEmbedder } from "../adapters/embeddings/use-lite.ts";
import { loadLocomo } from "./locomo-offline.ts";

export interface ThroughputResult {
  readonly textsPerSec: number;
  readonly p50BatchMs: number;
  readonly p99BatchMs: number;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** Embeds `texts` in batches of `batchSize`, after one untimed warm-up batch (model load, JIT). */
export async function measureEmbedderThroughput(embedder: EmbeddingPort, texts: readonly string[], batchSize: number): Promise<ThroughputResult> {
  await embedder.embed(texts.slice(0, batchSize));
  const batchMs: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < texts.length; i += batchSize) {
    const b0 = performance.now();
    await embedder.embed(texts.slice(i, i + batchSize));
    batchMs.push(performance.now() - b0);
  }
  const totalSec = (performance.now() - t0) / 1000;
  batchMs.sort((a, b) => a - b);
  return { textsPerSec: texts.length / totalSec, p50BatchMs: percentile(batchMs, 50), p99BatchMs: percentile(batchMs, 99) };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // --use-lite: USE-lite only, batch sizes 1/8/32 as the embedding scheduler hands them (the model thread splits them in
  // model batches of 4), on 320 turns (CPU per text: this process and its model thread, over the timed texts).
  const useOnly = process.argv.includes("--use-lite");
  const texts = loadLocomo(undefined, false).flatMap((c) => c.turns.map((t) => t.text)).slice(0, useOnly ? 320 : 2000);
  if (useOnly) {
    const e = new UseLiteEmbedder();
    await e.warmUp();
    for (const size of [1, 8, 32]) {
      const c0 = process.cpuUsage();
      const r = await measureEmbedderThroughput(e, texts, size);
      const c = process.cpuUsage(c0);
      const cpuMs = (c.user + c.system) / 1000 / (texts.length + size);
      console.log(`use-lite batch ${String(size).padStart(2)}: ${r.textsPerSec.toFixed(1)} texts/s, CPU ${cpuMs.toFixed(1)} ms per text, p50 ${r.p50BatchMs.toFixed(1)} ms per batch`);
    }
    process.exit(0);
  }
  const runs: [EmbeddingPort, number[]][] = [
    [new HashingEmbedder(), [1, 64]],
    [new HashingEmbedder({ dims: 2000, bigrams: true }), [64]],
    [new UseLiteEmbedder(), [1, 16]],
  ];
  console.log(`${texts.length} LoCoMo turns, mean ${Math.round(texts.reduce((n, t) => n + t.length, 0) / texts.length)} chars`);
  for (const [embedder, sizes] of runs)
    for (const size of sizes) {
      const r = await measureEmbedderThroughput(embedder, texts, size);
      console.log(
        `${embedder.name.padEnd(24)} batch ${String(size).padStart(3)}: ${r.textsPerSec.toFixed(0).padStart(7)} texts/s  ` +
          `p50 ${r.p50BatchMs.toFixed(2)} ms  p99 ${r.p99BatchMs.toFixed(2)} ms per batch`,
      );
    }
}
