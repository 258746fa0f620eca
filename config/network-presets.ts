// Network presets for `memrelay start --network testnet|mainnet` (and `memrelay worker` with CHAIN_NETWORK): the
// public endpoints a deployer would otherwise type. Operator variables always win. Only values confirmed in a source
// are here; what only the deployer has (MEMORY_PACKAGE_ID, MEMORY_REGISTRY_ID, the upload wallets, the sponsor key)
// never is, and neither is a mainnet Walrus publisher: a publisher pays SUI and WAL for every upload, so "on Mainnet,
// there are no public publishers without authentication" (Walrus docs, "Public Aggregators and Publishers").
import { getJsonRpcFullnodeUrl } from "@mysten/sui/jsonRpc";

type Env = Record<string, string | undefined>;

/** A key server as ENCRYPTION_SERVER_CONFIGS lists it. */
const keyServers = (...objectIds: string[]) => JSON.stringify(objectIds.map((objectId) => ({ objectId, weight: 1 })));

export const NETWORK_PRESETS: Readonly<Record<string, Readonly<Env>>> = {
  testnet: {
    // @mysten/sui's getJsonRpcFullnodeUrl("testnet"): https://fullnode.testnet.sui.io:443
    CHAIN_RPC_URL: getJsonRpcFullnodeUrl("testnet"),
    // Walrus docs, "Testnet Reference" → Endpoints (Mysten Labs reference endpoints for Testnet).
    BLOBSTORE_PUBLISHER_URL: "https://publisher.walrus-testnet.walrus.space",
    BLOBSTORE_AGGREGATOR_URL: "https://aggregator.walrus-testnet.walrus.space",
    // Seal docs, "Pricing" → Verified key servers → Testnet: Mysten Labs' two independent key servers in Open mode
    // (mysten-testnet-1, mysten-testnet-2); also MemWal's testnet default (services/server/scripts/seal-config.ts).
    ENCRYPTION_SERVER_CONFIGS: keyServers(
      "0x73d05d62c18d9374e3ea529e8e0ed6161da1a141a94d3f76ae3fe4e99356db75",
      "0xf5d14a81a982144ae441cd7d64b09027f116a468bd36e7eca494f750591623c8",
    ),
  },
  mainnet: {
    // @mysten/sui's getJsonRpcFullnodeUrl("mainnet"): https://fullnode.mainnet.sui.io:443
    CHAIN_RPC_URL: getJsonRpcFullnodeUrl("mainnet"),
    // Walrus operator list (operators.json, mainnet → aggregators), operated by Mysten Labs. No publisher: see above.
    BLOBSTORE_AGGREGATOR_URL: "https://aggregator.walrus-mainnet.walrus.space",
    // MemWal's mainnet default (services/server/scripts/seal-config.ts, DEFAULT_SEAL_SERVER_CONFIGS.mainnet; docs:
    // "the legacy independent key server pair on mainnet"), two independent servers; no Open-mode mainnet key server
    // of Mysten Labs' own could be confirmed in the Seal docs, so the preset follows the reference deployment.
    ENCRYPTION_SERVER_CONFIGS: keyServers(
      "0x145540d931f182fef76467dd8074c9839aea126852d90d18e1556fcbbd1208b6",
      "0xe0eb52eba9261b96e895bbb4deca10dcd64fbc626a1133017adcd5131353fd10",
    ),
    // Walrus docs, "Available networks" → Mainnet: WAL package 0x356a…4f59, whose coin is wal::WAL.
    WAL_COIN_TYPE: "0x356a26eb9e012a68958082340d4c4116e7f55615cf27affcff209cf0ae544f59::wal::WAL",
  },
};

/** A preset variable is also left out when the operator set one that takes its place (the legacy key-server list). */
const REPLACED_BY: Readonly<Record<string, readonly string[]>> = { ENCRYPTION_SERVER_CONFIGS: ["ENCRYPTION_KEY_SERVERS"] };

const isSet = (env: Env, name: string) => !!env[name]?.trim();

/** `env` over the network's preset: every variable the operator set (non-empty) wins. Unknown networks: `env` as is. */
export function withNetworkPreset(network: string | undefined, env: Env): Env {
  const preset = network ? NETWORK_PRESETS[network] : undefined;
  if (!preset) return env;
  const filled: Env = {};
  for (const [name, value] of Object.entries(preset)) {
    if (!isSet(env, name) && !(REPLACED_BY[name] ?? []).some((other) => isSet(env, other))) filled[name] = value;
  }
  return { ...env, ...filled };
}
