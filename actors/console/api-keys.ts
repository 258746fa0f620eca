// Console API keys (spec/console.md, Authentication): `mrc_<64 hex>`, minted here, stored only as their BLAKE2s-256
// hash (the gateway hashes what a request presents and compares).
import { createHash, randomBytes } from "node:crypto";

export const KEY_PREFIX = "mrc_";

export function hashApiKey(key: string): string {
  return createHash("blake2s256").update(key, "utf8").digest("hex");
}

export function newApiKey(): { secret: string; hash: string; prefix: string } {
  const secret = KEY_PREFIX + randomBytes(32).toString("hex");
  return { secret, hash: hashApiKey(secret), prefix: secret.slice(0, 12) };
}
