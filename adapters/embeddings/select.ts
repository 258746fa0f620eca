// Chooses the embedder from operator configuration (config/env.ts: MEMRELAY_EMBEDDER, EMBEDDING_*), and the windows
// and schedule its long texts get (adapters/embeddings/windows.ts, scheduler.ts).
import type { EmbeddingPort } from "../ports.ts";
import type { EmbeddingSettings, RelayerConfig } from "../../config/env.ts";
import { HashingEmbedder } from "./hashing.ts";
import { OpenAIEmbedder } from "./openai.ts";
import { UseLiteEmbedder } from "./use-lite.ts";
import { EmbeddingScheduler } from "./scheduler.ts";
import type { WindowSpec } from "./windows.ts";

export interface EmbedderConfig {
  readonly kind: "hashing" | "use-lite" | "openai";
  readonly dims?: number;
  readonly apiBase?: string;
  readonly apiKey?: string;
  readonly model?: string;
  /** Model threads of USE-lite. */
  readonly workers?: number;
}

export function embedderConfigOf(config: RelayerConfig): EmbedderConfig {
  return { kind: config.embedder, dims: config.embeddingDims, apiBase: config.embeddingApiBase, apiKey: config.embeddingApiKey, model: config.embeddingModel, workers: config.embedding.workers };
}

export function createEmbedder(config: EmbedderConfig): EmbeddingPort {
  switch (config.kind) {
    case "hashing":
      return new HashingEmbedder({ dims: config.dims });
    case "use-lite":
      if (config.dims !== undefined && config.dims !== 512) throw new RangeError(`use-lite embeds in 512 dims, not ${config.dims}`);
      return new UseLiteEmbedder({ workers: config.workers });
    case "openai":
      return new OpenAIEmbedder({ apiBase: config.apiBase, apiKey: config.apiKey, model: config.model, dims: config.dims });
    default:
      throw new RangeError(`unknown embedder kind: ${String((config as { kind: unknown }).kind)}`);
  }
}

/**
 * Windows by embedder:
 * - USE-lite reads the first 128 tokens of an input and ignores the rest (≈ 115 English words, ≈ 600 characters):
 *   480-character windows stay inside that for ordinary prose.
 * - OpenAI-compatible models refuse inputs over their token limit (8,191 for text-embedding-3-*); 4,000 characters
 *   stay below it even at two tokens per character (rare scripts).
 * - The hashing embedder reads every token at linear cost; large windows only keep one call short on the event loop.
 */
export function windowSpecFor(embedder: EmbeddingPort, maxWindows: number): WindowSpec {
  if (embedder.name.startsWith("use-lite")) return { maxChars: 480, overlapChars: 64, maxWindows };
  if (embedder.name.startsWith("openai:")) return { maxChars: 4_000, overlapChars: 200, maxWindows };
  return { maxChars: 16_384, overlapChars: 256, maxWindows };
}

/** The process's scheduler in front of `embedder` (one per process: every role embeds through it). */
export function createScheduler(embedder: EmbeddingPort, settings: EmbeddingSettings): EmbeddingScheduler {
  const window = windowSpecFor(embedder, settings.maxWindows);
  const local = embedder instanceof UseLiteEmbedder;
  return new EmbeddingScheduler(embedder, {
    window,
    deadline: { baseMs: settings.deadlineBaseMs, perWindowMs: settings.deadlineMsPerWindow },
    // USE-lite: one batch per model thread; the hashing embedder runs on the event loop (one at a time); a provider: requests in flight.
    concurrency: local ? embedder.workers : embedder instanceof HashingEmbedder ? 1 : 4,
    maxBatch: 64,
    // Four full windows: a query waits at most that long behind document work.
    maxBatchChars: 4 * window.maxChars,
  }, local ? embedder : undefined);
}
