// `memrelay start` as a new user runs it, in a child process with only what a fresh shell has (no NATS_URL, no
// DATABASE_URL; every listener on a free port), and the other `memrelay` commands beside it.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const memrelayBin = fileURLToPath(new URL("../../bin/memrelay.mjs", import.meta.url));

/** Only what a fresh shell has, with HOME and the data directory given and every port left to the system. */
export function cleanEnv(home: string, dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? "", HOME: home, MEMRELAY_DATA_DIR: dataDir, PORT: "0", BLOBSTORE_PORT: "0", CONSOLE_PORT: "0", SIDECAR_URL: "http://127.0.0.1:0", DASHBOARD_PORT: "0", MEMRELAY_EMBEDDER: "hashing", ...extra };
}

export interface StartedStack {
  readonly child: ChildProcess;
  /** Everything it printed so far, stdout and stderr. */
  output(): string;
  /** Resolves once it prints "memrelay is running"; rejects if it exits first. */
  readonly running: Promise<void>;
  readonly exited: Promise<number | null>;
}

/** `args`: start's options (e.g. `--cluster`). */
export function startStack(env: Record<string, string>, args: readonly string[] = []): StartedStack {
  const child = spawn(process.execPath, [memrelayBin, "start", ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const running = new Promise<void>((resolve, reject) => {
    const check = () => (out.includes("memrelay is running") ? resolve() : undefined);
    child.stdout!.on("data", check);
    void exited.then((code) => reject(new Error(`memrelay start exited ${code}:\n${out}`)));
  });
  running.catch(() => undefined); // a test that expects the start to fail awaits `exited` instead
  return { child, output: () => out, running, exited };
}

export function memrelay(env: Record<string, string>, ...args: string[]): { status: number | null; out: string; stdout: string } {
  const r = spawnSync(process.execPath, [memrelayBin, ...args], { env, encoding: "utf8", timeout: 60_000 });
  return { status: r.status, out: r.stdout + r.stderr, stdout: r.stdout };
}

/** nats-server processes started for this data directory (their environment names its store). */
export function natsServersOf(dataDir: string): number[] {
  const pids: number[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (!cmd.includes("nats-server")) continue;
      if (readFileSync(`/proc/${pid}/environ`, "utf8").includes(`MEMRELAY_NATS_STORE=${join(dataDir, "nats")}`)) pids.push(Number(pid));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}
