// Starts a private nats-server with JetStream in a temp dir on a free port, for tests and benchmarks.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, waitForPort } from "../../runtime/tcp-ports.ts";

// Re-exported: the suites and the bench import them from here.
export { freePort, waitForPort };

export interface NatsServerHandle {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** The running server's process id (changes with a restart). */
  readonly pid: number | undefined;
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the server again on the same port and store (for outage tests). */
  restart(): Promise<void>;
  cleanup(): Promise<void>;
}

/** Servers this test process started and has not stopped: killed when the process exits, however it exits. */
const live = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of live) c.kill("SIGKILL");
});

/** How many nats-servers this process started are still running. */
export function runningNatsServers(): number {
  return [...live].filter((c) => c.exitCode === null && c.signalCode === null).length;
}

export async function startNatsServer(opts: { binary?: string } = {}): Promise<NatsServerHandle> {
  const binary = opts.binary ?? process.env.NATS_SERVER_BIN ?? "nats-server";
  const dir = mkdtempSync(join(tmpdir(), "memrelay-nats-"));
  const port = await freePort();
  const storeDir = join(dir, "js");
  const conf = join(dir, "nats.conf");
  writeFileSync(conf, `listen: 127.0.0.1:${port}\njetstream { store_dir: "${storeDir}" }\nmax_payload: 8MB\n`);
  let child: ChildProcess | undefined;
  const start = async () => {
    const c = spawn(binary, ["-c", conf], { stdio: ["ignore", "ignore", "pipe"] });
    child = c;
    live.add(c);
    c.once("exit", () => live.delete(c));
    c.stderr?.resume();
    await waitForPort(port).catch((err) => {
      c.kill("SIGKILL");
      throw err;
    });
  };
  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    const c = child;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once("exit", () => resolve());
      c.kill(signal);
    });
  };
  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    get pid() {
      return child?.pid;
    },
    stop,
    restart: start,
    cleanup: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
