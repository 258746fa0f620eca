// A stateless relayer process joining running services: any mix of the gateway, actor-host and projection roles,
// with ports built from the operator variables (NATS_URL, DATABASE_URL, CHAIN_NETWORK, CHAIN_GRPC_URL / CHAIN_RPC_URL, ENCRYPTION_SERVER_CONFIGS,
// ENCRYPTION_THRESHOLD, BLOBSTORE_PUBLISHER_URL / _AGGREGATOR_URL, SERVER_CHAIN_PRIVATE_KEYS). This is how the
// relayer scales out: run as many as needed; they share nothing but NATS and Postgres.
import { blobPortFrom } from "./blob-port.ts";
import { openEventLog } from "../eventlog/connection.ts";
import { createPool } from "../db/pool.ts";
import { ConfigError, type RelayerConfig } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import { LocalChain } from "../adapters/chain/local/local-chain.ts";
import { SuiRpcChain } from "../adapters/chain/sui-rpc/sui-rpc-chain.ts";
import { suiNodeClient, transportOf, type SuiNodeUrls } from "../adapters/chain/sui-rpc/node-client.ts";
import { createEnvelopeEncryption } from "../adapters/encryption/envelope.ts";
import { parseServerConfigs, thresholdFromEnv } from "../adapters/encryption/config.ts";
import { createEmbedder, embedderConfigOf } from "../adapters/embeddings/select.ts";
import { startRelayer, type RelayerPorts, type RelayerRoles } from "./relayer-stack.ts";

/**
 * `adaptPorts` wraps the ports built from the operator variables before the roles start (the bench's pipeline floor
 * stands in for the blob store and the chain record with it, bench/pipeline-floor-worker.ts).
 */
export async function startWorker(
  config: RelayerConfig,
  roles: RelayerRoles,
  logger: Logger,
  env: Record<string, string | undefined> = process.env,
  onSidecarLost?: () => void,
  adaptPorts: (ports: RelayerPorts) => RelayerPorts = (ports) => ports,
) {
  if (!config.databaseUrl) throw new Error("DATABASE_URL is required");
  const servers = parseServerConfigs(env);
  if (!servers?.length) throw new Error("ENCRYPTION_SERVER_CONFIGS is required");
  // The Sui node: its gRPC API when CHAIN_GRPC_URL is set, else its JSON-RPC at CHAIN_RPC_URL. Both the chain port
  // (on a network other than localnet) and Seal's key-server reads go through it.
  const node: SuiNodeUrls = { grpcUrl: config.chainGrpcUrl || undefined, rpcUrl: config.chainRpcUrl || undefined, network: config.network };
  if (!transportOf(node)) throw new Error("CHAIN_GRPC_URL or CHAIN_RPC_URL is required");
  // CHAIN_NETWORK=localnet: the ledger on NATS. Any other network: the Sui node, with the memory package and registry
  // published there (MEMORY_PACKAGE_ID, MEMORY_REGISTRY_ID). Connected first: a node that does not answer stops the start.
  const remote = config.network === "localnet" ? undefined : await connectNode(config, node, env);
  const log = await openEventLog({ servers: config.natsUrl, name: "memrelay-worker", replicas: config.natsReplicas });
  const db = createPool(config.databaseUrl, 16);
  const chain = remote ?? (await LocalChain.open(log, { packageId: config.packageId, network: config.network, profile: config.networkProfile }));
  const encryption = createEnvelopeEncryption({
    packageId: config.packageId,
    suiClient: suiNodeClient(node).client,
    serverConfigs: servers,
    threshold: thresholdFromEnv(servers.reduce((s, c) => s + c.weight, 0), env),
  });
  const blobs = blobPortFrom(config);
  const embedder = createEmbedder(embedderConfigOf(config));
  const ports = adaptPorts({ chain, encryption, blobs, embedder, ...(config.sponsorPrivateKey ? { sponsor: { chain, key: config.sponsorPrivateKey } } : {}) });
  const relayer = await startRelayer({ config, log, db, ports, logger, roles, env, onSidecarLost });
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

/** The chain port on the node, or a start-up error naming the variable whose node does not answer. */
async function connectNode(config: RelayerConfig, node: SuiNodeUrls, env: Record<string, string | undefined>): Promise<SuiRpcChain> {
  try {
    return await SuiRpcChain.connect({ ...node, packageId: config.packageId, registryId: config.registryId, walCoinType: env.WAL_COIN_TYPE?.trim() || undefined });
  } catch (err) {
    const [name, url, api] = node.grpcUrl ? ["CHAIN_GRPC_URL", node.grpcUrl, "gRPC API"] : ["CHAIN_RPC_URL", node.rpcUrl, "JSON-RPC"];
    throw new ConfigError(`${name}=${url}: the Sui node's ${api} does not answer (${err instanceof Error ? err.message : String(err)})`);
  }
}
