// Section scaling (issue 32 §4): CPU per memory per role on the cluster shape, with 1 and 2 actor hosts and 1 and 2
// gateways. One environment (bench/lib/cluster-env.ts: three-node JetStream cluster, R3 streams and KV buckets, the
// services process, projections with a standby) runs, one after the other, the same closed-loop remember load
// (each agent: rememberAndWait, the MemWal SDK's call, 202 then done) and recall load (each agent: recall in a
// namespace of its own that does not change between shapes) under
//   (a) 1 gateway + 1 actor host, (b) 1 gateway + 2 actor hosts, (c) 2 gateways + 1 actor host (agents spread
//   over both),
// in rounds (a, b, c, a, b, c, ...), so that the drift of the run (longer streams, larger tables, other load on the
// machine) spreads over every shape; with one round, (a) runs once more at the end to show that drift.
// This machine has 2 cores: throughput cannot grow with more processes; what must not grow is the CPU each memory
// costs (goal: total ≤ 1.10 × shape (a)), which is what the model in the README multiplies out. Each shape's idle
// CPU (no load, same processes) is measured too: the CPU a memory costs above it is what a saturated deployment pays.
import { Agent } from "undici";
import { createDelegateSession } from "../../adapters/encryption/session.ts";
import { MemrelayClient, RelayerError } from "../../client/memrelay-client.ts";
import type { Ctx } from "../lib/context.ts";
import { log } from "../lib/context.ts";
import { ClusterEnv, type ClusterRole } from "../lib/cluster-env.ts";
import { cpuByRole, pool, type Pooled, type RoleCpu, type Window } from "../lib/role-cpu.ts";
import type { IdentityWire } from "../lib/processes.ts";
import { OTHERS } from "../lib/processes.ts";
import { memoryTexts, queries } from "../lib/texts.ts";
import { latencyLine, sleep, summarize } from "../lib/stats.ts";
import type { Row, SectionResult } from "../lib/report.ts";

/** The CPU of these roles is what a memory costs the deployment (the load generator and Postgres' shared processes are reported beside it). */
const ROLES: readonly ClusterRole[] = ["gateway", "actor host", "projections", "nats-server", "services", "postgres backends"];
const GOAL = 1.1;
const RECALL_NS = "scaling-recall";
/** Memories each agent holds in its recall namespace. */
const RECALL_MEMORIES = 8;

interface Shape {
  readonly key: "a" | "b" | "c";
  readonly title: string;
  readonly gateways: number;
  readonly actorHosts: number;
}

const SHAPES: readonly Shape[] = [
  { key: "a", title: "(a) 1 gateway + 1 actor host", gateways: 1, actorHosts: 1 },
  { key: "b", title: "(b) 1 gateway + 2 actor hosts", gateways: 1, actorHosts: 2 },
  { key: "c", title: "(c) 2 gateways + 1 actor host", gateways: 2, actorHosts: 1 },
];

type Kind = "remember" | "recall";

/** One shape measured once: its idle CPU (ms per second, by label) and its two loads. */
interface ShapeRun {
  readonly shape: Shape;
  readonly round: number;
  readonly idleMsPerSecond: Record<string, number>;
  readonly remember: Window;
  readonly recall: Window;
}

/**
 * Set-up calls (seeding, warm-up) outside the timed windows retry a 503 or a network error as a client does (the
 * relayer answers 503 with Retry-After while, on a loaded machine, the key servers are slow to answer; a kept-alive
 * connection may be reset).
 */
async function retrying<T>(fn: () => Promise<T>, attempts = 6): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      const retriable = err instanceof RelayerError ? err.status === 503 : (err as NodeJS.ErrnoException)?.code !== undefined;
      if (i >= attempts || !retriable) throw err;
      await sleep(1_000 * i);
    }
  }
}

/** A shape's windows of one kind, each with the idle CPU measured before it, pooled. */
const pooled = (runs: readonly ShapeRun[], kind: Kind): Pooled => pool(runs.map((r) => ({ window: r[kind], idleMsPerSecond: r.idleMsPerSecond })));
const byRole = (env: ClusterEnv, p: Pooled): RoleCpu => cpuByRole(env.roleOf, ROLES, p);

async function cpuOver(ctx: Ctx, fn: () => Promise<void>): Promise<{ seconds: number; cpuMs: Record<string, number>; others: number }> {
  const w = await ctx.cpuWindow(fn);
  const cpuMs: Record<string, number> = {};
  for (const s of w.shares) if (!s.label.startsWith("machine total") && s.label !== OTHERS) cpuMs[s.label] = s.share * w.seconds * 1000;
  return { seconds: w.seconds, cpuMs, others: w.shares.find((s) => s.label === OTHERS)?.share ?? 0 };
}

/** Each agent runs `op` back to back until `seconds` have passed; CPU is read over the whole window. */
async function timedWindow(ctx: Ctx, agents: number, seconds: number, op: (agent: number) => Promise<void>): Promise<Window> {
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const w = await cpuOver(ctx, async () => {
    const deadline = performance.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: agents }, async (_, a) => {
        while (performance.now() < deadline) {
          const t0 = performance.now();
          try {
            await op(a);
            latencies.push(performance.now() - t0);
          } catch (err) {
            errors++;
            firstError ??= err instanceof Error ? err.message : String(err);
          }
        }
      }),
    );
  });
  return { ops: latencies.length, errors, firstError, latencies, ...w };
}

const f2 = (x: number) => x.toFixed(2);

function cpuLine(c: RoleCpu): string {
  const parts = [...c.roles].map(([role, r]) => (r.instances.length > 1 ? `${role} ${f2(r.total)} (${r.instances.map(([n, ms]) => `${n} ${f2(ms)}`).join(", ")})` : `${role} ${f2(r.total)}`));
  return `${parts.join(" · ")} · **total ${f2(c.total)} ms** (above idle ${f2(c.aboveIdle)}); beside it: ${c.outside.map(([n, ms]) => `${n} ${f2(ms)}`).join(", ")}`;
}

export async function scalingSection(ctx: Ctx): Promise<SectionResult> {
  const started = new Date();
  const t0 = performance.now();
  const agents = Number(process.env.MEMRELAY_BENCH_SCALING_AGENTS ?? 8);
  const seconds = Number(process.env.MEMRELAY_BENCH_SCALING_SECONDS ?? ctx.n(40, 15));
  const idleSeconds = ctx.n(15, 8);
  const rounds = Number(process.env.MEMRELAY_BENCH_SCALING_ROUNDS ?? ctx.n(2, 1));
  log("scaling: starting a three-node JetStream cluster (R3), a fresh database and the services ...");
  const cluster = await ClusterEnv.start("scaling", ctx.sampler, { MEMRELAY_EMBEDDER: "hashing" });
  return ctx.withOwnEnv(cluster, async (env) => {
    const dispatcher = new Agent({ connections: agents * 2, keepAliveTimeout: 30_000 });
    try {
      await env.startWorker("gateway", "gateway 1");
      await env.startWorker("actor host", "actor host 1");
      await env.startWorker("projections", "projections 1");
      await env.startWorker("projections", "projections 2");
      const ids: IdentityWire[] = [];
      for (let i = 0; i < agents; i++) ids.push(await env.identity(`bench-scaling-${i}`));
      /**
       * Each agent's client on gateway (agent mod the number of gateways running), with a fresh encryption session
       * (a Seal session lives at most 30 minutes, less than a full run).
       */
      const clients = async () => {
        const urls = env.gatewayUrls();
        return Promise.all(
          ids.map(async (who, i) => {
            const secret = Buffer.from(who.delegateSecretKeyHex, "hex");
            const session = await createDelegateSession({ delegateSecretKey: secret, packageId: env.services.workerEnv.MEMORY_PACKAGE_ID, rpcUrl: env.services.workerEnv.CHAIN_RPC_URL, ttlMin: 30 });
            return new MemrelayClient({ baseUrl: urls[i % urls.length], delegatePrivateKey: secret, accountId: who.accountId, encryptionSession: session.header, agent: dispatcher });
          }),
        );
      };
      log(`scaling: ${agents} agents, ${RECALL_MEMORIES} memories each in their recall namespace ...`);
      const seedTexts = memoryTexts(agents * RECALL_MEMORIES, 60_000);
      const seedClients = await clients();
      await Promise.all(seedClients.map(async (c, a) => {
        for (let k = 0; k < RECALL_MEMORIES; k++) {
          const job = await retrying(() => c.rememberAndWait(seedTexts[a * RECALL_MEMORIES + k]!, RECALL_NS, 120_000));
          if (job.status !== "done") throw new Error(`seeding the recall namespace: job ${job.job_id} ${job.status} (${job.error ?? ""})`);
        }
      }));

      let nextText = 100_000;
      const qs = queries(997);
      let q = 0;
      const runs: ShapeRun[] = [];
      const order = Array.from({ length: rounds }, (_, round) => SHAPES.map((shape) => ({ shape, round: round + 1 }))).flat();
      if (rounds === 1) order.push({ shape: SHAPES[0]!, round: 2 });
      for (const { shape, round } of order) {
        for (let g = env.gatewayUrls().length; g < shape.gateways; g++) await env.startWorker("gateway", `gateway ${g + 1}`);
        for (let g = env.gatewayUrls().length; g > shape.gateways; g--) await env.stopWorker(`gateway ${g}`);
        const hosts = () => [...env.workers.values()].filter((w) => w.role === "actor host").length;
        for (let h = hosts(); h < shape.actorHosts; h++) await env.startWorker("actor host", `actor host ${h + 1}`);
        for (let h = hosts(); h > shape.actorHosts; h--) await env.stopWorker(`actor host ${h}`);
        const cs = await clients();
        const label = `${shape.title}, run ${round}`;
        await ctx.quiet();
        // Warm-up of this shape: every agent's connection to its gateway, every actor host's consumer, every
        // agent's session and data key on its gateway.
        const warm = memoryTexts(agents, nextText);
        nextText += agents;
        await Promise.all(cs.map(async (c, a) => {
          await retrying(() => c.rememberAndWait(warm[a]!, `scaling-warmup-${shape.key}`, 120_000));
          await retrying(() => c.recall(qs[q++ % qs.length]!, { namespace: RECALL_NS, limit: 10 }));
        }));
        log(`scaling ${label}: idle for ${idleSeconds} s ...`);
        const idle = await cpuOver(ctx, () => sleep(idleSeconds * 1000));
        const idleMsPerSecond = Object.fromEntries(Object.entries(idle.cpuMs).map(([l, ms]) => [l, ms / idle.seconds]));
        const texts = memoryTexts(agents * 400, nextText);
        let t = 0;
        log(`scaling ${label}: remember → done, ${agents} agents for ${seconds} s ...`);
        const remember = await timedWindow(ctx, agents, seconds, async (a) => {
          const job = await cs[a]!.rememberAndWait(texts[t++ % texts.length]!, `scaling-${shape.key}`, 120_000);
          if (job.status !== "done") throw new Error(`job ${job.job_id} ${job.status}: ${job.error ?? ""}`);
        });
        nextText += t;
        const alone = (window: Window) => byRole(env, pool([{ window, idleMsPerSecond }]));
        log(`  ${(remember.ops / remember.seconds).toFixed(1)} memories/s, ${remember.errors} errors${remember.firstError ? ` (${remember.firstError})` : ""}; CPU ms per memory: ${cpuLine(alone(remember))}`);
        await ctx.quiet();
        log(`scaling ${label}: recall, ${agents} agents for ${seconds} s ...`);
        const recall = await timedWindow(ctx, agents, seconds, async (a) => {
          const r = await cs[a]!.recall(qs[q++ % qs.length]!, { namespace: RECALL_NS, limit: 10 });
          if (r.results.length === 0) throw new Error("recall answered no memory");
        });
        log(`  ${(recall.ops / recall.seconds).toFixed(1)} recalls/s, ${recall.errors} errors${recall.firstError ? ` (${recall.firstError})` : ""}; CPU ms per recall: ${cpuLine(alone(recall))}`);
        runs.push({ shape, round, idleMsPerSecond, remember, recall });
      }
      return report(env, runs, { agents, seconds, idleSeconds, rounds }, started, t0);
    } finally {
      await dispatcher.close();
    }
  });
}

function report(env: ClusterEnv, runs: ShapeRun[], p: { agents: number; seconds: number; idleSeconds: number; rounds: number }, started: Date, t0: number): SectionResult {
  const unit: Record<Kind, string> = { remember: "memory", recall: "recall" };
  const of = (key: Shape["key"], kind: Kind, only?: (r: ShapeRun) => boolean) => pooled(runs.filter((r) => r.shape.key === key && (!only || only(r))), kind);
  // With one round, the last (a) only shows the drift: the shapes are compared on the first round.
  const compared = p.rounds === 1 ? (r: ShapeRun) => r.round === 1 : undefined;
  const rows: Row[] = [];
  const perShape: Record<string, Record<Kind, { perSecond: number; cpu: RoleCpu }>> = {};
  for (const shape of SHAPES) {
    perShape[shape.key] = {} as Record<Kind, { perSecond: number; cpu: RoleCpu }>;
    for (const kind of ["remember", "recall"] as const) {
      const all = of(shape.key, kind, compared);
      const cpu = byRole(env, all);
      const perSecond = all.ops / all.seconds;
      perShape[shape.key]![kind] = { perSecond, cpu };
      const load = kind === "remember" ? `remember → done (${p.agents} agents, closed loop)` : `recall (${p.agents} agents, ${RECALL_MEMORIES} memories each, limit 10)`;
      rows.push(
        { metric: `${shape.title}: ${load}`, measured: `${perSecond.toFixed(1)} ${kind === "remember" ? "memories" : "recalls"}/s (${all.ops} in ${all.seconds.toFixed(0)} s, ${all.errors} errors), ${latencyLine(summarize(all.latencies), 0)}; other processes on the machine ${all.others.map((o) => `${Math.round(o * 100)} %`).join(", ")} of a core` },
        { metric: `${shape.title}: CPU ms per ${unit[kind]} by role`, measured: cpuLine(cpu) },
      );
    }
  }
  const base = perShape.a!;
  for (const shape of SHAPES.slice(1)) {
    for (const kind of ["remember", "recall"] as const) {
      const s = perShape[shape.key]![kind];
      const ratio = s.cpu.total / base[kind].cpu.total;
      rows.push({
        metric: `${shape.title} ÷ (a): total CPU per ${unit[kind]}`,
        target: `≤ ${GOAL.toFixed(2)}`,
        measured: `${ratio.toFixed(3)} (above idle: ${(s.cpu.aboveIdle / base[kind].cpu.aboveIdle).toFixed(3)}; throughput ${(s.perSecond / base[kind].perSecond).toFixed(2)}×)`,
        pass: ratio <= GOAL && of(shape.key, kind, compared).errors === 0,
      });
    }
  }
  // The drift within the run: (a)'s last measurement against its first.
  const as = runs.filter((r) => r.shape.key === "a");
  const first = as[0]!, last = as[as.length - 1]!;
  for (const kind of ["remember", "recall"] as const) {
    const ratio = byRole(env, pooled([last], kind)).total / byRole(env, pooled([first], kind)).total;
    rows.push({ metric: `drift of the run: (a) run ${last.round} ÷ (a) run ${first.round}, total CPU per ${unit[kind]}`, measured: ratio.toFixed(3) });
  }
  const roleTable = (kind: Kind) =>
    Object.fromEntries(SHAPES.map((shape) => {
      const { perSecond, cpu } = perShape[shape.key]![kind];
      return [shape.key, { perSecond, total: cpu.total, aboveIdle: cpu.aboveIdle, roles: Object.fromEntries([...cpu.roles].map(([role, x]) => [role, { total: x.total, instances: Object.fromEntries(x.instances) }])), outside: Object.fromEntries(cpu.outside) }];
    }));
  return {
    name: "scaling",
    title: "Scaling: CPU per memory per role with 1 and 2 actor hosts and 1 and 2 gateways (three-node JetStream cluster, R3)",
    startedAt: started.toISOString(),
    seconds: (performance.now() - t0) / 1000,
    rows,
    notes: [
      "One environment: three nats-server nodes forming one JetStream cluster (cli/nats-cluster.ts, as `memrelay start --cluster` runs them: nats.conf, encrypted stores), every stream and KV bucket at R3 (NATS_REPLICAS=3); a fresh database on the native Postgres; the services process (local chain, key servers, blob store); each relayer role in its own `memrelay worker --roles` process: gateways, actor hosts, and two projection processes (each batch is a compare-and-set on the read model's checkpoint, so one applies it and the other, the standby, finds it applied). Hashing embedder.",
      `Shapes in rounds (${p.rounds === 1 ? "a, b, c, then a again" : `a, b, c × ${p.rounds}`}), workers started or stopped in between, figures of a shape pooled over its rounds${p.rounds === 1 ? " (the last (a) only for the drift row)" : ""}. Each measurement: a warm-up memory and recall per agent; ${p.idleSeconds} s without load (idle CPU); ${p.seconds} s of closed-loop remember → done (${p.agents} agents, one account each, MemrelayClient.rememberAndWait: POST /api/remember?wait=, then long polls); ${p.seconds} s of closed-loop recall (hybrid ranking, limit 10) in each agent's own namespace of ${RECALL_MEMORIES} memories, the same in every shape. In (c) agent i uses gateway (i mod 2) + 1.`,
      "CPU: utime + stime of every process of the environment from /proc, read every 250 ms over the window, divided by the operations completed in it. The total is over the deployment's roles (gateways, actor hosts, projections, nats-server nodes, services, the bench database's Postgres backends); the bench process (load generator and observer) and Postgres' shared processes (WAL writer, checkpointer: shared with other databases on this server) are listed beside it, not in it. \"Above idle\" subtracts what the same processes used per second with no load (Raft heartbeats, consumer long polls, timers), times the window's length: the part that grows with load, which a saturated deployment pays per memory.",
      "This machine has 2 cores and is shared: throughput cannot grow with more processes, and other processes' load (each window's share is in its row) lowers throughput, which raises the fixed per-second costs' share of each memory. The goal is judged on the total with those costs in, as the issue words it; the ratio above idle is beside it.",
    ],
    data: { ...p, remember: roleTable("remember"), recall: roleTable("recall"), runs: runs.map((r) => ({ shape: r.shape.key, round: r.round, idleMsPerSecond: r.idleMsPerSecond, remember: { ...r.remember, latencies: summarize(r.remember.latencies) }, recall: { ...r.recall, latencies: summarize(r.recall.latencies) } })) },
  };
}
