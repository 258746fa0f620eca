// `memrelay start`: everything on one machine from one command. Starts (or reuses) nats-server and Postgres, then
// the local chain, key servers, blob store and relayer; creates a dev account with a delegate key and writes the
// credential file when absent; prints where everything listens. Ctrl-C stops everything cleanly.
import { chmodSync, existsSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { intVar, loadConfig } from "../config/env.ts";
import { createLogger, type Logger } from "../config/logger.ts";
import { startLocalStack, type LocalStack } from "../runtime/local-stack.ts";
import { generateKeypair, keypairFromSecret } from "../adapters/chain/local/accounts.ts";
import { startDashboard, type Dashboard } from "../dashboard/server.ts";
import { localDevelopmentWallet } from "../dashboard/development-wallet.ts";
import { startNats, startPostgres, type Service } from "./services.ts";
import { credentialsPath, readCredentials, writeCredentials } from "./credentials.ts";
import { removeStackFile, stackFilePath, writeStackFile } from "./stack-file.ts";
import { readMemoryIndexMeta } from "../projections/relayer/memory-index.ts";
import { reembedDevMemories } from "./reembed.ts";
import { missingNetworkVariables, startOnNetwork } from "./start-network.ts";
import { ROLES_STOP_MS, stopWithin, untilStopped } from "./until-stopped.ts";
import { withNetworkPreset } from "../config/network-presets.ts";

export const START_HELP = `memrelay start [--network <name> | --cluster]
  Starts nats-server (with nats.conf; NATS_URL to use a running one), Postgres (DATABASE_URL; else the native
  server on 127.0.0.1:5432 when it has pgvector; else embedded PGlite with pgvector), the local chain, the
  key servers, the blob store (BLOBSTORE_PORT, 8200), four Walrus storage nodes (ephemeral ports), the developer console (CONSOLE_PORT, 8100) and the relayer
  (PORT, 8000) with its MCP sidecar (SIDECAR_URL, 9000), and the dashboard (DASHBOARD_PORT, 5173). Creates a dev account and
  writes ~/.memory/credentials.json (0600) when absent. Data lives in MEMRELAY_DATA_DIR (~/.memrelay); each data
  directory gets its own database on the native Postgres. While running, <data dir>/stack.json (0600) tells the
  operator commands (replay, lag, restore, blobstore, console, alerts) in another terminal where NATS and Postgres
  are, and the NATS_URL=/DATABASE_URL= lines it prints can be copied into a shell.
  If any step fails, everything already started is stopped and the command exits non-zero. A listener whose address
  is taken names its variable (set it to 0 for a free port). Ctrl-C or SIGTERM stops everything within 10 s; commands
  in flight are redelivered on the next start.
  --network <name> (or CHAIN_NETWORK other than localnet): the relayer, its workers, MCP sidecar and dashboard
  (browser wallets only) against a real network, by configuration only: CHAIN_RPC_URL, MEMORY_PACKAGE_ID,
  MEMORY_REGISTRY_ID, ENCRYPTION_SERVER_CONFIGS, BLOBSTORE_PUBLISHER_URL, BLOBSTORE_AGGREGATOR_URL,
  SERVER_CHAIN_PRIVATE_KEY(S) and a sponsor (SPONSOR_PRIVATE_KEY, or SPONSOR_API_KEY for a provider) are required;
  testnet and mainnet fill in their public endpoints and key servers (config/network-presets.ts), explicit variables
  win. No local chain, key servers, blob store or console.
  --cluster: three JetStream nodes (R3), two gateways, two actor hosts, projections twice (memrelay start --cluster --help).`;

export function secretFile(path: string, make: () => Uint8Array): Uint8Array {
  if (!existsSync(path)) writeFileSync(path, Buffer.from(make()).toString("hex") + "\n", { mode: 0o600 });
  chmodSync(path, 0o600);
  return Uint8Array.from(Buffer.from(readFileSync(path, "utf8").trim(), "hex"));
}

export async function startCommand(args: string[], env = process.env): Promise<number> {
  if (args.includes("--cluster")) {
    // The cluster runs the local network's services; a real network's relayer scales with deploy/ instead.
    if (args.includes("--network") || (env.CHAIN_NETWORK && env.CHAIN_NETWORK !== "localnet")) {
      console.error("memrelay start: --cluster runs on the local network (no --network, CHAIN_NETWORK unset or localnet); for a real network run the roles of deploy/README.md");
      return 2;
    }
    return (await import("./cluster.ts")).clusterCommand(args.filter((a) => a !== "--cluster"), env);
  }
  if (args.includes("--help") || args.includes("-h")) {
    console.log(START_HELP);
    return 0;
  }
  const i = args.indexOf("--network");
  const network = i >= 0 ? args[i + 1] : env.CHAIN_NETWORK && env.CHAIN_NETWORK !== "localnet" ? env.CHAIN_NETWORK : undefined;
  if (i >= 0 && (!network || network.startsWith("-"))) {
    console.error("memrelay start --network needs a network name (e.g. testnet)");
    return 2;
  }
  const remote = network && network !== "localnet" ? network : undefined;
  if (remote) {
    env = withNetworkPreset(remote, env);
    const missing = missingNetworkVariables(env);
    if (missing.length) {
      console.error(`memrelay start --network ${remote} needs these variables (what a deployer publishes and funds: see move/README.md): ${missing.join(", ")}`);
      return 2;
    }
  }
  const base = loadConfig(env);
  mkdirSync(base.dataDir, { recursive: true, mode: 0o700 });
  const logger = createLogger({ format: base.logFormat });
  // nats-server and Postgres are stopped last, after the roles that use them (each bounded on its own).
  const system: Service[] = [];
  const roles: (() => Promise<void>)[] = [];
  const stopRoles = async () => {
    for (const stop of [...roles].reverse()) await stop().catch(() => undefined);
  };
  const stopSystem = async () => {
    for (const s of [...system].reverse()) await s.stop().catch(() => undefined);
  };
  const stopAll = async () => {
    await stopWithin(ROLES_STOP_MS, stopRoles);
    await stopSystem();
  };
  const startedAt = Date.now();
  // From here on a signal stops what has started, once it has (cli/until-stopped.ts).
  const run = untilStopped();
  try {
    const nats = env.NATS_URL ? { url: env.NATS_URL, description: `NATS from NATS_URL (${env.NATS_URL})`, stop: async () => undefined } : await startNats(base.dataDir);
    system.push(nats);
    const postgres = await startPostgres(base.dataDir);
    system.push(postgres);
    if (remote) return await runOnNetwork(remote, env, { nats, postgres }, logger, run, roles, stopRoles, stopSystem);
    // OAuth consents are answered on the dashboard started below (unless the operator points elsewhere).
    const dashboardPort = intVar(env, "DASHBOARD_PORT", 5173, 0, 65535);
    const consent = env.MCP_OAUTH_CONSENT_URL ?? (dashboardPort ? `http://${base.host}:${dashboardPort}/connect/claude` : undefined);
    const config = loadConfig({ ...env, NATS_URL: nats.url, DATABASE_URL: postgres.url, ...(consent ? { MCP_OAUTH_CONSENT_URL: consent } : {}) });
    const operatorSecretKey = secretFile(join(base.dataDir, "operator.key"), () => generateKeypair().secretKey);
    const stack = await startLocalStack({ config, logger, databaseUrl: postgres.url, operatorSecretKey, onSidecarLost: run.onLost });
    roles.push(() => stack.stop());
    roles.push(announceStack(stack, base.dataDir, nats.url, postgres.url, [stack.relayerUrl]));

    const { creds, credPath } = await ensureDevCredentials(stack, env, base.dataDir);
    // The dashboard manages the development account with its owner key (the local network's development wallet).
    const dashboard = await startDevDashboard(stack, base.dataDir, dashboardPort, logger);
    if (dashboard) roles.push(() => dashboard.close());
    const lines = [
      "memrelay is running",
      `  relayer      ${stack.relayerUrl}`,
      `  blob store   ${stack.blobstoreUrl}  (Walrus API: PUT ${stack.blobstoreUrl}/v1/blobs)`,
      `  walrus nodes ${stack.walrus.committee.nodes.length} storage nodes (WalrusClient: packageConfig {systemObjectId: ${stack.walrus.packageConfig.systemObjectId}, stakingPoolId: ${stack.walrus.packageConfig.stakingPoolId}}, storageNodeUrlScheme "http", the chain RPC below)`,
      `  console      ${stack.consoleUrl}/api/v1  (keys: memrelay console signup / key mint)`,
      ...(dashboard ? [`  dashboard    ${dashboard.url}  (agents sign in here: memrelay-mcp --local login; keys: ${dashboard.url}/keys)`] : []),
      `  agent tools  ${stack.relayerUrl}/api/mcp (Streamable HTTP), ${stack.relayerUrl}/api/mcp/sse (SSE); stdio: memrelay-mcp --local`,
      `  chain RPC    ${stack.encryptionStack.rpcUrl}  (Sui JSON-RPC; its gRPC API as gRPC-web: CHAIN_GRPC_URL=${stack.encryptionStack.grpcUrl})`,
      `  key servers  ${stack.encryptionStack.serverConfigs.length} (threshold ${config.encryptionThreshold ?? Math.min(2, stack.encryptionStack.serverConfigs.length)})`,
      `  NATS         ${nats.description}`,
      `  Postgres     ${postgres.description}`,
      `  embedder     ${stack.embedder.name} (${stack.embedder.dims} dims)${embedderCapacityNote(config)}`,
      `  credentials  ${credPath} (account ${creds.accountId})`,
      "",
      `Operator commands in another terminal find this stack through ${stackFilePath(base.dataDir)}; or export:`,
      `  NATS_URL=${nats.url}`,
      `  DATABASE_URL=${postgres.url}`,
      "",
      "try:  npx memrelay remember \"I prefer green tea\" --wait  &&  npx memrelay recall \"what do I drink?\"",
      "Ctrl-C stops everything.",
    ];
    console.log(lines.join("\n"));
    // The memory index was rebuilt for a new embedder during this start: bring the dev account's memories back.
    const meta = await readMemoryIndexMeta(stack.db);
    if (meta?.rebuilt_at_ms && meta.rebuilt_at_ms >= startedAt - 1_000) {
      console.log(await reembedDevMemories(stack, creds, meta.previous_embedder));
    }
    return await run.wait(stopRoles, stopSystem);
  } catch (err) {
    console.error(`memrelay start failed: ${(err as Error).message}`);
    await stopAll();
    return 1;
  }
}

/**
 * The dev credential file (~/.memory/credentials.json) for this stack's chain: kept when it names an identity the
 * chain knows, else a new account with a delegate key (its owner key goes to the data directory, for the dashboard).
 */
/**
 * Writes the stack file operator commands find a running local stack by (every gateway listed; the first is the
 * relayer's), and returns its removal, for the roles to run at stop.
 */
export function announceStack(stack: LocalStack, dataDir: string, natsUrl: string, databaseUrl: string, gateways: readonly string[]): () => Promise<void> {
  writeStackFile({
    pid: process.pid,
    started_at: new Date().toISOString(),
    data_dir: dataDir,
    nats_url: natsUrl,
    database_url: databaseUrl,
    relayer_url: gateways[0] ?? stack.relayerUrl,
    ...(gateways.length > 1 ? { relayer_urls: gateways } : {}),
    blobstore_url: stack.blobstoreUrl,
    console_url: stack.consoleUrl,
    chain_rpc_url: stack.encryptionStack.rpcUrl,
    chain_grpc_url: stack.encryptionStack.grpcUrl,
  });
  return async () => removeStackFile(dataDir);
}

export async function ensureDevCredentials(stack: LocalStack, env: Record<string, string | undefined>, dataDir: string) {
  const credPath = credentialsPath(env);
  let creds = readCredentials(credPath);
  // A dev identity that another local stack (another data directory) created is unknown to this chain: replace it.
  // Any other credential (a login to a real relayer) is left alone.
  if (creds?.label === "memrelay-dev" && !(await stack.chain.resolveDelegate(creds.delegatePublicKeyHex, creds.accountId))) creds = undefined;
  if (!creds) {
    const who = await stack.createIdentity("memrelay-dev");
    writeFileSync(join(dataDir, "dev-owner.key"), Buffer.from(who.ownerSecretKey).toString("hex") + "\n", { mode: 0o600 });
    creds = {
      delegatePrivateKey: Buffer.from(who.delegateSecretKey).toString("hex"),
      delegatePublicKeyHex: who.delegatePublicKeyHex,
      delegateAddress: who.delegateAddress,
      walletAddress: who.owner,
      accountId: who.accountId,
      packageId: stack.encryptionStack.packageId,
      relayerUrl: stack.relayerUrl,
      label: "memrelay-dev",
      createdAt: new Date().toISOString(),
      version: 1,
    };
    writeCredentials(creds, credPath);
  }
  return { creds, credPath };
}

/** Runs the relayer on a real network until it is stopped. */
async function runOnNetwork(network: string, env: Record<string, string | undefined>, local: { nats: Service; postgres: Service }, logger: Logger, run: ReturnType<typeof untilStopped>, roles: (() => Promise<void>)[], stopRoles: () => Promise<void>, stopSystem: () => Promise<void>): Promise<number> {
  const running = await startOnNetwork(network, env, local, logger, run.onLost);
  roles.push(running.stop);
  console.log(running.lines.join("\n"));
  return run.wait(stopRoles, stopSystem);
}

/** The dashboard for the development account, when this data directory holds its owner key. */
export async function startDevDashboard(stack: LocalStack, dataDir: string, port: number, logger: Logger): Promise<Dashboard | undefined> {
  const path = join(dataDir, "dev-owner.key");
  if (!existsSync(path)) return undefined;
  const ownerSecretKey = Uint8Array.from(Buffer.from(readFileSync(path, "utf8").trim(), "hex"));
  const account = await stack.chain.getAccountByOwner(keypairFromSecret(ownerSecretKey).address);
  if (!account) return undefined;
  const developmentWallet = localDevelopmentWallet(stack.chain, ownerSecretKey, account.id);
  return startDashboard({ chain: stack.chain, developmentWallet, packageId: stack.encryptionStack.packageId, host: stack.config.host, port, relayerUrl: stack.relayerUrl, logger: logger.child({ component: "dashboard" }) });
}

/**
 * What the local neural embedder sustains and how to go past it (issue 28): the figures come from the CPU per operation
 * over all processes in bench/RESULTS.md's section 2d (default configuration through the relayer on a 2-core VM:
 * 78.5 ms per remember → done, 25.5 ms per recall, i.e. about 12 and 39 per core; earlier runs 87 and 31 ms), rounded
 * down; throughput under load is lower (docs/long-memories.md).
 */
function embedderCapacityNote(config: { embedder: string; embedding: { workers: number } }): string {
  if (config.embedder !== "use-lite") return "";
  return `, ${config.embedding.workers} model thread(s): ≈ 10 short memories remembered and 30 recalls/s per core; for fleets set EMBEDDING_API_KEY (a provider)`;
}
