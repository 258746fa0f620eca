// `memrelay start --network <name>` (or CHAIN_NETWORK other than localnet): the relayer and its dashboard against a
// real network by configuration only. No local chain, key servers or blob store: the Sui node at CHAIN_GRPC_URL or CHAIN_RPC_URL, the
// key servers of ENCRYPTION_SERVER_CONFIGS and the Walrus publisher/aggregators do that work; NATS and Postgres
// still run here.
import { randomBytes } from "node:crypto";
import { intVar, loadConfig } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import { startWorker } from "../runtime/worker.ts";
import type { Service } from "./services.ts";
import { startDashboard } from "../dashboard/server.ts";

/**
 * The operator variables a real network needs (spec/relayer.md, operator configuration), checked after the network's
 * preset (config/network-presets.ts) filled in what is public. SPONSOR_PRIVATE_KEY too: the dashboard's wallets
 * approve delegate keys with the gas paid by /sponsor.
 */
export function missingNetworkVariables(env: Record<string, string | undefined>): string[] {
  const has = (k: string) => !!env[k]?.trim();
  const missing = !has("CHAIN_RPC_URL") && !has("CHAIN_GRPC_URL") ? ["CHAIN_RPC_URL (or CHAIN_GRPC_URL)"] : [];
  missing.push(...["MEMORY_PACKAGE_ID", "MEMORY_REGISTRY_ID", "BLOBSTORE_PUBLISHER_URL", "BLOBSTORE_AGGREGATOR_URL"].filter((k) => !has(k)));
  if (!has("ENCRYPTION_SERVER_CONFIGS") && !has("ENCRYPTION_KEY_SERVERS")) missing.push("ENCRYPTION_SERVER_CONFIGS (or ENCRYPTION_KEY_SERVERS)");
  if (!has("SERVER_CHAIN_PRIVATE_KEYS") && !has("SERVER_CHAIN_PRIVATE_KEY")) missing.push("SERVER_CHAIN_PRIVATE_KEY(S)");
  if (!has("SPONSOR_PRIVATE_KEY")) missing.push("SPONSOR_PRIVATE_KEY");
  return missing;
}

/**
 * Starts every relayer role (gateway, actors, projections, MCP sidecar) on `network`, and the dashboard where agents
 * sign in (DASHBOARD_PORT, 5173; 0: none): browser wallets only, accounts read through the network's node, gas paid
 * by this relayer's /sponsor. Resolves the lines to print.
 */
export async function startOnNetwork(
  network: string,
  env: Record<string, string | undefined>,
  local: { nats: Service; postgres: Service },
  logger: Logger,
  onSidecarLost: () => void,
): Promise<{ lines: string[]; stop: () => Promise<void> }> {
  const host = loadConfig(env).host;
  const dashboardPort = intVar(env, "DASHBOARD_PORT", 5173, 0, 65535);
  // OAuth consents are answered on this dashboard unless the operator points elsewhere.
  const consent = env.MCP_OAUTH_CONSENT_URL ?? (dashboardPort ? `http://${host}:${dashboardPort}/connect/claude` : undefined);
  const vars = {
    ...env,
    CHAIN_NETWORK: network,
    NATS_URL: local.nats.url,
    DATABASE_URL: local.postgres.url,
    SIDECAR_AUTH_TOKEN: env.SIDECAR_AUTH_TOKEN ?? randomBytes(24).toString("hex"),
    ...(consent ? { MCP_OAUTH_CONSENT_URL: consent } : {}),
  };
  const config = loadConfig(vars);
  const w = await startWorker(config, { gateway: true, actors: true, projections: true, mcp: true }, logger, vars, onSidecarLost);
  const relayer = `http://${config.host}:${w.relayer.port}`;
  const dashboard = dashboardPort
    ? await startDashboard({ chain: w.chain, packageId: config.packageId, host: config.host, port: dashboardPort, relayerUrl: relayer, logger: logger.child({ component: "dashboard" }) }).catch(async (err) => {
        await w.stop();
        throw err;
      })
    : undefined;
  return {
    stop: async () => {
      await dashboard?.close();
      await w.stop();
    },
    lines: [
      `memrelay is running on ${network}`,
      `  relayer      ${relayer}`,
      ...(dashboard ? [`  dashboard    ${dashboard.url}  (agents sign in here with a Sui wallet: memrelay-mcp --relayer ${relayer} --web-url ${dashboard.url} login; keys: ${dashboard.url}/keys)`] : []),
      `  agent tools  ${relayer}/api/mcp (Streamable HTTP), ${relayer}/api/mcp/sse (SSE); stdio: memrelay-mcp --relayer ${relayer}`,
      `  chain        ${config.chainGrpcUrl ? `${config.chainGrpcUrl} (gRPC)` : config.chainRpcUrl} (package ${config.packageId}, registry ${config.registryId})`,
      `  blobs        publisher ${config.blobstorePublisherUrl}, aggregator ${config.blobstoreAggregatorUrl}`,
      `  NATS         ${local.nats.description}`,
      `  Postgres     ${local.postgres.description}`,
      "",
      "Accounts and delegate keys live on the network: a wallet's owner approves agents' keys on the dashboard with",
      "their own Sui wallet (gas paid by this relayer's /sponsor), and signed requests carry the account id.",
      "Ctrl-C stops everything.",
    ],
  };
}
