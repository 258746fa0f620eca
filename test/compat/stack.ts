// The stack the compatibility suite drives: `memrelay start` as a child process, as an operator runs it, with its own
// HOME (so its credential file is the run's), data directory, nats-server and database, and free ports. The dev
// credential the clients use is the one `memrelay start` writes to $HOME/.memory/credentials.json.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { startNatsServer, freePort } from "../support/nats-server.ts";
import { createTestDatabase, type TestDatabase } from "../support/postgres.ts";
import { repoRoot } from "../../bench/lib/processes.ts";
import { readCredentials, type Credentials } from "../../cli/credentials.ts";

export interface CompatStack {
  readonly relayerUrl: string;
  readonly delegatePrivateKeyHex: string;
  readonly accountId: string;
  /** The whole credential file (the MCP package takes it as its own). */
  readonly credentials: Credentials;
  /** The environment the stack runs with (HOME included), for the clients' processes. */
  readonly env: Readonly<Record<string, string>>;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 180_000;

export async function startCompatStack(workDir: string, extraEnv: Record<string, string> = {}): Promise<CompatStack> {
  const home = join(workDir, "home");
  mkdirSync(home, { recursive: true });
  const nats = await startNatsServer();
  let database: TestDatabase | undefined;
  let child: ChildProcess | undefined;
  const stop = async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    await database?.drop().catch(() => undefined);
    await nats.cleanup();
  };
  try {
    database = await createTestDatabase("memrelay_compat");
    const [port, blobstore, consolePort, sidecar] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      HOME: home,
      MEMRELAY_DATA_DIR: join(workDir, "data"),
      NATS_URL: nats.url,
      DATABASE_URL: database.url,
      PORT: String(port),
      BLOBSTORE_PORT: String(blobstore),
      CONSOLE_PORT: String(consolePort),
      SIDECAR_URL: `http://127.0.0.1:${sidecar}`,
      DASHBOARD_PORT: "0",
      MEMRELAY_EMBEDDER: "hashing",
      ...extraEnv,
    };
    const c = spawn(process.execPath, [join(repoRoot, "bin", "memrelay.mjs"), "start"], { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"] });
    child = c;
    let out = "";
    const collect = (d: Buffer) => (out = (out + d.toString()).slice(-20_000));
    c.stdout!.on("data", collect);
    c.stderr!.on("data", collect);
    const relayerUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`memrelay start did not report running within ${START_TIMEOUT_MS / 1000} s:\n${out}`)), START_TIMEOUT_MS);
      c.stdout!.on("data", () => {
        const m = /memrelay is running\s+relayer\s+(\S+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      c.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`memrelay start exited with ${code}:\n${out}`));
      });
    });
    const creds = readCredentials(join(home, ".memory", "credentials.json"));
    if (!creds) throw new Error("memrelay start wrote no credential file");
    return { relayerUrl, delegatePrivateKeyHex: creds.delegatePrivateKey, accountId: creds.accountId, credentials: creds, env, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
