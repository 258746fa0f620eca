// Composition of the keyed lexical index: where its secret comes from and the hybrid ranking's settings.
import { join } from "node:path";
import type { RelayerConfig } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import type { EmbeddingPort } from "../adapters/ports.ts";
import { resolveLexicalSecret } from "../adapters/lexical/keys.ts";
import { DEFAULT_HYBRID, defaultDenseWeight, type HybridSettings } from "../projections/relayer/hybrid-rank.ts";

export const LEXICAL_KEY_FILE = "lexical.key";

/** MEMRELAY_LEXICAL_KEY, else `<data dir>/lexical.key` (generated on first use). */
export function lexicalSecretFor(config: RelayerConfig, logger?: Logger): Uint8Array {
  const r = resolveLexicalSecret(config.lexicalKey, join(config.dataDir, LEXICAL_KEY_FILE));
  if (r.source === "generated") {
    logger?.info("generated the lexical index key; give every gateway and actor replica the same MEMRELAY_LEXICAL_KEY", { file: join(config.dataDir, LEXICAL_KEY_FILE) });
  }
  return r.secret;
}

export function hybridSettings(config: RelayerConfig, embedder: Pick<EmbeddingPort, "name">): HybridSettings {
  return {
    ...DEFAULT_HYBRID,
    context: config.hybridContext ?? DEFAULT_HYBRID.context,
    denseWeight: config.hybridDenseWeight ?? defaultDenseWeight(embedder.name),
    keepDenseTopBelowCoverage: config.hybridKeepDenseTop ?? DEFAULT_HYBRID.keepDenseTopBelowCoverage,
  };
}
