// `memrelay worker --roles gateway,actors,projections`: one relayer process joining running services.
import { loadConfig } from "../config/env.ts";
import { createLogger } from "../config/logger.ts";
import { startWorker } from "../runtime/worker.ts";

export const WORKER_HELP = `memrelay worker [--roles gateway,actors,projections]
  Runs relayer roles against running services (default: all three). Configuration from the operator variables:
  NATS_URL, DATABASE_URL, CHAIN_RPC_URL, ENCRYPTION_SERVER_CONFIGS, ENCRYPTION_THRESHOLD, BLOBSTORE_PUBLISHER_URL,
  BLOBSTORE_AGGREGATOR_URL, SERVER_CHAIN_PRIVATE_KEYS, MEMORY_PACKAGE_ID, PORT. Prints "ready" when serving.`;

export async function workerCommand(args: string[], env = process.env): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(WORKER_HELP);
    return 0;
  }
  const i = args.indexOf("--roles");
  const names = (i >= 0 ? args[i + 1] : "gateway,actors,projections").split(",");
  const roles = { gateway: names.includes("gateway"), actors: names.includes("actors"), projections: names.includes("projections") };
  const config = loadConfig(env);
  const logger = createLogger({ format: config.logFormat });
  const w = await startWorker(config, roles, logger, env);
  console.log(`ready${w.relayer.port ? ` port=${w.relayer.port}` : ""}`);
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await w.stop();
  return 0;
}
