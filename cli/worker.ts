// `memrelay worker --roles gateway,actors,projections`: one relayer process joining running services.
import { loadConfig } from "../config/env.ts";
import { createLogger, type Logger } from "../config/logger.ts";
import type { Sidecar } from "../mcp/sidecar/server.ts";
import { sidecarSettings } from "../mcp/sidecar/settings.ts";
import { withNetworkPreset } from "../config/network-presets.ts";
import { untilStopped } from "./until-stopped.ts";

export const WORKER_HELP = `memrelay worker [--roles gateway,actors,projections,mcp]
  Runs relayer roles against running services (default: gateway, actors, projections). "mcp" is the agent-tool
  sidecar (SIDECAR_URL, SIDECAR_AUTH_TOKEN required, MEMORY_RELAYER_URL, MCP_* limits; with DATABASE_URL and the
  variables below it joins the services and answers memory_recall itself); a gateway forwards /api/mcp to
  SIDECAR_URL and exits when SIDECAR_WATCHDOG_MAX_FAILURES health checks fail in a row. Configuration from the operator variables:
  NATS_URL, DATABASE_URL, CHAIN_NETWORK, CHAIN_GRPC_URL / CHAIN_RPC_URL, ENCRYPTION_SERVER_CONFIGS, ENCRYPTION_THRESHOLD,
  BLOBSTORE_PUBLISHER_URL, BLOBSTORE_AGGREGATOR_URL, SERVER_CHAIN_PRIVATE_KEYS, MEMORY_PACKAGE_ID, MEMORY_REGISTRY_ID,
  SPONSOR_PRIVATE_KEY (the /sponsor gas station) or SPONSOR_API_KEY / SPONSOR_API_URL / SPONSOR_NETWORK (a
  sponsorship provider instead), SPONSOR_DURABLE_REGISTER_ENABLED, SPONSOR_FALLBACK_TO_DIRECT_SIGN, PORT. CHAIN_NETWORK=localnet (default) uses the ledger on NATS; any
  other network goes through the Sui node: its gRPC API at CHAIN_GRPC_URL when set, else its JSON-RPC at
  CHAIN_RPC_URL (WAL_COIN_TYPE: the storage token for the balance monitor). Seal's key-server reads use the same node. CHAIN_NETWORK=testnet or mainnet fills in that network's public endpoints and key servers unless set
  (config/network-presets.ts). Prints "ready" when serving.`;

export async function workerCommand(args: string[], given = process.env): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(WORKER_HELP);
    return 0;
  }
  const env = withNetworkPreset(given.CHAIN_NETWORK, given);
  const i = args.indexOf("--roles");
  const names = (i >= 0 ? args[i + 1] : "gateway,actors,projections").split(",");
  const roles = { gateway: names.includes("gateway"), actors: names.includes("actors"), projections: names.includes("projections"), mcp: names.includes("mcp") };
  const config = loadConfig(env);
  const logger = createLogger({ format: config.logFormat });
  if (names.length === 1 && names[0] === "mcp" && !config.databaseUrl) return sidecarAlone(env, logger);
  // The stack's modules load once the configuration has been read (seconds of module loading): a malformed variable
  // is reported at once, before any of it.
  const { startWorker } = await import("../runtime/worker.ts");
  const run = untilStopped();
  const w = await startWorker(config, roles, logger, env, run.onLost);
  const port = w.relayer.port || (roles.mcp ? Number(new URL(w.relayer.sidecarUrl()).port) : 0);
  console.log(`ready${port ? ` port=${port}` : ""}`);
  return run.wait(() => w.stop());
}

/** The sidecar on its own: it needs no NATS or Postgres, only the relayer it calls for every tool. */
async function sidecarAlone(env: Record<string, string | undefined>, logger: Logger): Promise<number> {
  const { startSidecar } = await import("../mcp/sidecar/server.ts");
  let sidecar: Sidecar;
  try {
    sidecar = await startSidecar(sidecarSettings(env), logger);
  } catch (err) {
    console.error(`memrelay worker --roles mcp: ${(err as Error).message}`);
    return 2;
  }
  console.log(`ready port=${sidecar.port}`);
  return untilStopped().wait(() => sidecar.close());
}
