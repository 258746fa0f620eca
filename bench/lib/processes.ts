// Processes of a benchmark run: a private nats-server on the repo's nats.conf (encrypted JetStream store, as
// `memrelay start` runs it), relayer workers (`memrelay worker --roles ...`), the services child (chain, key
// servers, blob store) and a sampler of each process's memory from /proc/<pid>/status.
import { spawn, fork, spawnSync, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, waitForPort } from "../../runtime/tcp-ports.ts";

export const repoRoot = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const bin = join(repoRoot, "bin", "memrelay.mjs");

export interface Proc {
  readonly label: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

function stopper(child: ChildProcess) {
  return async (graceMs = 15_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((res) => {
      const t = setTimeout(() => child.kill("SIGKILL"), graceMs);
      child.once("exit", () => {
        clearTimeout(t);
        res();
      });
      child.kill("SIGTERM");
    });
  };
}

export interface NatsProc extends Proc {
  readonly url: string;
  /** HTTP monitoring endpoint (/varz: message and byte counters). */
  readonly monitorUrl: string;
  readonly version: string;
  readonly encrypted: boolean;
}

/** nats-server with the repo's nats.conf (store encrypted at rest), or a plain JetStream config. */
export async function startNats(dir: string, opts: { encrypted: boolean }): Promise<NatsProc> {
  const binary = process.env.NATS_SERVER_BIN ?? "nats-server";
  const version = spawnSync(binary, ["--version"], { encoding: "utf8" }).stdout.trim();
  const port = await freePort();
  const monitor = await freePort();
  const store = join(dir, "nats");
  mkdirSync(store, { recursive: true });
  let args: string[];
  let env = { ...process.env };
  if (opts.encrypted) {
    args = ["-c", join(repoRoot, "nats.conf")];
    env = { ...env, MEMRELAY_NATS_HOST: "127.0.0.1", MEMRELAY_NATS_PORT: String(port), MEMRELAY_NATS_STORE: store, MEMRELAY_JS_KEY: "k" + randomBytes(32).toString("hex") };
  } else {
    args = ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", store];
  }
  const log = createWriteStream(join(dir, "nats-server.log"));
  args.push("-m", String(monitor));
  const child = spawn(binary, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  await waitForPort(port, 15_000);
  return { label: "nats-server", pid: child.pid!, child, url: `nats://127.0.0.1:${port}`, monitorUrl: `http://127.0.0.1:${monitor}`, version, encrypted: opts.encrypted, stop: stopper(child) };
}

export interface WorkerProc extends Proc {
  readonly port: number;
}

/**
 * `node bin/memrelay.mjs worker --roles <roles>` with the stack's worker env (or `entry`, a script printing "ready" the
 * same way); resolves once it prints "ready".
 */
export async function startWorker(roles: string, env: Record<string, string>, logDir: string, nodeArgs: string[] = [], entry: string[] = [bin, "worker", "--roles", roles]): Promise<WorkerProc> {
  const logFile = join(logDir, `worker-${roles.replace(/,/g, "+")}-${Date.now()}.log`);
  const log = createWriteStream(logFile);
  const child = spawn(process.execPath, [...nodeArgs, ...entry], {
    env: { ...process.env, PORT: "0", LOG_FORMAT: "json", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stderr!.pipe(log);
  const port = await new Promise<number>((res, rej) => {
    let out = "";
    const timer = setTimeout(() => rej(new Error(`worker ${roles} did not start within 90 s (log: ${logFile})`)), 90_000);
    const onExit = (code: number | null) => rej(new Error(`worker ${roles} exited with ${code} before ready (log: ${logFile})`));
    child.once("exit", onExit);
    child.stdout!.on("data", (d: Buffer) => {
      log.write(d);
      out += d;
      const m = /ready(?: port=(\d+))?/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.off("exit", onExit);
        res(m[1] ? Number(m[1]) : 0);
      }
    });
  });
  return { label: `worker ${roles}`, pid: child.pid!, child, port, stop: stopper(child) };
}

export interface IdentityWire {
  readonly owner: string;
  readonly accountId: string;
  readonly delegateSecretKeyHex: string;
  readonly delegatePublicKeyHex: string;
  readonly delegateAddress: string;
}

export interface ServicesProc extends Proc {
  readonly workerEnv: Record<string, string>;
  readonly blobstoreUrl: string;
  readonly embedderDims: number;
  createIdentity(label?: string): Promise<IdentityWire>;
}

/** Forks bench/services-proc.ts: startLocalStack without relayer roles (chain, key servers, blob store). */
export async function startServices(env: Record<string, string>, logDir: string, nodeArgs: string[] = []): Promise<ServicesProc> {
  const logPath = join(logDir, `services-${Date.now()}.log`);
  const log = createWriteStream(logPath);
  const child = fork(join(repoRoot, "bench", "services-proc.ts"), [], {
    execArgv: ["--import", "tsx", ...nodeArgs],
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  let seq = 0;
  const waiting = new Map<number, { res: (v: any) => void; rej: (e: Error) => void }>();
  const ready = new Promise<{ workerEnv: Record<string, string>; blobstoreUrl: string; embedderDims: number }>((res, rej) => {
    child.once("exit", (code) => {
      // Its log is deleted with the run's directory: carry the end of it in the error.
      const tail = existsSync(logPath) ? readFileSync(logPath, "utf8").trim().split("\n").slice(-15).join("\n") : "";
      rej(new Error(`services process exited with ${code} before ready${tail ? `; its log ends:\n${tail}` : ""}`));
    });
    child.on("message", (m: any) => {
      if (m?.type === "ready") res(m);
      else if (m?.type === "reply") {
        const w = waiting.get(m.id);
        waiting.delete(m.id);
        if (m.error) w?.rej(new Error(m.error));
        else w?.res(m.value);
      }
    });
  });
  const r = await ready;
  const call = (cmd: string, arg?: unknown) =>
    new Promise<any>((res, rej) => {
      const id = ++seq;
      waiting.set(id, { res, rej });
      child.send({ type: "call", id, cmd, arg });
    });
  return {
    label: "services (chain, key servers, blob store)",
    pid: child.pid!,
    child,
    workerEnv: r.workerEnv,
    blobstoreUrl: r.blobstoreUrl,
    embedderDims: r.embedderDims,
    createIdentity: (label) => call("identity", label),
    stop: async (graceMs = 20_000) => {
      if (child.exitCode !== null) return;
      await new Promise<void>((res) => {
        const t = setTimeout(() => child.kill("SIGKILL"), graceMs);
        child.once("exit", () => {
          clearTimeout(t);
          res();
        });
        child.send({ type: "stop" });
      });
    },
  };
}

// ---------------------------------------------------------------- memory

export interface ProcMemory {
  /** Peak resident set (kB). */
  readonly hwm: number;
  readonly rss: number;
  readonly anon: number;
  readonly file: number;
  readonly shmem: number;
}

export function readProcMemory(pid: number): ProcMemory | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return undefined;
  }
  const field = (name: string) => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text);
    return m ? Number(m[1]) : 0;
  };
  return { hwm: field("VmHWM"), rss: field("VmRSS"), anon: field("RssAnon"), file: field("RssFile"), shmem: field("RssShmem") };
}

export interface MemoryPeak {
  readonly label: string;
  readonly pids: number[];
  /** Largest VmHWM seen over the group's processes (kB). */
  hwm: number;
  /** Largest RssAnon seen (kB): private memory, without shared buffers or mapped files. */
  anon: number;
  /** Largest sum of RssAnon (private memory) over the group at one sample (kB). */
  sumAnon: number;
}

/** Samples VmHWM / RssAnon of named processes (or groups discovered by a function) every `everyMs`. */
export class MemorySampler {
  private readonly fixed = new Map<string, () => number[]>();
  private readonly dynamic = new Map<string, () => Promise<number[]>>();
  private readonly peaks = new Map<string, MemoryPeak>();
  private timer?: NodeJS.Timeout;
  private busy = false;

  constructor(private readonly everyMs = 500) {}

  track(label: string, pid: number | (() => number[])): void {
    this.fixed.set(label, typeof pid === "number" ? () => [pid] : pid);
  }

  trackGroup(label: string, pids: () => Promise<number[]>): void {
    this.dynamic.set(label, pids);
  }

  untrack(label: string): void {
    this.sampleNowSync();
    this.fixed.delete(label);
    this.dynamic.delete(label);
  }

  start(): void {
    this.timer = setInterval(() => void this.sample(), this.everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private record(label: string, pids: number[]): void {
    const peak = this.peaks.get(label) ?? { label, pids: [], hwm: 0, anon: 0, sumAnon: 0 };
    let sum = 0;
    for (const pid of pids) {
      const m = readProcMemory(pid);
      if (!m) continue;
      if (!peak.pids.includes(pid)) peak.pids.push(pid);
      peak.hwm = Math.max(peak.hwm, m.hwm);
      peak.anon = Math.max(peak.anon, m.anon);
      sum += m.anon;
    }
    peak.sumAnon = Math.max(peak.sumAnon, sum);
    this.peaks.set(label, peak);
  }

  sampleNowSync(): void {
    for (const [label, pids] of this.fixed) this.record(label, pids());
  }

  async sample(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      this.sampleNowSync();
      for (const [label, f] of this.dynamic) this.record(label, await f().catch(() => []));
    } finally {
      this.busy = false;
    }
  }

  /** CPU seconds (user + system) consumed so far by each process of each tracked label, plus the machine's busy time. */
  async cpu(): Promise<CpuReading> {
    const out: CpuReading = new Map();
    for (const [label, pids] of this.fixed) out.set(label, new Map(pids().map((pid) => [pid, cpuSeconds(pid)])));
    // Postgres' shared processes (postmaster, WAL writer, checkpointer, ...); backends are tracked per database.
    out.set(PG_SHARED, new Map(postgresSharedPids().map((pid) => [pid, cpuSeconds(pid)])));
    out.set(MACHINE, new Map([[0, machineBusySeconds()]]));
    return out;
  }

  snapshot(): MemoryPeak[] {
    return [...this.peaks.values()].map((p) => ({ ...p, pids: [...p.pids] }));
  }
}

const CLK_TCK = 100;

/** utime + stime of a process in seconds (0 when it is gone). */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}

export const MACHINE = "(whole machine)";
export const PG_SHARED = "postgres shared processes (WAL writer, checkpointer, ...)";

/** The postmaster and Postgres' background processes (not the backends of a database). */
export function postgresSharedPids(): number[] {
  return pidsByComm("postgres").filter((pid) => {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      return /bin\/postgres -D|: (checkpointer|background writer|walwriter|autovacuum launcher|autovacuum worker|logical replication launcher|archiver|stats collector)/.test(cmd);
    } catch {
      return false;
    }
  });
}
export const OTHERS = "other processes on the machine";

/** Busy CPU seconds of the whole machine (all cores) from /proc/stat. */
export function machineBusySeconds(): number {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = line;
  return (user + nice + system + irq + softirq + (steal ?? 0)) / CLK_TCK;
}

export type CpuReading = Map<string, Map<number, number>>;

/**
 * CPU used between two `cpu()` readings over `seconds` of wall time, per label (1.0 = one core busy), plus what
 * the rest of the machine used (anything not started by this run: it disturbs the measurement). Per process:
 * a process that appeared in between counts fully, one that exited in between loses its last moments.
 */
/**
 * Every process seen in any of the readings, at the most CPU it was seen with (CPU time only grows): a process that
 * ends within a timed window (a command run to its exit, the Postgres backends of its connections) is gone from the
 * window's last reading, and would count for nothing; with readings taken during the window it counts up to its
 * last one.
 */
export function latestSeen(readings: readonly CpuReading[]): CpuReading {
  const out: CpuReading = new Map();
  for (const r of readings) {
    for (const [label, procs] of r) {
      const into = out.get(label) ?? out.set(label, new Map()).get(label)!;
      for (const [pid, v] of procs) into.set(pid, Math.max(v, into.get(pid) ?? 0));
    }
  }
  return out;
}

export function cpuShares(a: CpuReading, b: CpuReading, seconds: number): { label: string; share: number }[] {
  const out: { label: string; share: number }[] = [];
  let ours = 0;
  for (const [label, procs] of b) {
    if (label === MACHINE) continue;
    const before = a.get(label);
    let d = 0;
    for (const [pid, v] of procs) d += Math.max(0, v - (before?.get(pid) ?? 0));
    ours += d;
    if (d > 0.005 * seconds) out.push({ label, share: d / seconds });
  }
  out.sort((x, y) => y.share - x.share);
  const machine = ((b.get(MACHINE)?.get(0) ?? 0) - (a.get(MACHINE)?.get(0) ?? 0)) / seconds;
  out.push({ label: OTHERS, share: Math.max(0, machine - ours / seconds) });
  out.push({ label: "machine total (of 200 %)", share: machine });
  return out;
}

export const formatShares = (s: { label: string; share: number }[]) => s.map((x) => `${x.label} ${Math.round(x.share * 100)} %`).join(", ");

/** Pids whose /proc/<pid>/comm is `comm`. */
export function pidsByComm(comm: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/comm`, "utf8").trim() === comm) out.push(Number(d));
    } catch {
      // gone
    }
  }
  return out;
}

/** Pids whose command line contains `needle` (read-only scan of /proc; used to find a spawned server's pid). */
export function pidsByCmdline(needle: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, "utf8").includes(needle)) out.push(Number(d));
    } catch {
      // gone
    }
  }
  return out;
}
