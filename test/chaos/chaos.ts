// Chaos under load on `memrelay start --cluster` (issue 32 §3): agents of several owners write and recall without
// pause while one fault at a time hits the stack; afterwards every accepted memory is accounted for. Shared by
// `npm run chaos` (test/chaos/run.ts) and the shorter run in `npm test` (test/chaos.test.ts).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { EventStore } from "../../eventlog/event-store.ts";
import { STREAMS } from "../../eventlog/subjects.ts";
import { parseQuiltPatchId } from "../../adapters/blobs/quilt-codec.ts";
import { LocalChain } from "../../adapters/chain/local/local-chain.ts";
import { addDelegateKey, createAccount, generateKeypair, mint } from "../../adapters/chain/local/accounts.ts";
import { cachedSessionProvider } from "../../client/session-cache.ts";
import { MemrelayClient } from "../../client/memrelay-client.ts";
import { startPrimaryWithStandby, standbyDatabaseUrl, type PrimaryWithStandby } from "../support/pg-standby.ts";
import { freePort } from "../support/free-port.ts";
import { cleanEnv, memrelay, startStack, type StartedStack } from "../support/start-process.ts";
import { Agent, boundedCalls, withClientRetries, type Accepted, type AgentIdentity, type CallRecord } from "./load.ts";
import { imageOf, isAlive, natsNodes, natsPortOf, restartUntilListening, startUntilReady, withRoles, type ProcessImage } from "./processes.ts";

export type FaultName = "nats-kill" | "nats-sigstop" | "gateway-kill" | "actor-host-kill" | "projection-kill" | "postgres-restart" | "replica-stop";

/** Every fault, in the order a full run injects them. */
export const ALL_FAULTS: readonly FaultName[] = ["nats-kill", "nats-sigstop", "gateway-kill", "actor-host-kill", "projection-kill", "postgres-restart", "replica-stop"];

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
  /**
   * The most the accounting waits for the jobs the load left in flight to settle (a backlog drains at the cluster's
   * pace), as long as some settle: it gives up sooner once none has for SETTLE_STALL_MS.
   */
  readonly drainLimitMs: number;
  readonly log?: (line: string) => void;
}

/** The accounting stops waiting once no job has settled for this long: what is still open then is reported unsettled. */
const SETTLE_STALL_MS = 60_000;

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
  /** The jobs not settled: each distinct status they were last seen in ("unknown": no lookup answered), with how many. */
  readonly unsettledStatuses: Record<string, number>;
  /** The unsettled jobs' rows in the job-status read model (status, or "no row"), and `memrelay lag` then. */
  readonly unsettledRows: Record<string, number>;
  readonly lagWhenUnsettled: string;
  /** Jobs not yet settled at the accounting's first look, just after the load stopped, and how long they took to settle (undefined: not all did). */
  readonly openWhenLoadStopped: number;
  readonly drainMs: number | undefined;
  /** Up to UNSETTLED_TRACED unsettled jobs, each with its events (time after acceptance), its quilt's and its command's state. */
  readonly unsettledTraces: string[];
  /** Owners whose rows in `memories` differ from accepted − failed, with both figures. */
  readonly ownerMismatches: { owner: string; expected: number; rows: number }[];
  /** Done memories found under more than one row: their own-text recall answers their text more than once. */
  readonly storedTwice: number;
  /** Rows of the run's owners whose id is no job id a 202 answered (a memory stored under a job its client never saw). */
  readonly unnamedRows: number;
  readonly notRecalledByOwnText: number;
  /** Why: each distinct recall error, or "another memory first", with how many. */
  readonly notRecalledReasons: Record<string, number>;
  readonly deadLetters: string;
  /** Why the failed jobs failed, and why each dead letter was set aside: each distinct error, with how many. */
  readonly failedReasons: Record<string, number>;
  readonly deadLetterErrors: Record<string, number>;
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
  /** The run's own Postgres primary and hot standby (scripts/pg-standby.sh): the Postgres faults hit them only. */
  postgres?: PrimaryWithStandby;
  /** The relayer processes by role, as they run now (a killed one is replaced by the one started again). */
  readonly pids: Record<"gateway" | "actors" | "projections", number> = { gateway: 0, actors: 0, projections: 0 };

  constructor() {
    // A run cut short (a test timeout ends the process) must not leave the stack or a process it started again.
    process.once("exit", () => {
      this.stack?.child.kill("SIGKILL");
      for (const pid of [...this.respawned, ...natsNodes(this.clusterDir).values(), ...Object.values(this.pids)]) if (pid && isAlive(pid)) process.kill(pid, "SIGKILL");
      this.postgres?.remove();
    });
  }

  async cleanup(): Promise<void> {
    if (this.stack) {
      this.stack.child.kill("SIGTERM");
      await Promise.race([this.stack.exited, sleep(15_000)]);
      this.stack.child.kill("SIGKILL");
    }
    for (const pid of [...this.respawned, ...natsNodes(this.clusterDir).values()]) if (isAlive(pid)) process.kill(pid, "SIGKILL");
    this.postgres?.remove();
    this.postgres = undefined;
    // CHAOS_KEEP_LOGS: the processes' logs stay (the stack's own output written beside them) to trace a failed run.
    if (process.env.CHAOS_KEEP_LOGS && this.stack) writeFileSync(join(this.home, "stack.log"), this.stack.output());
    for (const d of process.env.CHAOS_KEEP_LOGS ? [this.dataDir] : [this.dataDir, this.home]) rmSync(d, { recursive: true, force: true });
    if (process.env.CHAOS_KEEP_LOGS) console.log(`chaos: the processes' logs are in ${this.home}`);
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

/** How long the run waits for the event log's stream to have a leader to hit (an election after the previous fault). */
const LEADER_WAIT_MS = 30_000;

/**
 * The node that leads the event log's stream (EVT): the fault that hurts most, the same in every run. Right after the
 * previous fault the stream may still be electing one (a run found none 3 s after the killed node came back).
 */
async function eventLogLeader(natsUrl: string, clusterDir: string): Promise<[string, number]> {
  const nc = await connect({ servers: natsUrl.split(",") });
  try {
    // No account-info check on the way in: it goes to whichever node this connects to, and a node just started again
    // may not answer JetStream requests for a while (a run failed there); the loop below asks again until one answers.
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    for (const until = Date.now() + LEADER_WAIT_MS; ; await sleep(500)) {
      const nodes = natsNodes(clusterDir);
      const leader = (await jsm.streams.info(STREAMS.events).catch(() => undefined))?.cluster?.leader;
      const pid = leader ? nodes.get(leader) : undefined;
      if (leader && pid) return [leader, pid];
      if (Date.now() > until) throw new Error(`the event log's stream had no leader among ${[...nodes.keys()].join(", ")} for ${LEADER_WAIT_MS / 1000} s`);
    }
  } finally {
    await nc.close();
  }
}

const countBy = (xs: readonly string[]) => xs.reduce<Record<string, number>>((m, x) => ({ ...m, [x]: (m[x] ?? 0) + 1 }), {});

/**
 * A fault window with fewer calls than this says nothing about the share that failed (one or two calls held by a
 * paused node would decide it): it is reported as not judged.
 */
export const MIN_CALLS_TO_JUDGE = 20;
/** One fault at a time on a stack with a spare of every part: most calls are still served, after the clients' retries. */
export const MAX_FAILED_SHARE = 0.5;

export type Judgement = { readonly judged: false; readonly why: string } | { readonly judged: true; readonly holds: boolean; readonly why: string };

/** Whether the stack served through the fault: judged once the window had MIN_CALLS_TO_JUDGE calls, holding while at most MAX_FAILED_SHARE of them failed. */
export function judge(f: FaultFigures): Judgement {
  if (f.calls < MIN_CALLS_TO_JUDGE) return { judged: false, why: `not judged: ${f.calls} calls during it, fewer than ${MIN_CALLS_TO_JUDGE}` };
  const share = f.failedCalls / f.calls;
  const holds = share <= MAX_FAILED_SHARE;
  return { judged: true, holds, why: `${percent(share)} of ${f.calls} calls failed, ${holds ? "within" : "over"} ${percent(MAX_FAILED_SHARE)}` };
}

const percent = (share: number) => `${(100 * share).toFixed(2)} %`;

/**
 * The done memories stored under more than one row. Recall by a memory's own text ranks every row holding that text
 * first (the same text, the same vector, the same terms), so with a limit of 2 a second result with its text is a
 * second row of the same memory: a retry that made a second job for one text, whatever its id. Texts are unique to
 * one accepted memory in the run (test/chaos/load.ts). `recalled`: each done memory's recall results by job id.
 */
export function storedTwice(done: readonly Accepted[], recalled: ReadonlyMap<string, readonly { readonly text: string }[]>): Accepted[] {
  return done.filter((a) => (recalled.get(a.jobId) ?? []).filter((r) => r.text === a.text).length > 1);
}

/** `baselineEnd`: the first fault's injection; the calls that ended before it set what counts as slow. */
export function figures(fault: string, t0: number, t1: number, calls: readonly CallRecord[], baselineEnd: number): FaultFigures {
  // A call counts for the window it ended in: one in flight at the injection is this fault's (a paused node holds every
  // call that reached it, and then none starts), one still in flight at the window's end is the next fault's (its
  // retries met that fault), and so no call is counted for two faults.
  const during = calls.filter((c) => c.end >= t0 && c.end < t1);
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
  const began = Date.now();
  const log = (line: string) => opts.log?.(`${seconds(Date.now() - began).padStart(6)} s  ${line}`);
  const run = new Run();
  try {
    run.postgres = await startPrimaryWithStandby();
    const database = await run.postgres.database();
    const secondPort = await freePort();
    const env = cleanEnv(run.home, run.dataDir, {
      SECOND_GATEWAY_PORT: String(secondPort),
      DATABASE_URL: database.url,
      DATABASE_READ_URLS: standbyDatabaseUrl(run.postgres, database),
      LOG_FORMAT: "json",
      LOG_LEVEL: "warn",
    });
    run.stack = startStack(env, ["--cluster"]);
    await run.stack.running;
    const clusterDir = run.clusterDir;
    const stackFile = JSON.parse(readFileSync(join(run.dataDir, "stack.json"), "utf8")) as { relayer_urls: string[]; nats_url: string; database_url: string; blobstore_url: string };
    const gateways = stackFile.relayer_urls;
    run.pids.gateway = Number(/memrelay worker pid (\d+)/.exec(run.stack.output())?.[1]);
    // Beside the stack's two relayer processes: an actor host alone and a projection instance alone, started as
    // gateway 2's process was (same environment), so that each can be killed apart from a gateway.
    const workerImage = imageOf(run.pids.gateway);
    const started = { timeoutMs: 90_000, started: run.respawned };
    const roleLog = (role: string) => join(run.home, `${role}.log`);
    [run.pids.actors, run.pids.projections] = await Promise.all(
      (["actors", "projections"] as const).map(async (role) => (await startUntilReady(withRoles(workerImage, role), { ...started, logFile: roleLog(role) })).pid),
    );
    log(`cluster up: gateways ${gateways.join(", ")}; Postgres primary and standby of the run's own`);

    const nc = await connect({ servers: stackFile.nats_url.split(","), maxReconnectAttempts: -1 });
    const identities = await owners(nc, gateways[0]!, clusterDir, opts.owners);
    await nc.close();
    const calls: CallRecord[] = [];
    const accepted: Accepted[] = [];
    const agents = Array.from({ length: opts.agents }, (_, i) => new Agent(i, identities[i % identities.length]!, gateways, calls, accepted));
    let stopped = false;
    const load = Promise.all(agents.map((a) => a.runUntil(() => stopped, opts.stepPauseMs)));
    log(`${opts.agents} agents of ${opts.owners} owners running`);

    /** Each fault's window; its figures are taken once the load has stopped, so that calls in flight at its end count. */
    const windows: { fault: FaultName; t0: number; t1: number }[] = [];
    /** How many starts each killed process took to serve again (more than 1: it exited while the cluster settled). */
    const restarts: string[] = [];
    /** Kills a relayer process with -9 and, after half the pause, starts it again as it was. */
    const killRelayer = async (role: keyof Run["pids"], what: string) => {
      const image = imageOf(run.pids[role]);
      process.kill(run.pids[role], "SIGKILL");
      await sleep(opts.pauseMs / 2);
      const again =
        role === "gateway"
          ? await restartUntilListening(image, secondPort, { ...started, logFile: roleLog("gateway-2") })
          : await startUntilReady(image, { ...started, logFile: roleLog(role) });
      run.pids[role] = again.pid;
      restarts.push(`${what}: ${again.starts} starts`);
      log(`  ${what} killed and started again (${again.starts} starts)`);
    };
    // Warm-up: the first calls of an agent open its sessions and are slow; a fault injected before every agent has
    // finished one would find no call of its own to count (seen on a loaded machine). Reads included: an agent's first
    // recall makes its decrypt session and unlocks its data keys (seconds), which counted as the first fault's slow
    // reads, and the baseline of what is slow had few reads to go by.
    const reads = () => calls.filter((c) => c.kind === "read").length;
    while (calls.length < opts.agents || reads() < opts.agents) await sleep(200);
    await sleep(opts.quietMs);
    const baselineEnd = Date.now();
    for (const fault of opts.faults) {
      const natsFault = fault === "nats-kill" || fault === "nats-sigstop";
      // found before the fault's window opens: waiting out the previous fault's election is not this fault's doing
      const target = natsFault ? await eventLogLeader(stackFile.nats_url, clusterDir) : undefined;
      const t0 = Date.now();
      log(`fault: ${fault}`);
      if (target) {
        const [name, pid] = target;
        if (fault === "nats-kill") {
          const image: ProcessImage = imageOf(pid);
          process.kill(pid, "SIGKILL");
          await sleep(opts.pauseMs / 2);
          const again = await restartUntilListening(image, natsPortOf(image), { logFile: join(run.home, `${name}.log`), timeoutMs: 30_000, started: run.respawned });
          restarts.push(`${name}: ${again.starts} starts`);
          log(`  ${name} (pid ${pid}, the event log's leader) killed and started again (${again.starts} starts)`);
        } else {
          process.kill(pid, "SIGSTOP");
          await sleep(opts.pauseMs);
          process.kill(pid, "SIGCONT");
          log(`  ${name} (pid ${pid}, the event log's leader) paused ${opts.pauseMs / 1000} s`);
        }
      } else if (fault === "gateway-kill") {
        // gateway 2 is the `memrelay worker` process: gateway, actor host and a projection instance in one.
        await killRelayer("gateway", "gateway 2 (with actor host 2 and projections)");
      } else if (fault === "actor-host-kill") {
        await killRelayer("actors", "actor host 3");
      } else if (fault === "projection-kill") {
        await killRelayer("projections", "projection instance 3");
      } else if (fault === "postgres-restart") {
        run.postgres.stopPrimary();
        await sleep(opts.pauseMs / 2);
        run.postgres.startPrimary();
        log(`  Postgres primary stopped (immediate) and started again after ${opts.pauseMs / 2000} s`);
      } else {
        run.postgres.stopStandby();
        await sleep(opts.pauseMs);
        run.postgres.startStandby();
        log(`  Postgres standby stopped for ${opts.pauseMs / 1000} s`);
      }
      await sleep(opts.quietMs);
      windows.push({ fault, t0, t1: Date.now() });
    }
    stopped = true;
    await load;
    const faults = windows.map((w) => figures(w.fault, w.t0, w.t1, calls, baselineEnd));
    log(`load stopped: ${accepted.length} memories accepted, ${calls.length} calls`);
    const accounting = await account(gateways, stackFile.nats_url, stackFile.database_url, stackFile.blobstore_url, identities, accepted, env, log, opts.drainLimitMs);
    return { faults, restarts, accounting, totalCalls: calls.length, failedCalls: calls.filter((c) => c.failed).length };
  } finally {
    await run.cleanup();
  }
}

/** After the faults: every 202 settled with a reason, rows per owner, no duplicate, each done memory recalled by its text. */
async function account(gateways: readonly string[], natsUrl: string, databaseUrl: string, blobstoreUrl: string, identities: readonly AgentIdentity[], accepted: readonly Accepted[], env: Record<string, string>, log: (l: string) => void, drainLimitMs: number): Promise<Accounting> {
  const byOwner = new Map(identities.map((w) => [w.owner, new MemrelayClient({ baseUrl: gateways[0]!, delegatePrivateKey: w.delegateSecretKey, accountId: w.accountId, encryptionSession: w.session, agent: boundedCalls })]));
  const status = new Map<string, { status: string; error?: string }>();
  /** Why the last status lookup of a job got no answer, while it has none. */
  const lookupErrors = new Map<string, string>();
  const began = Date.now();
  let openWhenLoadStopped: number | undefined;
  let drainMs: number | undefined;
  let fewestOpen = Number.POSITIVE_INFINITY;
  let settledAt = began;
  let toldAt = began;
  for (let looks = 0; ; looks++) {
    const open = accepted.filter((a) => !["done", "failed"].includes(status.get(a.jobId)?.status ?? ""));
    if (looks === 1) openWhenLoadStopped = open.length;
    if (open.length < fewestOpen) [fewestOpen, settledAt] = [open.length, Date.now()];
    if (open.length === 0) {
      drainMs = Date.now() - began;
      break;
    }
    if (Date.now() - settledAt > SETTLE_STALL_MS || Date.now() - began > drainLimitMs) break;
    if (looks > 0 && Date.now() - toldAt > 15_000) {
      toldAt = Date.now();
      log(`  ${open.length} jobs still open, ${seconds(Date.now() - began)} s after the load stopped`);
    }
    for (const w of identities) {
      const mine = open.filter((a) => a.owner === w.owner).map((a) => a.jobId);
      for (let i = 0; i < mine.length; i += 100) {
        const batch = mine.slice(i, i + 100);
        const r = await byOwner.get(w.owner)!.bulkStatus(batch).catch((err: Error) => err);
        if (r instanceof Error) for (const id of batch) lookupErrors.set(id, r.message.slice(0, 160));
        else for (const j of r.results) status.set(j.job_id, { status: j.status, error: j.error });
      }
    }
    await sleep(1_000);
  }
  const done = accepted.filter((a) => status.get(a.jobId)?.status === "done");
  const failed = accepted.filter((a) => status.get(a.jobId)?.status === "failed");
  log(`settled: ${done.length} done, ${failed.length} failed, ${accepted.length - done.length - failed.length} open`);

  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const ownerMismatches: Accounting["ownerMismatches"] = [];
  let unnamedRows = 0;
  let unsettledRows: Record<string, number> = {};
  try {
    const open = accepted.filter((a) => !["done", "failed"].includes(status.get(a.jobId)?.status ?? "")).map((a) => a.jobId);
    if (open.length) {
      const r = await db.query<{ job_id: string; status: string }>("SELECT job_id::text, status FROM remember_jobs WHERE job_id = ANY($1::uuid[])", [open]);
      const byId = new Map(r.rows.map((row) => [row.job_id, row.status]));
      unsettledRows = countBy(open.map((id) => byId.get(id) ?? "no row"));
    }
    // The memory index may still be applying the last commits: wait until it holds what the jobs say, or time out.
    const expected = (owner: string) => accepted.filter((a) => a.owner === owner).length - failed.filter((a) => a.owner === owner).length;
    const rowsOf = async () => new Map((await db.query<{ owner: string; n: string }>("SELECT owner, count(*) AS n FROM memories GROUP BY owner")).rows.map((r) => [r.owner, r]));
    let rows = await rowsOf();
    for (const until = Date.now() + 60_000; Date.now() < until && identities.some((w) => Number(rows.get(w.owner)?.n ?? 0) !== expected(w.owner)); rows = await rowsOf()) await sleep(1_000);
    for (const w of identities) {
      const r = rows.get(w.owner);
      if (Number(r?.n ?? 0) !== expected(w.owner)) ownerMismatches.push({ owner: w.owner, expected: expected(w.owner), rows: Number(r?.n ?? 0) });
    }
    // A row no 202 named is a job a client never saw the answer of (a retry that stored its memory a second time).
    const named = accepted.map((a) => a.jobId);
    unnamedRows = Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM memories WHERE owner = ANY($1::text[]) AND NOT (id = ANY($2::uuid[]))", [identities.map((w) => w.owner), named])).rows[0]?.n ?? 0);
  } finally {
    await db.end();
  }

  const misses: string[] = [];
  const dropped: Accepted[] = [];
  /** Each done memory's own-text recall, by job id, for the rows holding its text. */
  const recalled = new Map<string, readonly { text: string }[]>();
  // Limit 2: a second row holding the same text ranks beside the first (storedTwice). Retried as the load's clients
  // retry: a 503 (a blob unreadable for the moment) is asked again, not counted as a miss at once.
  const recall = (a: Accepted) => withClientRetries(() => byOwner.get(a.owner)!.recall(a.text, { limit: 2 }));
  for (let i = 0; i < done.length; i += 16) {
    await Promise.all(
      done.slice(i, i + 16).map(async (a) => {
        const r = await recall(a).catch((err: Error) => err);
        // An error after the retries: what the blob store itself answers for the memory's blob right then says whose.
        if (r instanceof Error) misses.push(`${r.message.slice(0, 120)} (${(await whyDropped(databaseUrl, blobstoreUrl, [a]))[0] ?? "no memory row"})`);
        else if (r.results[0]?.text === a.text) recalled.set(a.jobId, r.results);
        else if (r.dropped_count) {
          // Asked again after a pause: a memory that comes back was dropped for a moment, though a recall drops only
          // a blob the store says is gone or one that cannot be decrypted (a blob unreadable for now answers 503).
          // What the blob store answers right away says which (a 404 there: its read model behind).
          const then = (await whyDropped(databaseUrl, blobstoreUrl, [a]))[0] ?? "no memory row";
          await sleep(2_000);
          const again = await recall(a).catch(() => undefined);
          if (again?.results[0]?.text === a.text) misses.push(`dropped once (${then}), recalled when asked again`);
          else dropped.push(a);
        }
        else if (!r.results.length) misses.push("no result");
        else misses.push("another memory first");
      }),
    );
  }
  misses.push(...(await whyDropped(databaseUrl, blobstoreUrl, dropped)).map((why) => `dropped: ${why}`));
  log(`recalled by their own text: ${done.length - misses.length} of ${done.length}`);
  const lag = memrelay(env, "lag");
  const deadLetters = (lag.out.match(/^.*dead letters.*$/gm) ?? []).join("\n");
  const deadLetterErrors = deadLetters ? await deadLetterErrorsOf(natsUrl) : [];
  return {
    accepted: accepted.length,
    done: done.length,
    failed: failed.length,
    failedWithoutReason: failed.filter((a) => !status.get(a.jobId)?.error).length,
    unsettled: accepted.length - done.length - failed.length,
    unsettledStatuses: countBy(accepted.filter((a) => !["done", "failed"].includes(status.get(a.jobId)?.status ?? "")).map((a) => status.get(a.jobId)?.status ?? `unknown: ${lookupErrors.get(a.jobId) ?? "never looked up"}`)),
    lagWhenUnsettled: accepted.length - done.length - failed.length ? lag.out.trim() : "",
    unsettledRows,
    openWhenLoadStopped: openWhenLoadStopped ?? 0,
    drainMs,
    unsettledTraces: await traceUnsettled(natsUrl, accepted.filter((a) => !["done", "failed"].includes(status.get(a.jobId)?.status ?? "")).map((a) => a.jobId)),
    ownerMismatches,
    storedTwice: storedTwice(done, recalled).length,
    unnamedRows,
    notRecalledByOwnText: misses.length,
    notRecalledReasons: countBy(misses),
    deadLetters,
    failedReasons: countBy(failed.map((a) => (status.get(a.jobId)?.error ?? "").slice(0, 160))),
    deadLetterErrors: countBy(deadLetterErrors),
  };
}

/** Unsettled jobs traced in the report: enough to tell a lost command from a wedged effect. */
const UNSETTLED_TRACED = 5;

/**
 * What the event log says of unsettled jobs: each job's events with their times after its first, the quilt it joined
 * (its fate's events), whether its command is still on the work queue (an acknowledged one is gone), and the actor
 * consumer's counts (held, waiting, redelivered).
 */
async function traceUnsettled(natsUrl: string, jobIds: readonly string[]): Promise<string[]> {
  if (!jobIds.length) return [];
  const nc = await connect({ servers: natsUrl.split(",") });
  try {
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const store = new EventStore(js, jsm);
    const historyOf = async (aggregate: string) => {
      const { events } = await store.load(aggregate);
      const t0 = Date.parse(events[0]?.event.occurred_at ?? "");
      return events.map((e) => `${e.event.type}#${e.seq}@${((Date.parse(e.event.occurred_at) - t0) / 1000).toFixed(1)}s`).join(", ") || "no events";
    };
    const out: string[] = [];
    for (const id of jobIds.slice(0, UNSETTLED_TRACED)) {
      const { events } = await store.load(`job.${id}`).catch(() => ({ events: [] }));
      const joined = events.map((e) => e.event).filter((e) => e.type === "job.quilt_joined").map((e) => (e.data as { quilt: string }).quilt);
      const quilts = await Promise.all(joined.map(async (q) => `quilt ${q}: ${await historyOf(`quilt.${q}`).catch((e: Error) => e.message)}`));
      const command = await jsm.streams.getMessage(STREAMS.commands, { last_by_subj: `cmd.job.${id}` }).then(
        (m) => (m ? `command on the queue (stream seq ${m.seq})` : "no command on the queue"),
        () => "no command on the queue",
      );
      out.push(`job ${id}: ${await historyOf(`job.${id}`).catch((e: Error) => e.message)}; ${[...quilts, command].join("; ")}`);
    }
    const c = await jsm.consumers.info(STREAMS.commands, "actor-job").catch(() => undefined);
    if (c) out.push(`consumer actor-job: ${c.num_ack_pending} held, ${c.num_pending} waiting, ${c.num_redelivered} redelivered, ack floor ${c.ack_floor.stream_seq}, delivered ${c.delivered.stream_seq}`);
    return out;
  } finally {
    await nc.close();
  }
}

/** The errors the DLQ stream's records were set aside with (records carry no payload). */
async function deadLetterErrorsOf(natsUrl: string): Promise<string[]> {
  const nc = await connect({ servers: natsUrl.split(",") });
  try {
    const jsm = await jetstreamManager(nc);
    const last = (await jsm.streams.info(STREAMS.deadLetters)).state.last_seq;
    const out: string[] = [];
    for (let seq = Math.max(1, last - 199); seq <= last; seq++) {
      const m = await jsm.streams.getMessage(STREAMS.deadLetters, { seq }).catch(() => null);
      if (m) out.push(`${(m.json<{ aggregate: string; error: string }>().error ?? "").slice(0, 160)}`);
    }
    return out;
  } finally {
    await nc.close();
  }
}

/**
 * Why a recall dropped its memory: what the blob store answers for the memory's blob (unreadable, or readable and then
 * not decryptable). A memory of a quilt is asked for by its patch id, and its quilt is the blob with a content row.
 */
async function whyDropped(databaseUrl: string, blobstoreUrl: string, dropped: readonly Accepted[]): Promise<string[]> {
  if (!dropped.length) return [];
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const rows = await db.query<{ id: string; blob_id: string }>("SELECT id, blob_id FROM memories WHERE id = ANY($1::uuid[])", [dropped.map((a) => a.jobId)]);
    return Promise.all(
      rows.rows.map(async (r) => {
        const patch = parseQuiltPatchId(r.blob_id);
        const stored = patch?.quiltId ?? r.blob_id;
        const referenced = (await db.query("SELECT 1 FROM bs_contents WHERE blob_id = $1", [stored])).rowCount! > 0;
        const path = patch ? `by-quilt-patch-id/${r.blob_id}` : r.blob_id;
        const status = await fetch(`${blobstoreUrl}/v1/blobs/${path}`).then(
          async (res) => (res.status === 200 ? 200 : `${res.status} ${(await res.text()).slice(0, 100)}`),
          (err: Error) => err.message,
        );
        return `blob store answers ${status}${referenced ? "" : ` (no bs_contents row${patch ? " for its quilt" : ""})`}${status === 200 ? ", so not decryptable if dropped" : ""}`;
      }),
    );
  } finally {
    await db.end();
  }
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);
const verdict = (j: Judgement) => (j.judged ? `${j.holds ? "yes" : "no"} (${j.why})` : j.why);

/** The figures as a Markdown table (bench/RESULTS.md, the README). */
export function formatResult(opts: ChaosOptions, r: ChaosResult): string {
  const a = r.accounting;
  return [
    `${opts.agents} agents, ${opts.owners} owners, on \`memrelay start --cluster\` (3 NATS nodes at R3, 2 gateways, 3 actor hosts, 3 projection instances, a Postgres primary with a hot standby for reads); one fault at a time, ${seconds(opts.pauseMs)} s pause (a killed process or Postgres is started again after half of it), ${seconds(opts.quietMs)} s of load between faults; clients retry 4 times on network errors and 5xx (200 ms doubling backoff, next gateway).`,
    "",
    "| fault | writes recover (s) | reads recover (s) | calls during | failed after retries | served through it |",
    "|---|---|---|---|---|---|",
    ...r.faults.map((f) => `| ${f.fault} | ${seconds(f.writeRecoveryMs)} | ${seconds(f.readRecoveryMs)} | ${f.calls} | ${f.failedCalls} (${percent(f.failedCalls / Math.max(1, f.calls))})${f.failedCalls ? `: ${Object.entries(f.reasons).map(([r, n]) => `${n}× ${r}`).join("; ")}` : ""} | ${verdict(judge(f))} |`),
    "",
    `Accounting: ${a.accepted} accepted (202); ${a.openWhenLoadStopped} not yet settled when the load stopped, ${a.drainMs === undefined ? "not all settled after it" : `all settled ${seconds(a.drainMs)} s after it`}; ${a.done} done, ${a.failed} failed (${a.failedWithoutReason} without a reason), ${a.unsettled} not settled${a.unsettled ? ` (${Object.entries(a.unsettledStatuses).map(([st, n]) => `${n}× ${st}`).join(", ")}; their job-status rows: ${Object.entries(a.unsettledRows).map(([st, n]) => `${n}× ${st}`).join(", ")})` : ""}; owners whose rows ≠ accepted − failed: ${a.ownerMismatches.length}${a.ownerMismatches.length ? ` (${a.ownerMismatches.map((m) => `${m.rows} rows for ${m.expected}`).join(", ")})` : ""}; done memories stored under more than one row: ${a.storedTwice}; rows under a job id no 202 named: ${a.unnamedRows}; done memories not recalled first by their own text: ${a.notRecalledByOwnText}${a.notRecalledByOwnText ? ` (${Object.entries(a.notRecalledReasons).map(([r, n]) => `${n}× ${r}`).join("; ")})` : ""}; dead letters: ${a.deadLetters || "none"}${Object.keys(a.deadLetterErrors).length ? ` (${Object.entries(a.deadLetterErrors).map(([e, n]) => `${n}× ${e}`).join("; ")})` : ""}${a.failed ? `; failed jobs: ${Object.entries(a.failedReasons).map(([e, n]) => `${n}× ${e}`).join("; ")}` : ""}. All calls: ${r.totalCalls}, failed after retries: ${r.failedCalls}. Killed processes started again (as a Restart=always unit would): ${r.restarts.join(", ")}.`,
    ...(a.unsettledTraces.length ? ["", "Unsettled jobs traced:", "", ...a.unsettledTraces.map((t) => `- ${t}`)] : []),
    ...(a.lagWhenUnsettled ? ["", "`memrelay lag` with jobs unsettled:", "", "```", a.lagWhenUnsettled, "```"] : []),
  ].join("\n");
}
