// The local stack's sponsorship provider (Enoki's protocol, adapters/sponsor/local-provider.ts), served on the ledger's
// RPC listener and paying from a gas station key of its own (funded by the ledger operator, kept in the data dir like
// the other sponsor keys). Its API key is provisioned like the stack's other local secrets: generated once into
// `<data dir>/sponsor-provider/api.key` (0600); SPONSOR_API_KEY is accepted too when this stack's relayer uses it.
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { EventLog } from "../eventlog/connection.ts";
import type { Logger } from "../config/logger.ts";
import type { LocalChain } from "../adapters/chain/local/local-chain.ts";
import { GasStation } from "../adapters/sponsor/gas-station.ts";
import { SponsorBindings } from "../adapters/sponsor/bindings.ts";
import { LocalSponsorProvider } from "../adapters/sponsor/local-provider.ts";
import { hashProviderKey, sponsorProviderRoutes } from "../gateway/sponsor-provider/routes.ts";
import { SPONSOR_LIMITS } from "../schemas/relayer/sponsor.ts";
import { provisionSponsor } from "./console-provision.ts";

/** Sponsored transactions stay findable this long after they expire, so a late execution hears `expired`, not `not_found`. */
const EXPIRED_GRACE_MS = 10 * 60_000;

export interface LocalSponsorProviderHandle {
  readonly routes: ReturnType<typeof sponsorProviderRoutes>;
  /** The provisioned API key. */
  readonly apiKey: string;
  /** The provider's gas station: who pays. */
  readonly address: string;
}

function provisionedApiKey(dataDir: string): string {
  const dir = join(dataDir, "sponsor-provider");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, "api.key");
  if (!existsSync(file)) {
    writeFileSync(file, `msp_${randomBytes(32).toString("hex")}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  return readFileSync(file, "utf8").trim();
}

export async function localSponsorProvider(opts: {
  log: EventLog;
  chain: LocalChain;
  operatorSecretKey: Uint8Array;
  dataDir: string;
  logger: Logger;
  /** SPONSOR_API_KEY, when this stack's relayer sponsors through this provider. */
  relayerApiKey?: string;
  /** How long a sponsored transaction can be executed (default: the relayer's binding lifetime). */
  ttlMs?: number;
}): Promise<LocalSponsorProviderHandle> {
  const ttlMs = opts.ttlMs ?? SPONSOR_LIMITS.bindingTtlMs;
  const key = await provisionSponsor({ chain: opts.chain, operatorSecretKey: opts.operatorSecretKey, dataDir: opts.dataDir, service: "sponsor-provider" });
  const station = new GasStation(opts.chain, key, { ttlMs });
  const bindings = await SponsorBindings.open(opts.log, { bindingTtlMs: ttlMs + EXPIRED_GRACE_MS, prefix: "sponsor_provider" });
  const apiKey = provisionedApiKey(opts.dataDir);
  const keyHashes = [apiKey, ...(opts.relayerApiKey ? [opts.relayerApiKey] : [])].map(hashProviderKey);
  const provider = new LocalSponsorProvider({ station, bindings, network: opts.chain.network });
  return { routes: sponsorProviderRoutes(provider, { keyHashes, logger: opts.logger.child({ service: "sponsor-provider" }) }), apiKey, address: station.address };
}
