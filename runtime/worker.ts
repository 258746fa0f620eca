// A stateless relayer process joining running services: any mix of the gateway, actor-host and projection roles,
// with ports built from the operator variables (NATS_URL, DATABASE_URL, CHAIN_NETWORK, CHAIN_RPC_URL, ENCRYPTION_SERVER_CONFIGS,
// ENCRYPTION_THRESHOLD, BLOBSTORE_PUBLISHER_URL / _AGGREGATOR_URL, SERVER_CHAIN_PRIVATE_KEYS). This is how the
// relayer scales out: run as many as needed; they share nothing but NATS and Postgres.
import { blobPortFrom } from "./blob-port.ts";
import { openEventLog } from "../eventlog/connection.ts";
import { createPool } from "../db/pool.ts";
import type { RelayerConfig } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import { LocalChain } from "../adapters/chain/local/local-chain.ts";
import { SuiRpcChain } from "../adapters/chain/sui-rpc/sui-rpc-chain.ts";
import { createEnvelopeEncryption } from "../adapters/encryption/envelope.ts";
import { parseServerConfigs, thresholdFromEnv } from "../adapters/encryption/config.ts";
import { createEmbedder } from "../adapters/embeddings/select.ts";
import { startRelayer, type RelayerRoles } from "./relayer-stack.ts";

export async function startWorker(config: RelayerConfig, roles: RelayerRoles, logger: Logger, env: Record<string, string | undefined> = process.env, onSidecarLost?: () => void) {
  if (!config.databaseUrl) throw new Error("DATABASE_URL is required");
  const servers = parseServerConfigs(env);
  if (!servers?.length) throw new Error("ENCRYPTION_SERVER_CONFIGS is required");
  if (!config.chainRpcUrl) throw new Error("CHAIN_RPC_URL is required");
  // The spec's CHAIN_GRPC_URL would switch the chain paths to Sui's gRPC API, which this relayer does not speak yet.
  if (config.chainGrpcUrl) logger.warn("CHAIN_GRPC_URL is set, but the chain is reached over JSON-RPC at CHAIN_RPC_URL: the gRPC transport is not implemented");
  const log = await openEventLog({ servers: config.natsUrl, name: "memrelay-worker" });
  const db = createPool(config.databaseUrl, 16);
  // CHAIN_NETWORK=localnet: the ledger on this NATS. Any other network: a Sui node's JSON-RPC at CHAIN_RPC_URL,
  // with the memory package and registry published there (MEMORY_PACKAGE_ID, MEMORY_REGISTRY_ID).
  const chain =
    config.network === "localnet"
      ? await LocalChain.open(log, { packageId: config.packageId, network: config.network })
      : await SuiRpcChain.connect({ rpcUrl: config.chainRpcUrl, network: config.network, packageId: config.packageId, registryId: config.registryId, walCoinType: env.WAL_COIN_TYPE?.trim() || undefined });
  const encryption = createEnvelopeEncryption({
    packageId: config.packageId,
    rpcUrl: config.chainRpcUrl,
    serverConfigs: servers,
    threshold: thresholdFromEnv(servers.reduce((s, c) => s + c.weight, 0), env),
  });
  const blobs = blobPortFrom(config);
  const embedder = createEmbedder({ kind: config.embedder, dims: config.embeddingDims, apiBase: config.embeddingApiBase, apiKey: config.embeddingApiKey, model: config.embeddingModel });
  const relayer = await startRelayer({ config, log, db, ports: { chain, encryption, blobs, embedder, ...(config.sponsorPrivateKey ? { sponsor: { chain, key: config.sponsorPrivateKey } } : {}) }, logger, roles, env, onSidecarLost });
  return {
    relayer,
    chain,
    stop: async () => {
      await relayer.stop();
      await blobs.close();
      if (chain instanceof LocalChain) await chain.close();
      await log.close();
      await db.end();
    },
  };
}
