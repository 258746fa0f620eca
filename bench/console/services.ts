// The console benchmark's services processes: what each runs (`bench/console.ts --serve`, its role in BENCH_ROLE) and
// how the bench starts and stops them.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openEventLog } from "../../eventlog/connection.ts";
import { createPool } from "../../db/pool.ts";

export interface ServiceInfo {
  consoleUrl?: string;
  relayUrl?: string;
  blobstoreUrl?: string;
  storageApiKey?: string;
  operatorKeyHex?: string;
}

/**
 * A services process. BENCH_ROLE=all: ledger, blob store and console in one process (the `memrelay start`
 * composition); blobstore: ledger and blob store; console-gateway / console-workers: the console's listener, or its
 * actors and projections, against BENCH_BLOBSTORE_URL.
 */
export async function serve(): Promise<void> {
  const { LocalChain } = await import("../../adapters/chain/local/local-chain.ts");
  const { generateKeypair } = await import("../../adapters/chain/local/accounts.ts");
  const { startBlobstore } = await import("../../runtime/blobstore.ts");
  const { startConsole } = await import("../../runtime/console.ts");
  const { provisionSponsor, provisionStorage } = await import("../../runtime/console-provision.ts");
  const { createLogger } = await import("../../config/logger.ts");
  // warnings and errors of the services on stderr (a failed upload says why), nothing else
  const logger = createLogger({ sink: (l) => void (/ (WARN|ERROR) /.test(l) && process.stderr.write(l + "\n")) });
  const env = process.env;
  const role = env.BENCH_ROLE ?? "all";
  if (role === "relay-floor") return serveRelayFloor(env.BENCH_BLOBSTORE_URL!, env.BENCH_STORAGE_KEY!);
  const log = await openEventLog({ servers: env.NATS_URL!, name: `console-bench-${role}` });
  const db = createPool(env.DATABASE_URL!, 24);
  const operator = env.BENCH_OPERATOR_KEY ? Uint8Array.from(Buffer.from(env.BENCH_OPERATOR_KEY, "hex")) : generateKeypair().secretKey;
  const chain = await LocalChain.open(log, { packageId: "0x" + "a1".repeat(32), network: "localnet", operatorKey: operator });
  const stops: (() => Promise<unknown>)[] = [];
  const info: ServiceInfo = { operatorKeyHex: Buffer.from(operator).toString("hex") };
  let storage = { url: env.BENCH_BLOBSTORE_URL ?? "", apiKey: env.BENCH_STORAGE_KEY ?? "" };
  if (role === "all" || role === "blobstore") {
    const blobstore = await startBlobstore({ log, db, port: 0, dataDir: join(env.BENCH_DATA_DIR!, "blobstore"), logger, gc: { intervalMs: 0 } });
    stops.push(() => blobstore.stop());
    storage = await provisionStorage({ log, db, blobstoreUrl: blobstore.url, runners: blobstore.runners, dataDir: env.BENCH_DATA_DIR! });
    Object.assign(info, { blobstoreUrl: blobstore.url, storageApiKey: storage.apiKey });
  }
  if (role !== "blobstore") {
    const sponsorSecretKey = await provisionSponsor({ chain, operatorSecretKey: operator, dataDir: env.BENCH_DATA_DIR! });
    const roles = role === "console-gateway" ? { gateway: true, actors: false, projections: false } : role === "console-workers" ? { gateway: false, actors: true, projections: true } : undefined;
    const console_ = await startConsole({ log, db, chain, storage, sponsorSecretKey, port: 0, logger, limits: { uploadsPerMinute: 0 }, roles });
    stops.unshift(() => console_.stop());
    info.consoleUrl = console_.url;
  }
  process.stdout.write(JSON.stringify(info) + "\n");
  await stopRequested();
  for (const stop of stops) await stop().catch(() => undefined);
  await chain.close();
  await log.close();
  await db.end();
  process.exit(0);
}

/**
 * The relay floor: what any console must do with an upload's bytes and nothing else — the same uWS listener layer
 * (gateway/http.ts, recycled receive buffers) streaming a raw body into the blob store through the console's storage
 * client (adapters/file-storage/blobstore-http.ts), answering with the stored object. No multipart, keys, checks, log or read models.
 */
async function serveRelayFloor(blobstoreUrl: string, apiKey: string): Promise<void> {
  const { HttpServer, json } = await import("../../gateway/http.ts");
  const { bodyBuffers } = await import("../../gateway/recycled-buffers.ts");
  const { BlobStoreStorage } = await import("../../adapters/file-storage/blobstore-http.ts");
  const storage = new BlobStoreStorage({ url: blobstoreUrl, apiKey });
  const slabs = bodyBuffers();
  const server = new HttpServer({ corsOrigins: [] });
  server.route(
    "put",
    "/relay/:bucket/:key",
    async (req) => json(202, await storage.put(req.params[0], req.params[1], req.bodyStream!, "application/octet-stream", (c) => slabs.release(c))),
    { bodyMode: "stream", bodyLimit: Number.MAX_SAFE_INTEGER, bodyChunk: slabs.copy },
  );
  const port = await server.listen("127.0.0.1", 0);
  process.stdout.write(JSON.stringify({ relayUrl: `http://127.0.0.1:${port}` } satisfies ServiceInfo) + "\n");
  await stopRequested();
  server.close();
  await storage.close();
  process.exit(0);
}

/** Resolves when the bench asks a services process to stop (stdin closed, or SIGTERM). */
function stopRequested(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.stdin.on("end", resolve);
    process.stdin.on("close", resolve);
    process.once("SIGTERM", resolve);
    process.stdin.resume();
  });
}

export function startServices(env: Record<string, string>): Promise<{ child: ChildProcess; info: ServiceInfo }> {
  const self = fileURLToPath(new URL("../console.ts", import.meta.url));
  const prof = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const extra = process.env.BENCH_CHILD_NODE_ARGS ? process.env.BENCH_CHILD_NODE_ARGS.split(" ") : [];
  const child = spawn(process.execPath, [...prof, ...extra, "--import", "tsx", self, "--serve"], { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let buf = "";
    let found = false;
    const tag = env.BENCH_ROLE ?? "services";
    child.stdout!.on("data", (d: Buffer) => {
      buf += d.toString();
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        // the first JSON line is the process's addresses; anything else (e.g. --trace-gc) goes to stderr
        if (!found && line.startsWith("{")) {
          found = true;
          resolve({ child, info: JSON.parse(line) as ServiceInfo });
        } else process.stderr.write(`[${tag}] ${line}\n`);
      }
    });
    child.once("exit", (code) => reject(new Error(`services process exited with ${code}`)));
  });
}

export async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  child.stdin?.end();
  await new Promise((r) => {
    const t = setTimeout(() => (child.kill("SIGKILL"), r(undefined)), 10_000);
    child.once("exit", () => (clearTimeout(t), r(undefined)));
  });
}
