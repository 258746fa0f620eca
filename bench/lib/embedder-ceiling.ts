// The embedder's ceiling in the bench process: USE-lite on `workers` model threads behind the embedding scheduler the
// relayer's processes use (createScheduler: same windows, batches and thread reservation), every text queued at once.
// What the relayer's remember and recall throughput are compared with (sections long-texts and long-relayer).
import { UseLiteEmbedder } from "../../adapters/embeddings/use-lite.ts";
import { createScheduler } from "../../adapters/embeddings/select.ts";
import type { EmbeddingScheduler } from "../../adapters/embeddings/scheduler.ts";
import type { EmbeddingSettings } from "../../config/env.ts";

export interface Ceiling {
  /** Texts embedded per second, all queued at once. */
  readonly perSec: number;
  /** CPU milliseconds of the bench process (its model threads included) per text. */
  readonly cpuMsPerText: number;
}

/** Embeds every text at once through `embedOne` and measures texts/s and the process's CPU per text. */
export async function ceilingOf(texts: readonly string[], embedOne: (text: string) => Promise<unknown>): Promise<Ceiling> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(texts.map(embedOne));
  const seconds = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0);
  return { perSec: texts.length / seconds, cpuMsPerText: (c.user + c.system) / 1000 / texts.length };
}

/** Starts USE-lite on `settings.workers` warm threads behind a scheduler, runs `fn`, and stops the threads. */
export async function withUseLiteScheduler<T>(settings: EmbeddingSettings, fn: (scheduler: EmbeddingScheduler) => Promise<T>): Promise<T> {
  const model = new UseLiteEmbedder({ workers: settings.workers });
  try {
    await model.warmUp();
    return await fn(createScheduler(model, settings));
  } finally {
    await model.close();
  }
}

/**
 * The ceiling for remember jobs (short memories as documents, as the actor host hands them) and for recall
 * queries (as the gateway hands them: one query per request, batched by the scheduler).
 */
export function documentAndQueryCeilings(settings: EmbeddingSettings, docs: readonly string[], queries: readonly string[]): Promise<{ documents: Ceiling; queries: Ceiling }> {
  return withUseLiteScheduler(settings, async (scheduler) => ({
    documents: await ceilingOf(docs, (t) => scheduler.embedDocument(undefined, t)),
    queries: await ceilingOf(queries, (q) => scheduler.embed([q])),
  }));
}
