// The cluster stack's processes as the chaos run sees them: found through /proc (the nats-server nodes by the store
// their environment names, the second relayer by the pid `memrelay start --cluster` prints), killed or paused by
// pid, and brought back exactly as they were started (same command line, environment and working directory, so the
// same ports and stores). A process brought back belongs to the run, which stops it at the end.
import { spawn } from "node:child_process";
import { existsSync, openSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { waitForPort } from "../../runtime/tcp-ports.ts";

export interface ProcessImage {
  readonly argv: string[];
  readonly env: Record<string, string>;
  readonly cwd: string;
}

/** What it takes to start the process again: read before it is killed. */
export function imageOf(pid: number): ProcessImage {
  const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  const env = Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, "utf8")
      .split("\0")
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
  return { argv, env, cwd: readlinkSync(`/proc/${pid}/cwd`) };
}

/** `logFile`: where its output goes (what a failed restart is diagnosed from). */
export function respawn(image: ProcessImage, logFile: string): number {
  const out = openSync(logFile, "a");
  const child = spawn(image.argv[0]!, image.argv.slice(1), { env: image.env, cwd: image.cwd, stdio: ["ignore", out, out], detached: true });
  child.unref();
  return child.pid!;
}

export const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The cluster's nats-server nodes, by node name (n1..n3), from the store their environment names. */
export function natsNodes(clusterDataDir: string): Map<string, number> {
  const prefix = `MEMRELAY_NATS_STORE=${join(clusterDataDir, "nats")}/`;
  const nodes = new Map<string, number>();
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("nats-server")) continue;
      const env = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").find((kv) => kv.startsWith(prefix));
      if (env) nodes.set(env.slice(prefix.length).replace(/\/$/, ""), Number(pid));
    } catch {
      // the process ended while we looked
    }
  }
  return nodes;
}

/** The client port a nats-server node was started on (nats.conf reads it from the environment). */
export const natsPortOf = (image: ProcessImage) => Number(image.env.MEMRELAY_NATS_PORT);

/**
 * Starts the process again and waits until it listens on `port`, starting it once more each time it exits first, as
 * deploy/'s units do (Restart=always): a relayer process started while the cluster is still settling may exit on a
 * JetStream request timeout. Every pid it started goes to `started`.
 */
export async function restartUntilListening(image: ProcessImage, port: number, opts: { logFile: string; timeoutMs: number; started: Set<number> }): Promise<{ pid: number; starts: number }> {
  const deadline = Date.now() + opts.timeoutMs;
  for (let starts = 1; ; starts++) {
    const pid = respawn(image, opts.logFile);
    opts.started.add(pid);
    while (Date.now() < deadline && isAlive(pid) && !(await listening(port))) await new Promise((r) => setTimeout(r, 200));
    if (isAlive(pid) && (await listening(port))) return { pid, starts };
    if (Date.now() >= deadline) throw new Error(`port ${port} did not open within ${opts.timeoutMs} ms (${starts} starts); the restarted process said:\n${readFileSync(opts.logFile, "utf8").slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

/** The same program with other `--roles` (a `memrelay worker` image): an actors-only or projections-only process. */
export function withRoles(image: ProcessImage, roles: string): ProcessImage {
  const at = image.argv.indexOf("--roles");
  if (at < 0) throw new Error(`not a memrelay worker: ${image.argv.join(" ")}`);
  return { ...image, argv: [...image.argv.slice(0, at + 1), roles, ...image.argv.slice(at + 2)] };
}

/**
 * Starts a `memrelay worker` and waits until it prints "ready" (roles without a port), starting it again each time it
 * exits first, like restartUntilListening. Every pid it started goes to `started`.
 */
export async function startUntilReady(image: ProcessImage, opts: { logFile: string; timeoutMs: number; started: Set<number> }): Promise<{ pid: number; starts: number }> {
  const deadline = Date.now() + opts.timeoutMs;
  const readyLines = () => (existsSync(opts.logFile) ? (readFileSync(opts.logFile, "utf8").match(/^ready\b/gm) ?? []).length : 0);
  for (let starts = 1; ; starts++) {
    const before = readyLines();
    const pid = respawn(image, opts.logFile);
    opts.started.add(pid);
    while (Date.now() < deadline && isAlive(pid) && readyLines() === before) await new Promise((r) => setTimeout(r, 200));
    if (isAlive(pid) && readyLines() > before) return { pid, starts };
    if (Date.now() >= deadline) throw new Error(`${image.argv.slice(-2).join(" ")} did not say ready within ${opts.timeoutMs} ms (${starts} starts):\n${readFileSync(opts.logFile, "utf8").slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

const listening = (port: number) => waitForPort(port, 100).then(() => true, () => false);
