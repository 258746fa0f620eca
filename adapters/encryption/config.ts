// Operator configuration of the encryption port (spec/relayer.md): ENCRYPTION_SERVER_CONFIGS (JSON array of
// {objectId, weight, aggregatorUrl?, apiKeyName?, apiKey?}), the legacy ENCRYPTION_KEY_SERVERS list (comma-separated
// object ids, used only when the configs variable is unset) and ENCRYPTION_THRESHOLD (default min(2, total weight)).

import type { KeyServerConfig } from "@mysten/seal";
import { isValidSuiObjectId, normalizeSuiAddress } from "@mysten/sui/utils";

export function parseServerConfigs(env: Record<string, string | undefined> = process.env): KeyServerConfig[] | undefined {
  const raw = env.ENCRYPTION_SERVER_CONFIGS?.trim();
  if (raw) {
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch {
      throw new Error("ENCRYPTION_SERVER_CONFIGS must be a JSON array");
    }
    if (!Array.isArray(v) || v.length === 0) throw new Error("ENCRYPTION_SERVER_CONFIGS must be a non-empty JSON array");
    return v.map((e, i) => {
      const o = e as Record<string, unknown>;
      if (!o || typeof o.objectId !== "string" || !isValidSuiObjectId(normalizeSuiAddress(o.objectId))) {
        throw new Error(`ENCRYPTION_SERVER_CONFIGS[${i}].objectId must be an object id`);
      }
      const weight = o.weight === undefined ? 1 : o.weight;
      if (typeof weight !== "number" || !Number.isInteger(weight) || weight < 1 || weight > 255) {
        throw new Error(`ENCRYPTION_SERVER_CONFIGS[${i}].weight must be an integer 1..255`);
      }
      const cfg: KeyServerConfig = { objectId: normalizeSuiAddress(o.objectId), weight };
      if (typeof o.aggregatorUrl === "string") cfg.aggregatorUrl = o.aggregatorUrl;
      if (typeof o.apiKeyName === "string") cfg.apiKeyName = o.apiKeyName;
      if (typeof o.apiKey === "string") cfg.apiKey = o.apiKey;
      return cfg;
    });
  }
  const legacy = env.ENCRYPTION_KEY_SERVERS?.trim();
  if (legacy) {
    return legacy
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map((id, i) => {
        if (!isValidSuiObjectId(normalizeSuiAddress(id))) throw new Error(`ENCRYPTION_KEY_SERVERS[${i}] must be an object id`);
        return { objectId: normalizeSuiAddress(id), weight: 1 };
      });
  }
  return undefined;
}

/** ENCRYPTION_THRESHOLD, defaulting to min(2, total weight); must lie in 1..total weight. */
export function thresholdFromEnv(totalWeight: number, env: Record<string, string | undefined> = process.env): number {
  const raw = env.ENCRYPTION_THRESHOLD?.trim();
  const t = raw ? Number(raw) : Math.min(2, totalWeight);
  if (!Number.isInteger(t) || t < 1 || t > totalWeight) {
    throw new Error(`ENCRYPTION_THRESHOLD must be an integer in 1..${totalWeight} (total key-server weight)`);
  }
  return t;
}
