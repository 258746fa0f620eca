// Brings up everything on local adapters (DESIGN.md section 5): the ledger on the CHAIN stream, its JSON-RPC
// subset and t-of-n Seal-compatible key servers, the blob storage service, an embedder, and the relayer.
// Used by `memrelay start`, the black-box tests and the benchmarks, so all three run the same wiring.
import { suiNodeClient } from "../adapters/chain/sui-rpc/node-client.ts";
import { blobPortFrom } from "./blob-port.ts";
import { mkdirSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { createPool, type Db } from "../db/pool.ts";
import type { RelayerConfig } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import { LocalChain } from "../adapters/chain/local/local-chain.ts";
import { createAccount, addDelegateKey, generateKeypair, keypairFromSecret, mint } from "../adapters/chain/local/accounts.ts";
import { startLocalEncryptionStack, type LocalEncryptionStack } from "../adapters/encryption/local-keyservers/local-stack.ts";
import { startLocalWalrus, type LocalWalrus } from "../adapters/walrus-nodes/local-walrus.ts";
import { ownerOrDelegate } from "../adapters/encryption/local-keyservers/policy.ts";
import { createEnvelopeEncryption } from "../adapters/encryption/envelope.ts";
import { createEmbedder, embedderConfigOf } from "../adapters/embeddings/select.ts";
import { startBlobstore } from "./blobstore.ts";
import { startRelayer, type RelayerRoles, type RelayerStack } from "./relayer-stack.ts";
import type { BlobPort, EmbeddingPort, EncryptionPort } from "../adapters/ports.ts";
import { lexicalSecretFor } from "./lexical.ts";
import { startConsole, type ConsoleHandle } from "./console.ts";
import { provisionSponsor, provisionStorage } from "./console-provision.ts";
import { localSponsorProvider } from "./local-sponsor-provider.ts";

export interface DevIdentity {
  readonly ownerSecretKey: Uint8Array;
  readonly owner: string;
  readonly accountId: string;
  readonly delegateSecretKey: Uint8Array;
  readonly delegatePublicKeyHex: string;
  readonly delegateAddress: string;
}

export interface LocalStack {
  readonly config: RelayerConfig;
  readonly log: EventLog;
  readonly db: Db;
  readonly chain: LocalChain;
  readonly encryptionStack: LocalEncryptionStack;
  /** The Walrus storage nodes and the packageConfig a WalrusClient is given (with the ledger's JSON-RPC). */
  readonly walrus: LocalWalrus;
  readonly relayer: RelayerStack;
  readonly relayerUrl: string;
  readonly blobstoreUrl: string;
  /** The developer console API (CONSOLE_PORT). */
  readonly console: ConsoleHandle;
  readonly consoleUrl: string;
  readonly operatorSecretKey: Uint8Array;
  readonly embedder: EmbeddingPort;
  /** The relayer's envelope encryption and blob store ports (what its actors use). */
  readonly encryption: EncryptionPort;
  readonly blobs: BlobPort;
  /** The sponsorship provider on the ledger's RPC listener (Enoki's protocol): base URL, provisioned API key, paying address. */
  readonly sponsorProvider: { readonly url: string; readonly apiKey: string; readonly address: string };
  /** Operator variables a separate `memrelay worker` process needs to join this stack. */
  readonly workerEnv: Record<string, string>;
  /** Creates an account with one delegate key (what a wallet app does for a new user). */
  createIdentity(label?: string): Promise<DevIdentity>;
  stop(): Promise<void>;
}

const GAS_GRANT = 1_000_000_000_000n;

export async function startLocalStack(opts: {
  config: RelayerConfig;
  logger: Logger;
  databaseUrl: string;
  operatorSecretKey?: Uint8Array;
  walletCount?: number;
  walletFunding?: bigint;
  actorConcurrency?: number;
  attemptDelayMs?: number;
  roles?: RelayerRoles;
  onSidecarLost?: () => void;
}): Promise<LocalStack> {
  const { logger } = opts;
  mkdirSync(opts.config.dataDir, { recursive: true });
  const log = await openEventLog({ servers: opts.config.natsUrl, name: "memrelay", replicas: opts.config.natsReplicas });
  const db = createPool(opts.databaseUrl, 16);
  const stops: (() => Promise<void> | void)[] = [() => log.close(), () => db.end()];
  try {
    const operatorSecretKey = opts.operatorSecretKey ?? generateKeypair().secretKey;
    const chain = await LocalChain.open(log, { packageId: opts.config.packageId, network: opts.config.network, operatorKey: operatorSecretKey, profile: opts.config.networkProfile });
    stops.unshift(() => chain.close?.());

    // SPONSOR_API_KEY without SPONSOR_API_URL: this stack's relayer sponsors through its own provider.
    const ownProvider = !!opts.config.sponsor.apiKey && !opts.config.sponsor.apiUrl;
    const sponsorProvider = await localSponsorProvider({ log, chain, operatorSecretKey, dataDir: opts.config.dataDir, logger, relayerApiKey: ownProvider ? opts.config.sponsor.apiKey : undefined });
    const encryptionStack = await startLocalEncryptionStack({
      dir: join(opts.config.dataDir, "encryption"),
      packageId: opts.config.packageId,
      host: opts.config.host,
      ledger: chain,
      accounts: chain,
      transactions: chain,
      isAuthorized: ownerOrDelegate(chain),
      rpcRoutes: sponsorProvider.routes,
    });
    stops.unshift(() => encryptionStack.close());
    // Walrus storage nodes beside the blob store: what an unmodified WalrusClient writes to (the relayer keeps the
    // publisher/aggregator API of the blob store).
    const walrus = await startLocalWalrus({
      ledger: chain,
      dir: join(opts.config.dataDir, "walrus"),
      host: opts.config.host,
      count: opts.config.walrusLocalNodes,
      nShards: opts.config.walrusLocalShards,
      latency: { write: opts.config.networkProfile.storageNodeWrite, read: opts.config.networkProfile.storageNodeRead },
    });
    stops.unshift(() => walrus.close());
    const threshold = opts.config.encryptionThreshold ?? Math.min(2, encryptionStack.serverConfigs.length);
    // Seal's key-server reads go to this stack's ledger listener, over gRPC when CHAIN_GRPC_URL is set (as /config reports).
    const node = opts.config.chainGrpcUrl ? { grpcUrl: encryptionStack.grpcUrl } : { rpcUrl: encryptionStack.rpcUrl };
    const encryption = createEnvelopeEncryption({ packageId: encryptionStack.packageId, suiClient: suiNodeClient({ ...node, network: chain.network }).client, serverConfigs: encryptionStack.serverConfigs, threshold });

    const blobstore = await startBlobstore({ log, db, host: opts.config.host, port: opts.config.blobstorePort, dataDir: join(opts.config.dataDir, "blobstore"), backend: opts.config.blobstoreBackend, cacheBytes: opts.config.blobstoreCacheBytes, networkProfile: opts.config.networkProfile, logger: logger.child({ service: "blobstore" }) });
    stops.unshift(() => blobstore.stop());
    const blobstoreUrl = blobstore.url;
    const publisher = process.env.BLOBSTORE_PUBLISHER_URL ?? blobstoreUrl;
    const aggregator = process.env.BLOBSTORE_AGGREGATOR_URL ?? blobstoreUrl;
    const blobs = blobPortFrom(opts.config, { publisherUrl: publisher, aggregatorUrl: aggregator });
    stops.unshift(() => blobs.close());

    // The upload wallet pool: configured keys, or fresh funded dev wallets.
    let walletKeys = [...opts.config.serverChainPrivateKeys];
    if (!walletKeys.length) {
      for (let i = 0; i < (opts.walletCount ?? 5); i++) {
        const { secretKey } = generateKeypair();
        walletKeys.push(Buffer.from(secretKey).toString("hex"));
      }
    }
    if (opts.walletFunding !== 0n) {
      // Gas (SUI) and storage (WAL) tokens, so the balance monitor sees funded wallets.
      for (const k of walletKeys) {
        for (const token of ["SUI", "WAL"]) await mint(chain, { operatorKey: operatorSecretKey, to: keypairFromSecret(k).address, amount: opts.walletFunding ?? GAS_GRANT, token });
      }
    }
    const embedder = createEmbedder(embedderConfigOf(opts.config));
    // The MCP sidecar runs beside the relayer; both ends share SIDECAR_AUTH_TOKEN, generated here when not given.
    const sidecar = { ...opts.config.sidecar, authToken: opts.config.sidecar.authToken ?? randomBytes(24).toString("hex") };
    // The relayer's gas station (/sponsor): SPONSOR_PRIVATE_KEY, else a funded key kept in the data dir.
    const relayerSponsor = await provisionSponsor({ chain, operatorSecretKey, dataDir: opts.config.dataDir, service: "relayer", secret: opts.config.sponsorPrivateKey });
    const config: RelayerConfig = {
      ...opts.config,
      serverChainPrivateKeys: walletKeys,
      chainRpcUrl: opts.config.chainRpcUrl || encryptionStack.rpcUrl,
      ...(opts.config.chainGrpcUrl ? { chainGrpcUrl: encryptionStack.grpcUrl } : {}),
      sidecar,
      sponsorWalletAddress: opts.config.sponsorWalletAddress ?? keypairFromSecret(relayerSponsor).address,
      sponsor: { ...opts.config.sponsor, ...(ownProvider ? { apiUrl: encryptionStack.rpcUrl } : {}), network: opts.config.sponsor.network ?? chain.network },
    };
    // The keyed lexical index's secret: MEMRELAY_LEXICAL_KEY, else generated once in the data dir (lexical.key).
    const lexicalSecret = lexicalSecretFor(config, logger);
    const relayer = await startRelayer({
      config,
      log,
      db,
      ports: { chain, encryption, blobs, embedder, sponsor: { chain, key: relayerSponsor } },
      logger,
      actorConcurrency: opts.actorConcurrency,
      attemptDelayMs: opts.attemptDelayMs,
      roles: { mcp: true, ...opts.roles },
      lexicalSecret,
      onSidecarLost: opts.onSidecarLost,
    });
    stops.unshift(() => relayer.stop());

    // The developer console (console/): its files live in the blob store under an account it provisions, and its
    // sponsor pays the gas of bucket-policy transactions; both are kept in the data dir across restarts.
    const consoleStorage = await provisionStorage({ log, db, blobstoreUrl, runners: blobstore.runners, dataDir: opts.config.dataDir });
    const consoleSponsor = await provisionSponsor({ chain, operatorSecretKey, dataDir: opts.config.dataDir });
    // Its limits: CONSOLE_MAX_UPLOAD_BYTES, CONSOLE_UPLOADS_PER_MINUTE, CONSOLE_UPLOAD_STATUS_RETENTION_SECS, CONSOLE_SPONSOR_TTL_SECS.
    const consoleHandle = await startConsole({
      log,
      db,
      chain,
      storage: consoleStorage,
      sponsorSecretKey: consoleSponsor,
      host: opts.config.host,
      port: opts.config.consolePort,
      logger,
      corsOrigins: opts.config.corsAllowedOrigins,
      limits: opts.config.consoleLimits,
    });
    stops.unshift(() => consoleHandle.stop());

    const createIdentity = async (label = "memrelay-dev"): Promise<DevIdentity> => {
      const ownerKp = generateKeypair();
      const delegate = generateKeypair();
      await mint(chain, { operatorKey: operatorSecretKey, to: ownerKp.keypair.address, amount: GAS_GRANT });
      const account = await createAccount(chain, { ownerKey: ownerKp.secretKey });
      await addDelegateKey(chain, { ownerKey: ownerKp.secretKey, publicKey: delegate.keypair.publicKeyHex, label, accountId: account.id });
      return {
        ownerSecretKey: ownerKp.secretKey,
        owner: ownerKp.keypair.address,
        accountId: account.id,
        delegateSecretKey: delegate.secretKey,
        delegatePublicKeyHex: delegate.keypair.publicKeyHex,
        delegateAddress: delegate.keypair.address,
      };
    };
    return {
      config,
      log,
      db,
      chain,
      encryptionStack,
      walrus,
      relayer,
      relayerUrl: `http://${config.host}:${relayer.port}`,
      blobstoreUrl,
      console: consoleHandle,
      consoleUrl: consoleHandle.url,
      operatorSecretKey,
      embedder,
      encryption,
      blobs,
      sponsorProvider: { url: encryptionStack.rpcUrl, apiKey: sponsorProvider.apiKey, address: sponsorProvider.address },
      workerEnv: {
        NATS_URL: config.natsUrl,
        DATABASE_URL: opts.databaseUrl,
        CHAIN_NETWORK: chain.network,
        CHAIN_RPC_URL: encryptionStack.rpcUrl,
        MEMORY_REGISTRY_ID: chain.registryId,
        ENCRYPTION_SERVER_CONFIGS: JSON.stringify(encryptionStack.serverConfigs),
        ENCRYPTION_THRESHOLD: String(threshold),
        MEMORY_PACKAGE_ID: encryptionStack.packageId,
        BLOBSTORE_PUBLISHER_URL: publisher,
        BLOBSTORE_AGGREGATOR_URL: aggregator,
        SERVER_CHAIN_PRIVATE_KEYS: walletKeys.join(","),
        SIDECAR_AUTH_TOKEN: sidecar.authToken,
        // A worker given SPONSOR_API_KEY sponsors through this stack's provider, as its relayer does.
        ...(ownProvider ? { SPONSOR_API_URL: encryptionStack.rpcUrl, SPONSOR_NETWORK: chain.network } : {}),
        MEMRELAY_EMBEDDER: config.embedder,
        ...(config.embeddingDims ? { MEMRELAY_EMBEDDING_DIMS: String(config.embeddingDims) } : {}),
        MEMRELAY_LEXICAL_KEY: Buffer.from(lexicalSecret).toString("hex"),
        MEMRELAY_RECALL_RANKING: config.recallRanking,
        ...(config.hybridDenseWeight !== undefined ? { MEMRELAY_HYBRID_DENSE_WEIGHT: String(config.hybridDenseWeight) } : {}),
        ...(config.hybridKeepDenseTop !== undefined ? { MEMRELAY_HYBRID_KEEP_DENSE_TOP: String(config.hybridKeepDenseTop) } : {}),
        ...(config.hybridContext !== undefined ? { MEMRELAY_HYBRID_CONTEXT: config.hybridContext.join(",") || "none" } : {}),
      },
      createIdentity,
      stop: async () => {
        for (const s of stops) await Promise.resolve(s()).catch(() => undefined);
      },
    };
  } catch (err) {
    for (const s of stops) await Promise.resolve(s()).catch(() => undefined);
    throw err;
  }
}
