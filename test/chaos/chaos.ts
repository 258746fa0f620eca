// Chaos under load on `memrelay start --cluster` (issue 32 §3): agents of several owners write and recall without
// pause while one fault at a time hits the stack; afterwards every accepted memory is accounted for. Shared by
// `npm run chaos` (test/chaos/run.ts) and the shorter run in `npm test` (test/chaos.test.ts).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { LocalChain } from "../../adapters/chain/local/local-chain.ts";
import { addDelegateKey, createAccount, generateKeypair, mint } from "../../adapters/chain/local/accounts.ts";
import { cachedSessionProvider } from "../../client/session-cache.ts";
import { MemrelayClient } from "../../client/memrelay-client.ts";
import { databaseNameFor } from "../../cli/services.ts";
import { adminUrl } from "../support/postgres.ts";
import { freePort } from "../support/free-port.ts";
import { cleanEnv, memrelay, startStack, type StartedStack } from "../support/start-process.ts";
import { Agent, type Accepted, type AgentIdentity, type CallRecord } from "./load.ts";
import { imageOf, isAlive, natsNodes, natsPortOf, restartUntilListening, type ProcessImage } from "./processes.ts";

export type FaultName = "nats-kill" | "nats-sigstop" | "gateway-kill";

export interface ChaosOptions {
  readonly agents: number;
  readonly owners: number;
  readonly faults: readonly FaultName[];
  /** How long a SIGSTOPped node stays paused. */
  readonly pauseMs: number;
  /** Load without a fault before, between and after the faults. */
  readonly quietMs: number;
  /** Each agent's think time between calls. */
  readonly stepPauseMs: number;
  readonly log?: (line: string) => void;
}

export interface FaultFigures {
  readonly fault: string;
  readonly durationMs: number;
  /** From the injection until the last write (read) that failed or was slow ended; 0 when none did. */
  readonly writeRecoveryMs: number;
  readonly readRecoveryMs: number;
  readonly calls: number;
  readonly failedCalls: number;
  /** Why those calls failed: each distinct last error, with how many. */
  readonly reasons: Record<string, number>;
}

export interface Accounting {
  readonly accepted: number;
  readonly done: number;
  readonly failed: number;
  readonly failedWithoutReason: number;
  readonly unsettled: number;
  /** Owners whose rows in `memories` differ from accepted − failed, with both figures. */
  readonly ownerMismatches: { owner: string; expected: number; rows: number }[];
  readonly duplicateIds: number;
  readonly notRecalledByOwnText: number;
  /** Why: each distinct recall error, or "another memory first", with how many. */
  readonly notRecalledReasons: Record<string, number>;
  readonly deadLetters: string;
}

export interface ChaosResult {
  readonly faults: FaultFigures[];
  readonly restarts: string[];
  readonly accounting: Accounting;
  readonly totalCalls: number;
  readonly failedCalls: number;
}

/** A call is slow when it takes over this, or over twice the slowest 1 % of its kind before the first fault (a loaded machine is slow without a fault). */
const SLOW_MS = 2_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Everything the run started, so it can stop it all whatever happens. */
class Run {
  readonly home = mkdtempSync(join(tmpdir(), "memrelay-chaos-home-"));
  readonly dataDir = mkdtempSync(join(tmpdir(), "memrelay-chaos-"));
  readonly clusterDir = join(this.dataDir, "cluster");
  readonly respawned = new Set<number>();
  stack?: StartedStack;
  /** The second relayer process (gateway 2) the stack started. */
  workerPid?: number;

  constructor() {
    // A run cut short (a test timeout ends the process) must not leave the stack or a process it started again.
    process.once("exit", () => {
      this.stack?.child.kill("SIGKILL");
      for (const pid of [...this.respawned, ...natsNodes(this.clusterDir).values(), ...(this.workerPid ? [this.workerPid] : [])]) if (isAlive(pid)) process.kill(pid, "SIGKILL");
    });
  }

  async cleanup(): Promise<void> {
    if (this.stack) {
      this.stack.child.kill("SIGTERM");
      await Promise.race([this.stack.exited, sleep(15_000)]);
      this.stack.child.kill("SIGKILL");
    }
    for (const pid of this.respawned) if (isAlive(pid)) process.kill(pid, "SIGKILL");
    const admin = new pg.Client({ connectionString: adminUrl() });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${databaseNameFor(join(this.dataDir, "cluster"))} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
    for (const d of [this.dataDir, this.home]) rmSync(d, { recursive: true, force: true });
  }
}

async function owners(nc: NatsConnection, gateway: string, clusterDir: string, n: number): Promise<AgentIdentity[]> {
  const cfg = (await (await fetch(`${gateway}/config`)).json()) as { packageId: string; network: string; chainRpcUrl: string };
  const operatorKey = Uint8Array.from(Buffer.from(readFileSync(join(clusterDir, "operator.key"), "utf8").trim().replace(/^0x/, ""), "hex"));
  const chain = await LocalChain.open(nc, { packageId: cfg.packageId, network: cfg.network, operatorKey, replicas: 3, healIntervalMs: 0 });
  try {
    const out: AgentIdentity[] = [];
    for (let i = 0; i < n; i++) {
      const ownerKp = generateKeypair();
      const delegate = generateKeypair();
      await mint(chain, { operatorKey, to: ownerKp.keypair.address, amount: 1_000_000_000_000n });
      const account = await createAccount(chain, { ownerKey: ownerKp.secretKey });
      await addDelegateKey(chain, { ownerKey: ownerKp.secretKey, publicKey: delegate.keypair.publicKeyHex, label: "chaos", accountId: account.id });
      const session = cachedSessionProvider({ delegateSecretKey: delegate.secretKey, packageId: cfg.packageId, rpcUrl: cfg.chainRpcUrl });
      out.push({ owner: ownerKp.keypair.address, accountId: account.id, delegateSecretKey: delegate.secretKey, session });
    }
    return out;
  } finally {
    await chain.close();
  }
}

const countBy = (xs: readonly string[]) => xs.reduce<Record<string, number>>((m, x) => ({ ...m, [x]: (m[x] ?? 0) + 1 }), {});

/** `baselineEnd`: the first fault's injection; the calls that ended before it set what counts as slow. */
export function figures(fault: string, t0: number, t1: number, calls: readonly CallRecord[], baselineEnd: number): FaultFigures {
  const during = calls.filter((c) => c.start >= t0 && c.start <= t1);
  const slowOver = (kind: CallRecord["kind"]) => {
    const base = calls.filter((c) => c.kind === kind && !c.failed && c.end < baselineEnd).map((c) => c.end - c.start).sort((a, b) => a - b);
    return Math.max(SLOW_MS, 2 * (base[Math.floor(base.length * 0.99)] ?? 0));
  };
  const recovery = (kind: CallRecord["kind"]) => {
    const over = slowOver(kind);
    const bad = during.filter((c) => c.kind === kind && (c.failed || c.end - c.start > over));
    return bad.length ? Math.max(...bad.map((c) => c.end)) - t0 : 0;
  };
  return { fault, durationMs: t1 - t0, writeRecoveryMs: recovery("write"), readRecoveryMs: recovery("read"), calls: during.length, failedCalls: during.filter((c) => c.failed).length, reasons: countBy(during.filter((c) => c.failed).map((c) => c.reason ?? "")) };
}

export async function runChaos(opts: ChaosOptions): Promise<ChaosResult> {
  const log = opts.log ?? (() => undefined);
  const run = new Run();
  try {
    const secondPort = await freePort();
    const env = cleanEnv(run.home, run.dataDir, { SECOND_GATEWAY_PORT: String(secondPort), LOG_FORMAT: "json", LOG_LEVEL: "warn" });
    run.stack = startStack(env, ["--cluster"]);
    await run.stack.running;
    const clusterDir = run.clusterDir;
    const stackFile = JSON.parse(readFileSync(join(run.dataDir, "stack.json"), "utf8")) as { relayer_urls: string[]; nats_url: string; database_url: string };
    const gateways = stackFile.relayer_urls;
    let workerPid = Number(/memrelay worker pid (\d+)/.exec(run.stack.output())?.[1]);
    run.workerPid = workerPid;
    log(`cluster up: gateways ${gateways.join(", ")}`);

    const nc = await connect({ servers: stackFile.nats_url.split(","), maxReconnectAttempts: -1 });
    const identities = await owners(nc, gateways[0]!, clusterDir, opts.owners);
    await nc.close();
    const calls: CallRecord[] = [];
    const accepted: Accepted[] = [];
    const agents = Array.from({ length: opts.agents }, (_, i) => new Agent(i, identities[i % identities.length]!, gateways, calls, accepted));
    let stopped = false;
    const load = Promise.all(agents.map((a) => a.runUntil(() => stopped, opts.stepPauseMs)));
    log(`${opts.agents} agents of ${opts.owners} owners running`);

    const faults: FaultFigures[] = [];
    /** How many starts each killed process took to listen again (more than 1: it exited while the cluster settled). */
    const restarts: string[] = [];
    await sleep(opts.quietMs);
    const baselineEnd = Date.now();
    for (const fault of opts.faults) {
      const t0 = Date.now();
      log(`fault: ${fault}`);
      if (fault === "nats-kill" || fault === "nats-sigstop") {
        const [name, pid] = [...natsNodes(clusterDir)].sort()[1]!;
        if (fault === "nats-kill") {
          const image: ProcessImage = imageOf(pid);
          process.kill(pid, "SIGKILL");
          await sleep(opts.pauseMs / 2);
          const again = await restartUntilListening(image, natsPortOf(image), { logFile: join(run.home, `${name}.log`), timeoutMs: 30_000, started: run.respawned });
          restarts.push(`${name}: ${again.starts} starts`);
          log(`  ${name} (pid ${pid}) killed and started again (${again.starts} starts)`);
        } else {
          process.kill(pid, "SIGSTOP");
          await sleep(opts.pauseMs);
          process.kill(pid, "SIGCONT");
          log(`  ${name} (pid ${pid}) paused ${opts.pauseMs / 1000} s`);
        }
      } else {
        // gateway 2 is the `memrelay worker` process: gateway, actor host and a projection instance in one.
        const image = imageOf(workerPid);
        process.kill(workerPid, "SIGKILL");
        await sleep(opts.pauseMs / 2);
        const again = await restartUntilListening(image, secondPort, { logFile: join(run.home, "gateway-2.log"), timeoutMs: 90_000, started: run.respawned });
        workerPid = again.pid;
        restarts.push(`gateway 2: ${again.starts} starts`);
        log(`  gateway 2 / actor host 2 / projections killed and started again (${again.starts} starts)`);
      }
      await sleep(opts.quietMs);
      faults.push(figures(fault, t0, Date.now(), calls, baselineEnd));
    }
    stopped = true;
    await load;
    log(`load stopped: ${accepted.length} memories accepted, ${calls.length} calls`);
    const accounting = await account(gateways, stackFile.database_url, identities, accepted, env, log);
    return { faults, restarts, accounting, totalCalls: calls.length, failedCalls: calls.filter((c) => c.failed).length };
  } finally {
    await run.cleanup();
  }
}

/** After the faults: every 202 settled with a reason, rows per owner, no duplicate, each done memory recalled by its text. */
async function account(gateways: readonly string[], databaseUrl: string, identities: readonly AgentIdentity[], accepted: readonly Accepted[], env: Record<string, string>, log: (l: string) => void): Promise<Accounting> {
  const byOwner = new Map(identities.map((w) => [w.owner, new MemrelayClient({ baseUrl: gateways[0]!, delegatePrivateKey: w.delegateSecretKey, accountId: w.accountId, encryptionSession: w.session })]));
  const status = new Map<string, { status: string; error?: string }>();
  const deadline = Date.now() + 60_000;
  for (;;) {
    const open = accepted.filter((a) => !["done", "failed"].includes(status.get(a.jobId)?.status ?? ""));
    if (open.length === 0 || Date.now() > deadline) break;
    for (let i = 0; i < open.length; i += 100) {
      const batch = open.slice(i, i + 100);
      const r = await byOwner.get(batch[0]!.owner)!.bulkStatus(batch.filter((a) => a.owner === batch[0]!.owner).map((a) => a.jobId)).catch(() => undefined);
      for (const j of r?.results ?? []) status.set(j.job_id, { status: j.status, error: j.error });
    }
    await sleep(1_000);
  }
  const done = accepted.filter((a) => status.get(a.jobId)?.status === "done");
  const failed = accepted.filter((a) => status.get(a.jobId)?.status === "failed");
  log(`settled: ${done.length} done, ${failed.length} failed, ${accepted.length - done.length - failed.length} open`);

  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const ownerMismatches: Accounting["ownerMismatches"] = [];
  let duplicateIds = 0;
  try {
    // The memory index may still be applying the last commits: wait until it holds what the jobs say, or time out.
    const expected = (owner: string) => accepted.filter((a) => a.owner === owner).length - failed.filter((a) => a.owner === owner).length;
    const rowsOf = async () => new Map((await db.query<{ owner: string; n: string; ids: string }>("SELECT owner, count(*) AS n, count(DISTINCT id) AS ids FROM memories GROUP BY owner")).rows.map((r) => [r.owner, r]));
    let rows = await rowsOf();
    for (const until = Date.now() + 60_000; Date.now() < until && identities.some((w) => Number(rows.get(w.owner)?.n ?? 0) !== expected(w.owner)); rows = await rowsOf()) await sleep(1_000);
    for (const w of identities) {
      const r = rows.get(w.owner);
      if (Number(r?.n ?? 0) !== expected(w.owner)) ownerMismatches.push({ owner: w.owner, expected: expected(w.owner), rows: Number(r?.n ?? 0) });
      duplicateIds += Number(r?.n ?? 0) - Number(r?.ids ?? 0);
    }
  } finally {
    await db.end();
  }

  const misses: string[] = [];
  for (let i = 0; i < done.length; i += 16) {
    await Promise.all(
      done.slice(i, i + 16).map(async (a) => {
        const r = await byOwner.get(a.owner)!.recall(a.text, { limit: 1 }).catch((err: Error) => err);
        if (r instanceof Error) misses.push(r.message.slice(0, 120));
        else if (!r.results.length) misses.push(r.dropped_count ? "dropped (its blob unreadable or undecryptable)" : "no result");
        else if (r.results[0]!.text !== a.text) misses.push("another memory first");
      }),
    );
  }
  const lag = memrelay(env, "lag");
  const deadLetters = (lag.out.match(/^.*dead letters.*$/gm) ?? []).join("\n");
  return {
    accepted: accepted.length,
    done: done.length,
    failed: failed.length,
    failedWithoutReason: failed.filter((a) => !status.get(a.jobId)?.error).length,
    unsettled: accepted.length - done.length - failed.length,
    ownerMismatches,
    duplicateIds,
    notRecalledByOwnText: misses.length,
    notRecalledReasons: countBy(misses),
    deadLetters,
  };
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);

/** The figures as a Markdown table (bench/RESULTS.md, the README). */
export function formatResult(opts: ChaosOptions, r: ChaosResult): string {
  const a = r.accounting;
  return [
    `${opts.agents} agents, ${opts.owners} owners, on \`memrelay start --cluster\` (3 NATS nodes at R3, 2 gateways, 2 actor hosts, 2 projection instances); one fault at a time, ${seconds(opts.quietMs)} s of load between faults; clients retry 4 times on network errors and 5xx (200 ms doubling backoff, next gateway).`,
    "",
    "| fault | writes recover (s) | reads recover (s) | calls during | failed after retries |",
    "|---|---|---|---|---|",
    ...r.faults.map((f) => `| ${f.fault} | ${seconds(f.writeRecoveryMs)} | ${seconds(f.readRecoveryMs)} | ${f.calls} | ${f.failedCalls} (${((100 * f.failedCalls) / Math.max(1, f.calls)).toFixed(2)} %)${f.failedCalls ? `: ${Object.entries(f.reasons).map(([r, n]) => `${n}× ${r}`).join("; ")}` : ""} |`),
    "",
    `Accounting: ${a.accepted} accepted (202), ${a.done} done, ${a.failed} failed (${a.failedWithoutReason} without a reason), ${a.unsettled} not settled; owners whose rows ≠ accepted − failed: ${a.ownerMismatches.length}${a.ownerMismatches.length ? ` (${a.ownerMismatches.map((m) => `${m.rows} rows for ${m.expected}`).join(", ")})` : ""}; duplicate rows: ${a.duplicateIds}; done memories not recalled first by their own text: ${a.notRecalledByOwnText}${a.notRecalledByOwnText ? ` (${Object.entries(a.notRecalledReasons).map(([r, n]) => `${n}× ${r}`).join("; ")})` : ""}; dead letters: ${a.deadLetters || "none"}. All calls: ${r.totalCalls}, failed after retries: ${r.failedCalls}. Killed processes started again (as a Restart=always unit would): ${r.restarts.join(", ")}.`,
  ].join("\n");
}
