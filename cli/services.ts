// System services `memrelay start` brings up when they are not given: nats-server with nats.conf (on 4222, or a
// free port when 4222 is taken) and Postgres (DATABASE_URL, else the native server on 127.0.0.1:5432, else
// embedded PGlite with pgvector served over a socket).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync, chmodSync } from "node:fs";
import { createHash, randomBytes } from "node:crypto";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { freePort } from "../runtime/tcp-ports.ts";
import { withoutPreparedStatements } from "../db/pool.ts";

const repoRoot = resolve(fileURLToPath(new URL("..", import.meta.url)));

export interface Service {
  readonly url: string;
  readonly description: string;
  stop(): Promise<void>;
}

async function portFree(port: number): Promise<boolean> {
  const net = await import("node:net");
  return new Promise((res) => {
    const srv = net.createServer();
    srv.once("error", () => res(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => res(true)));
  });
}

/** How long nats-server gets to say it is ready, and to shut down before it is killed. */
const NATS_START_MS = 10_000;
const NATS_STOP_MS = 2_500;

/** The nats-server binary (NATS_SERVER_BIN, else the PATH's), or an error saying how to install it. */
export function natsServerBinary(): string {
  const which = spawnSync("sh", ["-c", "command -v nats-server"], { encoding: "utf8" });
  const binary = process.env.NATS_SERVER_BIN ?? which.stdout.trim();
  if (!binary) {
    throw new Error("nats-server is not installed. Install it with:\n  sudo apt-get install -y nats-server\n(or run `bash scripts/setup-system.sh`), or point NATS_URL at a running server.");
  }
  return binary;
}

/** A persistent at-rest key for the JetStream store (0600): the store holds plaintext commands until acked. */
function jetstreamKey(dataDir: string): string {
  const path = join(dataDir, "jetstream.key");
  // A letter first: nats-server parses the substituted value, and a digit-first key such as "2499869e53..." is read as a number (startup fails).
  if (!existsSync(path)) writeFileSync(path, "k" + randomBytes(32).toString("hex") + "\n", { mode: 0o600 });
  chmodSync(path, 0o600);
  return readFileSync(path, "utf8").trim();
}

/**
 * nats-server for this data directory, on `preferredPort` (4222) when free, else on a free port. Ready means this
 * child said so: a port that merely answers may be another stack's server (two stacks starting at once both found
 * 4222 free, and the second, whose server could not bind, shared the first one's event log).
 */
export async function startNats(dataDir: string, preferredPort = 4222): Promise<Service> {
  const binary = natsServerBinary();
  const store = join(dataDir, "nats");
  mkdirSync(store, { recursive: true });
  for (let attempt = 1; ; attempt++) {
    const port = attempt === 1 && (await portFree(preferredPort)) ? preferredPort : await freePort();
    const started = await natsServerOn(binary, port, store, dataDir);
    if ("child" in started) return natsService(started.child, port, store, preferredPort);
    // Another process took the port between the check and the bind: try another one.
    if (!started.portTaken || attempt === 3) throw new Error(`nats-server did not start:\n${started.stderr}`);
  }
}

/** `extraArgs`: flags beside nats.conf (a cluster node's name and routes, cli/nats-cluster.ts). */
export async function natsServerOn(binary: string, port: number, store: string, dataDir: string, extraArgs: readonly string[] = []): Promise<{ child: ChildProcess } | { stderr: string; portTaken: boolean }> {
  const child: ChildProcess = spawn(binary, ["-c", join(repoRoot, "nats.conf"), ...extraArgs], {
    env: { ...process.env, MEMRELAY_NATS_HOST: "127.0.0.1", MEMRELAY_NATS_PORT: String(port), MEMRELAY_NATS_STORE: store, MEMRELAY_JS_KEY: jetstreamKey(dataDir) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), NATS_START_MS);
    child.stderr?.on("data", (d) => {
      stderr = (stderr + d).slice(-4000);
      if (stderr.includes("Server is ready")) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    // "close", not "exit": a server that could not bind exits before its stderr is drained, and without the
    // "address already in use" line the start would fail instead of trying another port.
    child.once("close", () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  if (ready) return { child };
  child.kill("SIGKILL");
  return { stderr, portTaken: /address already in use/.test(stderr) };
}

function natsService(child: ChildProcess, port: number, store: string, preferredPort: number): Service {
  return {
    url: `nats://127.0.0.1:${port}`,
    description: `nats-server (JetStream, encrypted store ${store}) on 127.0.0.1:${port}${port !== preferredPort ? ` (${preferredPort} was taken)` : ""}`,
    stop: () => stopNatsChild(child),
  };
}

/** Bounded: a stop of the whole stack must end within seconds (JetStream recovers its store after a SIGKILL). */
export function stopNatsChild(child: ChildProcess): Promise<void> {
  return new Promise<void>((res) => {
    if (child.exitCode !== null || child.signalCode !== null) return res();
    const kill = setTimeout(() => child.kill("SIGKILL"), NATS_STOP_MS);
    child.once("exit", () => {
      clearTimeout(kill);
      res();
    });
    child.kill("SIGTERM");
  });
}

/**
 * The native database of a data directory: `memrelay_<hash of its absolute path>`, the default (~/.memrelay)
 * included, so two stacks with different data directories (two HOMEs) never share read models.
 */
export function databaseNameFor(dataDir: string): string {
  return `memrelay_${createHash("sha256").update(resolve(dataDir)).digest("hex").slice(0, 12)}`;
}

async function nativePostgres(name: string): Promise<string | undefined> {
  const admin = process.env.MEMRELAY_NATIVE_PG ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const c = new pg.Client({ connectionString: admin, connectionTimeoutMillis: 1_500 });
  try {
    await c.connect();
    const ext = await c.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'");
    if (!ext.rowCount) return undefined;
    const exists = await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (!exists.rowCount) await c.query(`CREATE DATABASE ${name}`);
    const u = new URL(admin);
    u.pathname = `/${name}`;
    return u.toString();
  } catch {
    return undefined;
  } finally {
    await c.end().catch(() => undefined);
  }
}

export async function startPostgres(dataDir: string): Promise<Service> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, description: "Postgres from DATABASE_URL", stop: async () => undefined };
  const name = databaseNameFor(dataDir);
  const native = await nativePostgres(name);
  if (native) return { url: native, description: `native Postgres with pgvector on 127.0.0.1:5432 (database ${name}, for ${resolve(dataDir)})`, stop: async () => undefined };
  const { PGlite } = await import("@electric-sql/pglite");
  const { vector } = await import("@electric-sql/pglite-pgvector");
  const { servePglite } = await import("../db/pglite-server.ts");
  const dir = join(dataDir, "pglite");
  mkdirSync(dir, { recursive: true });
  const db = await PGlite.create(dir, { extensions: { vector } });
  const server = await servePglite(db, "127.0.0.1", 0);
  const port = server.port;
  return {
    // one PGlite session behind every socket connection: no named prepared statements (see db/pool.ts)
    url: withoutPreparedStatements(`postgres://postgres@127.0.0.1:${port}/postgres`),
    description: `embedded PGlite with pgvector (${dir}) on 127.0.0.1:${port}`,
    stop: async () => {
      await server.stop();
      await db.close();
    },
  };
}
