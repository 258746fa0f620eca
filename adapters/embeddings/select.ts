// Chooses the embedder from operator configuration (config/env.ts: MEMRELAY_EMBEDDER, EMBEDDING_*).
import type { EmbeddingPort } from "../ports.ts";
import { HashingEmbedder } from "./hashing.ts";
import { OpenAIEmbedder } from "./openai.ts";
import { UseLiteEmbedder } from "./use-lite.ts";

export interface EmbedderConfig {
  readonly kind: "hashing" | "use-lite" | "openai";
  readonly dims?: number;
  readonly apiBase?: string;
  readonly apiKey?: string;
  readonly model?: string;
}

export function createEmbedder(config: EmbedderConfig): EmbeddingPort {
  switch (config.kind) {
    case "hashing":
      return new HashingEmbedder({ dims: config.dims });
    case "use-lite":
      if (config.dims !== undefined && config.dims !== 512) throw new RangeError(`use-lite embeds in 512 dims, not ${config.dims}`);
      return new UseLiteEmbedder();
    case "openai":
      return new OpenAIEmbedder({ apiBase: config.apiBase, apiKey: config.apiKey, model: config.model, dims: config.dims });
    default:
      throw new RangeError(`unknown embedder kind: ${String((config as { kind: unknown }).kind)}`);
  }
}
