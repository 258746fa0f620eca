// `memrelay start --cluster` (`npm run cluster`): the scaled-out shape on one machine (DESIGN.md 2.4). A three-node
// JetStream cluster on loopback with every stream and KV bucket at R3, Postgres, the local chain, key servers, blob
// store and console once, and the relayer twice: this process runs gateway 1, actor host 1, the projections and the
// MCP sidecar; a `memrelay worker` child runs gateway 2, actor host 2 and the projections again (each batch is a
// compare-and-set on the read model's checkpoint, so the two apply every event once and either carries on alone).
// Everything lives under <data dir>/cluster (its own event log and database, apart from `memrelay start`'s); the
// stack file goes where operator commands look (<data dir>/stack.json). Ctrl-C or SIGTERM stops it all within 10 s.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { intVar, loadConfig } from "../config/env.ts";
import { createLogger } from "../config/logger.ts";
import { generateKeypair } from "../adapters/chain/local/accounts.ts";
import { startLocalStack } from "../runtime/local-stack.ts";
import { startNatsCluster } from "./nats-cluster.ts";
import { startPostgres, type Service } from "./services.ts";
import { stackFilePath } from "./stack-file.ts";
import { announceStack, ensureDevCredentials, secretFile, startDevDashboard } from "./start.ts";
import { ROLES_STOP_MS, stopWithin, untilStopped } from "./until-stopped.ts";

export const CLUSTER_HELP = `memrelay start --cluster   (npm run cluster)
  The multi-node shape on this machine: three nats-server nodes on loopback forming one JetStream cluster (free
  client and route ports, stores under <data dir>/cluster/nats/n1..n3), every stream and KV bucket at R3
  (NATS_REPLICAS=3); Postgres as for \`memrelay start\` (its own database for <data dir>/cluster); the local chain,
  key servers, blob store (BLOBSTORE_PORT), console (CONSOLE_PORT) and dashboard (DASHBOARD_PORT) once; two
  gateways (PORT, 8000, and SECOND_GATEWAY_PORT, default PORT+1; 0 for free ports): clients may use either; two
  actor hosts sharing the work queue; the projections in both relayer processes (either carries on alone).
  Prints every address. <data dir>/stack.json points the operator commands (replay, lag, alerts, …) at it, and
  remember/recall at gateway 1. Ctrl-C or SIGTERM stops everything within 10 s.`;

const memrelayBin = fileURLToPath(new URL("../bin/memrelay.mjs", import.meta.url));

/** How long the second relayer process gets to say it serves. */
const WORKER_START_MS = 60_000;

export async function clusterCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(CLUSTER_HELP);
    return 0;
  }
  const base = loadConfig(env);
  const dataDir = join(base.dataDir, "cluster");
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const logger = createLogger({ format: base.logFormat });
  const system: Pick<Service, "stop">[] = [];
  const roles: (() => Promise<void>)[] = [];
  // The relayer processes stop side by side: each has its own bounded stop, and together they get ROLES_STOP_MS.
  const stopRoles = async () => {
    await Promise.all(roles.map((stop) => stop().catch(() => undefined)));
  };
  const stopSystem = async () => {
    for (const s of [...system].reverse()) await s.stop().catch(() => undefined);
  };
  const run = untilStopped();
  try {
    const nats = await startNatsCluster(dataDir);
    system.push(nats);
    const postgres = await startPostgres(dataDir);
    system.push(postgres);
    const dashboardPort = intVar(env, "DASHBOARD_PORT", 5173, 0, 65535);
    const consent = env.MCP_OAUTH_CONSENT_URL ?? (dashboardPort ? `http://${base.host}:${dashboardPort}/connect/claude` : undefined);
    const stackEnv = { ...env, MEMRELAY_DATA_DIR: dataDir, NATS_URL: nats.url, NATS_REPLICAS: "3", DATABASE_URL: postgres.url, ...(consent ? { MCP_OAUTH_CONSENT_URL: consent } : {}) };
    const config = loadConfig(stackEnv);
    const operatorSecretKey = secretFile(join(dataDir, "operator.key"), () => generateKeypair().secretKey);
    const stack = await startLocalStack({ config, logger, databaseUrl: postgres.url, operatorSecretKey, onSidecarLost: run.onLost });
    roles.push(() => stack.stop());

    const secondPort = intVar(env, "SECOND_GATEWAY_PORT", config.port ? config.port + 1 : 0, 0, 65535);
    const second = await startSecondRelayer({ ...stackEnv, ...stack.workerEnv, NATS_REPLICAS: "3", PORT: String(secondPort), SIDECAR_URL: stack.relayer.sidecarUrl() });
    roles.push(second.stop);
    const gateways = [stack.relayerUrl, `http://${config.host}:${second.port}`];

    roles.push(announceStack(stack, base.dataDir, nats.url, postgres.url, gateways));

    const { creds, credPath } = await ensureDevCredentials(stack, env, dataDir);
    const dashboard = await startDevDashboard(stack, dataDir, dashboardPort, logger);
    if (dashboard) roles.push(() => dashboard.close());
    console.log(
      [
        "memrelay is running as a cluster",
        `  gateway 1    ${gateways[0]}  (actor host 1, projections, MCP sidecar ${stack.relayer.sidecarUrl()}; this process)`,
        `  gateway 2    ${gateways[1]}  (actor host 2, projections; memrelay worker pid ${second.child.pid})`,
        ...nats.nodes.map((n) => `  NATS ${n.name}      ${n.url}  (route ${n.route}, store ${n.store})`),
        `  streams      R3 (NATS_REPLICAS=3), KV buckets R3`,
        `  blob store   ${stack.blobstoreUrl}`,
        `  console      ${stack.consoleUrl}/api/v1`,
        ...(dashboard ? [`  dashboard    ${dashboard.url}`] : []),
        `  agent tools  ${gateways[0]}/api/mcp, ${gateways[1]}/api/mcp`,
        `  chain RPC    ${stack.encryptionStack.rpcUrl}  (gRPC-web: ${stack.encryptionStack.grpcUrl})`,
        `  key servers  ${stack.encryptionStack.cluster.servers.map((k) => k.url).join(", ")}  (threshold ${config.encryptionThreshold ?? Math.min(2, stack.encryptionStack.serverConfigs.length)})`,
        `  walrus nodes ${stack.walrus.committee.nodes.map((n) => n.url).join(", ")}`,
        `  Postgres     ${postgres.description}`,
        `  credentials  ${credPath} (account ${creds.accountId})`,
        "",
        `Operator commands in another terminal find this stack through ${stackFilePath(base.dataDir)}; or export:`,
        `  NATS_URL=${nats.url}`,
        `  DATABASE_URL=${postgres.url}`,
        "Ctrl-C stops everything.",
      ].join("\n"),
    );
    return await run.wait(stopRoles, stopSystem);
  } catch (err) {
    console.error(`memrelay start --cluster failed: ${(err as Error).message}`);
    await stopWithin(ROLES_STOP_MS, stopRoles);
    await stopSystem();
    return 1;
  }
}

interface SecondRelayer {
  readonly child: ChildProcess;
  readonly port: number;
  stop(): Promise<void>;
}

/** `memrelay worker --roles gateway,actors,projections` joining the stack; resolves once it prints its port. */
function startSecondRelayer(env: Record<string, string | undefined>): Promise<SecondRelayer> {
  const child = spawn(process.execPath, [memrelayBin, "worker", "--roles", "gateway,actors,projections"], { env, stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let stopping = false;
  // Bounded like every stop: SIGTERM (its own stop is bounded), then SIGKILL; its commands in flight are redelivered.
  const stop = async () => {
    stopping = true;
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    if (!(await stopWithin(ROLES_STOP_MS - 500, () => exited))) child.kill("SIGKILL");
  };
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`the second relayer process did not start within ${WORKER_START_MS / 1000} s:\n${out.slice(-2000)}`));
    }, WORKER_START_MS);
    const onData = (d: Buffer) => {
      out += d;
      const port = /^ready port=(\d+)$/m.exec(out)?.[1];
      if (!port) return;
      clearTimeout(timer);
      child.stdout!.off("data", onData);
      child.stdout!.pipe(process.stdout);
      resolve({ child, port: Number(port), stop });
    };
    child.stdout!.on("data", onData);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the second relayer process exited (${code ?? signal}):\n${out.slice(-2000)}`));
      if (!stopping) console.error(`memrelay cluster: gateway 2 (memrelay worker) exited (${code ?? signal}); gateway 1 still serves`);
    });
  });
}
