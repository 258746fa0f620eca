// Section network: remember → done with N concurrent agents, under the local profile and under a network profile
// (MEMRELAY_NETWORK_PROFILE, default testnet here; docs/network-profile.md), each in an environment of its own, one
// after the other in one run. Each agent is a closed loop of rememberAndWait (the MemWal SDK's call: 202, then wait
// for done). Per-blob mode, the only mode today: the columns are laid out so the quilt mode can add its own. Storage
// cost is the `@mysten/walrus` SDK's `storageCost` of what was stored (each memory's ciphertext as one blob, for one
// epoch, the publisher's default), read from the local Walrus deployment's prices; gas is what the upload wallets paid
// on the local ledger.
import { Agent } from "undici";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { WalrusClient } from "@mysten/walrus";
import type { Ctx } from "../lib/context.ts";
import { log } from "../lib/context.ts";
import { BenchEnv } from "../lib/env.ts";
import { memoryTexts } from "../lib/texts.ts";
import { int, latencyLine, summarize } from "../lib/stats.ts";
import type { Row, SectionResult } from "../lib/report.ts";
import { LocalChain } from "../../adapters/chain/local/local-chain.ts";
import { localWalrusPackageConfig } from "../../adapters/chain/local/walrus-deployment.ts";
import { parseWalletKey } from "../../adapters/chain/wallet-pool.ts";
import { NETWORK_PROFILE_NAMES, type NetworkProfileName } from "../../config/network-profile.ts";

const NAMESPACE = "bench-network";
/** Epochs each blob is stored for (the publisher's default). */
const EPOCHS = 1;

interface ProfileRun {
  readonly profile: NetworkProfileName;
  readonly memories: number;
  readonly failed: number;
  readonly seconds: number;
  readonly latencies: number[];
  readonly cpu: string;
  readonly cpuPerMemory: string;
  /** Smallest units: FROST (WAL) and MIST (SUI). */
  readonly storageCost: bigint;
  readonly gas: bigint;
}

function networkProfileToCompare(): NetworkProfileName {
  const raw = (process.env.MEMRELAY_BENCH_NETWORK_PROFILE ?? "testnet").trim().toLowerCase();
  const name = NETWORK_PROFILE_NAMES.find((n) => n === raw && n !== "local");
  if (!name) throw new Error(`MEMRELAY_BENCH_NETWORK_PROFILE must be testnet or mainnet, not "${raw}"`);
  return name;
}

async function uploadWalletsSui(chain: LocalChain, env: BenchEnv): Promise<bigint> {
  const keys = (env.workerEnv.SERVER_CHAIN_PRIVATE_KEYS ?? "").split(",").filter(Boolean);
  const balances = await Promise.all(keys.map(async (k) => (await chain.balance(parseWalletKey(k).address)).balances.SUI ?? 0n));
  return balances.reduce((a, b) => a + b, 0n);
}

/** The SDK's storageCost of every memory stored in the namespace, each its own blob. */
async function storageCostOf(env: BenchEnv, network: string): Promise<bigint> {
  const walrus = new WalrusClient({ packageConfig: localWalrusPackageConfig(network), suiClient: new SuiJsonRpcClient({ url: env.workerEnv.CHAIN_RPC_URL!, network: "localnet" }) });
  const sizes = await env.db.query<{ size: number; n: string }>("SELECT size, count(*) AS n FROM memories WHERE namespace = $1 GROUP BY size", [NAMESPACE]);
  let total = 0n;
  for (const { size, n } of sizes.rows) total += (await walrus.storageCost(size, EPOCHS)).totalCost * BigInt(n);
  return total;
}

async function runProfile(ctx: Ctx, profile: NetworkProfileName, agents: number, perAgent: number): Promise<ProfileRun> {
  log(`network (${profile}): starting an environment with MEMRELAY_NETWORK_PROFILE=${profile} ...`);
  // Any free port for the MCP sidecar: its default (9000) may be another stack's on a shared machine.
  const env = await BenchEnv.start({ embedder: "hashing", encryptedNats: ctx.opts.encryptedNats, label: `network-${profile}`, workerNodeArgs: ctx.workerNodeArgs(), extraEnv: { MEMRELAY_NETWORK_PROFILE: profile, SIDECAR_URL: "http://127.0.0.1:0" } }, ctx.sampler);
  const dispatcher = new Agent({ connections: agents * 2, keepAliveTimeout: 30_000 });
  try {
    for (const role of ["gateway", "projections", "actors"] as const) await env.startRole(role);
    const ids = await Promise.all(Array.from({ length: agents }, (_, i) => env.identity(`bench-network-${profile}-${i}`)));
    const clients = await Promise.all(ids.map((who) => env.client(who, dispatcher)));
    const texts = memoryTexts(agents * (perAgent + 1), 40_000);
    log(`network (${profile}): warm-up, one memory per agent ...`);
    await Promise.all(clients.map((c, i) => c.rememberAndWait(texts[i]!, `${NAMESPACE}-warmup`, 120_000)));
    const chain = await LocalChain.open(env.log, { packageId: env.workerEnv.MEMORY_PACKAGE_ID!, network: env.workerEnv.CHAIN_NETWORK!, healIntervalMs: 0 });
    try {
      await ctx.quiet();
      const suiBefore = await uploadWalletsSui(chain, env);
      const latencies: number[] = [];
      let failed = 0;
      log(`network (${profile}): ${agents} agents × ${perAgent} memories, remember → done ...`);
      const window = await ctx.cpuWindow(() =>
        Promise.all(
          clients.map(async (c, a) => {
            for (let k = 0; k < perAgent; k++) {
              const t0 = performance.now();
              const job = await c.rememberAndWait(texts[agents + a * perAgent + k]!, NAMESPACE, 300_000);
              if (job.status === "done") latencies.push(performance.now() - t0);
              else failed++;
            }
          }),
        ),
      );
      const memories = latencies.length;
      const gas = suiBefore - (await uploadWalletsSui(chain, env));
      const storageCost = await storageCostOf(env, env.workerEnv.CHAIN_NETWORK!);
      const s = summarize(latencies);
      log(`network (${profile}): ${(memories / window.seconds).toFixed(1)} memories/s, ${latencyLine(s)}, ${failed} failed; CPU ms per memory: ${window.perOp(memories)}`);
      return { profile, memories, failed, seconds: window.seconds, latencies, cpu: window.cpu, cpuPerMemory: window.perOp(memories), storageCost, gas };
    } finally {
      await chain.close();
    }
  } finally {
    await dispatcher.close();
    await env.teardown();
  }
}

export async function networkSection(ctx: Ctx): Promise<SectionResult> {
  const started = new Date();
  const t0 = performance.now();
  const agents = Number(process.env.MEMRELAY_BENCH_NETWORK_AGENTS ?? ctx.n(256, 32));
  const perAgent = Number(process.env.MEMRELAY_BENCH_NETWORK_PER_AGENT ?? ctx.n(8, 3));
  const profiles: NetworkProfileName[] = ["local", networkProfileToCompare()];
  const runs: ProfileRun[] = [];
  for (const p of profiles) runs.push(await runProfile(ctx, p, agents, perAgent));
  const thr = (r: ProfileRun) => r.memories / r.seconds;
  const per1000 = (x: bigint, r: ProfileRun) => (r.memories ? (x * 1000n) / BigInt(r.memories) : 0n);
  const rows: Row[] = runs.flatMap((r) => {
    const s = summarize(r.latencies);
    const label = `per-blob, ${r.profile} profile`;
    return [
      { metric: `${label}: remember → done throughput (${agents} agents × ${perAgent})`, measured: `${thr(r).toFixed(1)} memories/s (${int(r.memories)} done, ${r.failed} failed, ${r.seconds.toFixed(1)} s)` },
      { metric: `${label}: remember → done latency`, measured: latencyLine(s, 0) },
      { metric: `${label}: storage cost per 1,000 memories (SDK storageCost, ${EPOCHS} epoch, local prices)`, measured: `${int(Number(per1000(r.storageCost, r)))} FROST` },
      { metric: `${label}: gas per 1,000 memories (upload wallets, local ledger)`, measured: `${int(Number(per1000(r.gas, r)))} MIST` },
      { metric: `${label}: CPU per process (1 core = 100 %)`, measured: r.cpu },
      { metric: `${label}: CPU ms per memory`, measured: r.cpuPerMemory },
    ];
  });
  const [local, net] = runs as [ProfileRun, ProfileRun];
  rows.push({ metric: `per-blob: throughput, ${net.profile} ÷ local profile`, measured: `${(thr(net) / thr(local)).toFixed(2)}×` });
  return {
    name: "network",
    title: "Network profile: remember → done under the local and a network profile (per-blob mode)",
    startedAt: started.toISOString(),
    seconds: (performance.now() - t0) / 1000,
    rows,
    notes: [
      `Each profile in an environment of its own (nats-server, database, services process, gateway/projections/actors workers) started with MEMRELAY_NETWORK_PROFILE; ${agents} agents (one account each), each a closed loop of ${perAgent} rememberAndWait calls (POST /api/remember?wait=, then long polls) after one warm-up memory; latency is the call's, from the request to done.`,
      `Under ${net.profile}, the ledger of the actor host waits Sui's owned-object finality per transaction and applies the owned-object rule; the blob store's Walrus publisher waits register + slivers + certify per new blob; figures in docs/network-profile.md.`,
      "Storage cost: `WalrusClient.storageCost(size, 1)` per memory (its ciphertext stored as one blob), summed, against the local Walrus deployment (10 shards; 100 FROST per unit per epoch, 200 per unit written), so the figure compares modes, not networks. Gas: the SUI the upload wallets paid on the local ledger (record_blob transactions); the local publisher's register/certify transactions are not charged on the ledger (2 per blob on Walrus).",
      "The goals of issue 31 compare quilt mode with per-blob mode; the quilt uploader is not built yet, so this section reports per-blob only and no goal is judged here.",
    ],
    data: { agents, perAgent, runs: runs.map((r) => ({ ...r, latencies: summarize(r.latencies), storageCost: r.storageCost.toString(), gas: r.gas.toString() })) },
  };
}
