// Who pays sponsored gas, from the configuration: the provider (SPONSOR_API_KEY, SPONSOR_API_URL, SPONSOR_NETWORK) when
// a key is set, else the relayer's gas station (SPONSOR_PRIVATE_KEY); and the chain the remember jobs write through,
// whose blob registrations that sponsor pays when SPONSOR_DURABLE_REGISTER_ENABLED is on.
import { ConfigError, DEFAULT_SPONSOR_NETWORK, type RelayerConfig } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import type { ChainPort, SponsoredChainPort, SponsorshipPort } from "../adapters/ports.ts";
import type { SecretKeyInput } from "../adapters/chain/sui/keys.ts";
import { GasStation } from "../adapters/sponsor/gas-station.ts";
import { SponsorProviderClient } from "../adapters/sponsor/provider-client.ts";
import { sponsoredTransactions } from "../adapters/chain/server-transactions.ts";
import { MOVE_CALLS } from "../adapters/chain/sui/move-calls.ts";
import { ENOKI_API_URL } from "../schemas/relayer/sponsor-provider.ts";
import { SPONSOR_LIMITS } from "../schemas/relayer/sponsor.ts";

export function sponsorshipPort(config: RelayerConfig, gasStation?: { readonly chain: SponsoredChainPort; readonly key: SecretKeyInput }): SponsorshipPort | undefined {
  const s = config.sponsor;
  if (s.apiKey) return new SponsorProviderClient({ apiKey: s.apiKey, apiUrl: s.apiUrl ?? ENOKI_API_URL, network: s.network ?? DEFAULT_SPONSOR_NETWORK });
  return gasStation && new GasStation(gasStation.chain, gasStation.key, { ttlMs: SPONSOR_LIMITS.bindingTtlMs });
}

/** `chain`, with its blob registrations sponsored when SPONSOR_DURABLE_REGISTER_ENABLED is on. */
export function registrationChain(config: RelayerConfig, chain: ChainPort, sponsor: SponsorshipPort | undefined, logger: Logger): ChainPort {
  const s = config.sponsor;
  if (!s.durableRegister) return chain;
  if (!sponsor) throw new ConfigError("SPONSOR_DURABLE_REGISTER_ENABLED=true needs a sponsor: SPONSOR_API_KEY (a provider) or SPONSOR_PRIVATE_KEY (the gas station)");
  const call = MOVE_CALLS.record_blob;
  return chain.withServerTransactions((direct) =>
    sponsoredTransactions({
      provider: sponsor,
      direct,
      fallbackToDirect: s.fallbackToDirectSign,
      invalidatedRetry: s.invalidatedRetry,
      allowedMoveCallTargets: [`${chain.packageId}::${call.module}::${call.fn}`],
      logger: logger.child({ component: "sponsored-registration" }),
    }),
  );
}
