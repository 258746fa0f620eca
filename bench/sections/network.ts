// Section network: remember → done with N concurrent agents, under the local profile and under a network profile
// (MEMRELAY_NETWORK_PROFILE, default testnet here; docs/network-profile.md), each in an environment of its own, one
// after the other in one run. Each agent is a closed loop of rememberAndWait (the MemWal SDK's call: 202, then wait
// for done). Both store modes (MEMRELAY_STORE_MODE blob and quilt) under both profiles. Storage cost is the
// `@mysten/walrus` SDK's `storageCost` of what was stored (per-blob: each memory's ciphertext as one blob; quilt: each
// quilt the memories went into; for one epoch, the publisher's default), read from the local Walrus deployment's
// prices; gas is what the upload wallets paid on the local ledger.
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
import { parseQuiltPatchId } from "../../adapters/blobs/quilt-codec.ts";

const NAMESPACE = "bench-network";
/** Epochs each blob is stored for (the publisher's default). */
const EPOCHS = 1;

type StoreModeName = "blob" | "quilt";
const MODE_LABEL: Record<StoreModeName, string> = { blob: "per-blob", quilt: "quilt" };

interface ProfileRun {
  readonly profile: NetworkProfileName;
  readonly mode: StoreModeName;
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

/** The sizes of the blobs the namespace's memories were stored in: each memory's own, or each quilt's (read from the aggregator). */
async function storedBlobSizes(env: BenchEnv, mode: StoreModeName): Promise<number[]> {
  const rows = (await env.db.query<{ blob_id: string; size: number }>("SELECT blob_id, size FROM memories WHERE namespace = $1", [NAMESPACE])).rows;
  if (mode === "blob") return rows.map((r) => r.size);
  const quilts = new Set(rows.map((r) => parseQuiltPatchId(r.blob_id)?.quiltId).filter((q): q is string => !!q));
  const aggregator = env.workerEnv.BLOBSTORE_AGGREGATOR_URL!;
  return Promise.all([...quilts].map(async (q) => (await (await fetch(`${aggregator}/v1/blobs/${q}`)).arrayBuffer()).byteLength));
}

/** The SDK's storageCost of every blob the namespace's memories were stored in. */
async function storageCostOf(env: BenchEnv, network: string, mode: StoreModeName): Promise<bigint> {
  const walrus = new WalrusClient({ packageConfig: localWalrusPackageConfig(network), suiClient: new SuiJsonRpcClient({ url: env.workerEnv.CHAIN_RPC_URL!, network: "localnet" }) });
  const costBySize = new Map<number, bigint>();
  let total = 0n;
  for (const size of await storedBlobSizes(env, mode)) {
    if (!costBySize.has(size)) costBySize.set(size, (await walrus.storageCost(size, EPOCHS)).totalCost);
    total += costBySize.get(size)!;
  }
  return total;
}

async function runProfile(ctx: Ctx, profile: NetworkProfileName, mode: StoreModeName, agents: number, perAgent: number): Promise<ProfileRun> {
  const label = `${profile}, ${MODE_LABEL[mode]}`;
  log(`network (${label}): starting an environment with MEMRELAY_NETWORK_PROFILE=${profile} MEMRELAY_STORE_MODE=${mode} ...`);
  // Any free port for the MCP sidecar: its default (9000) may be another stack's on a shared machine.
  const env = await BenchEnv.start({ embedder: "hashing", encryptedNats: ctx.opts.encryptedNats, label: `network-${profile}-${mode}`, workerNodeArgs: ctx.workerNodeArgs(), extraEnv: { MEMRELAY_NETWORK_PROFILE: profile, MEMRELAY_STORE_MODE: mode, SIDECAR_URL: "http://127.0.0.1:0" } }, ctx.sampler);
  const dispatcher = new Agent({ connections: agents * 2, keepAliveTimeout: 30_000 });
  try {
    for (const role of ["gateway", "projections", "actors"] as const) await env.startRole(role);
    const ids = await Promise.all(Array.from({ length: agents }, (_, i) => env.identity(`bench-network-${profile}-${mode}-${i}`)));
    const clients = await Promise.all(ids.map((who) => env.client(who, dispatcher)));
    const texts = memoryTexts(agents * (perAgent + 1), 40_000);
    log(`network (${label}): warm-up, one memory per agent ...`);
    await Promise.all(clients.map((c, i) => c.rememberAndWait(texts[i]!, `${NAMESPACE}-warmup`, 120_000)));
    const chain = await LocalChain.open(env.log, { packageId: env.workerEnv.MEMORY_PACKAGE_ID!, network: env.workerEnv.CHAIN_NETWORK!, healIntervalMs: 0 });
    try {
      await ctx.quiet();
      const suiBefore = await uploadWalletsSui(chain, env);
      const latencies: number[] = [];
      let failed = 0;
      log(`network (${label}): ${agents} agents × ${perAgent} memories, remember → done ...`);
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
      const storageCost = await storageCostOf(env, env.workerEnv.CHAIN_NETWORK!, mode);
      const s = summarize(latencies);
      log(`network (${label}): ${(memories / window.seconds).toFixed(1)} memories/s, ${latencyLine(s)}, ${failed} failed; CPU ms per memory: ${window.perOp(memories)}`);
      return { profile, mode, memories, failed, seconds: window.seconds, latencies, cpu: window.cpu, cpuPerMemory: window.perOp(memories), storageCost, gas };
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
  for (const mode of ["blob", "quilt"] as const) for (const p of profiles) runs.push(await runProfile(ctx, p, mode, agents, perAgent));
  const thr = (r: ProfileRun) => r.memories / r.seconds;
  const per1000 = (x: bigint, r: ProfileRun) => (r.memories ? (x * 1000n) / BigInt(r.memories) : 0n);
  const rows: Row[] = runs.flatMap((r) => {
    const s = summarize(r.latencies);
    const label = `${MODE_LABEL[r.mode]}, ${r.profile} profile`;
    return [
      { metric: `${label}: remember → done throughput (${agents} agents × ${perAgent})`, measured: `${thr(r).toFixed(1)} memories/s (${int(r.memories)} done, ${r.failed} failed, ${r.seconds.toFixed(1)} s)` },
      { metric: `${label}: remember → done latency`, measured: latencyLine(s, 0) },
      { metric: `${label}: storage cost per 1,000 memories (SDK storageCost, ${EPOCHS} epoch, local prices)`, measured: `${int(Number(per1000(r.storageCost, r)))} FROST` },
      { metric: `${label}: gas per 1,000 memories (upload wallets, local ledger)`, measured: `${int(Number(per1000(r.gas, r)))} MIST` },
      { metric: `${label}: CPU per process (1 core = 100 %)`, measured: r.cpu },
      { metric: `${label}: CPU ms per memory`, measured: r.cpuPerMemory },
    ];
  });
  const [blobLocal, blobNet, quiltLocal, quiltNet] = runs as [ProfileRun, ProfileRun, ProfileRun, ProfileRun];
  const net = blobNet.profile;
  const ratio = (x: bigint, y: bigint) => (y ? (Number(x) / Number(y)).toFixed(4) : "n/a");
  rows.push(
    { metric: `per-blob: throughput, ${net} ÷ local profile`, measured: `${(thr(blobNet) / thr(blobLocal)).toFixed(2)}×` },
    { metric: `quilt ÷ per-blob: storage cost per 1,000 memories, ${net} profile (goal ≤ 1/20 = 0.05)`, measured: ratio(per1000(quiltNet.storageCost, quiltNet), per1000(blobNet.storageCost, blobNet)) },
    { metric: `quilt ÷ per-blob: gas per 1,000 memories, ${net} profile (goal ≤ 0.05)`, measured: ratio(per1000(quiltNet.gas, quiltNet), per1000(blobNet.gas, blobNet)) },
    { metric: `quilt ÷ per-blob: remember → done throughput, ${net} profile (goal ≥ 10×)`, measured: `${(thr(quiltNet) / thr(blobNet)).toFixed(2)}×` },
    { metric: `quilt: throughput, ${net} ÷ local profile (goal ≥ 0.8×)`, measured: `${(thr(quiltNet) / thr(quiltLocal)).toFixed(2)}×` },
  );
  return {
    name: "network",
    title: "Network profile: remember → done under the local and a network profile, per-blob and quilt store modes",
    startedAt: started.toISOString(),
    seconds: (performance.now() - t0) / 1000,
    rows,
    notes: [
      `Each (store mode, profile) in an environment of its own (nats-server, database, services process, gateway/projections/actors workers) started with MEMRELAY_STORE_MODE and MEMRELAY_NETWORK_PROFILE, one after the other in one run; ${agents} agents (one account each), each a closed loop of ${perAgent} rememberAndWait calls (POST /api/remember?wait=, then long polls) after one warm-up memory; latency is the call's, from the request to done.`,
      `Under ${net}, the ledger of the actor host waits Sui's owned-object finality per transaction and applies the owned-object rule; the blob store's Walrus publisher waits register + slivers + certify per new blob; figures in docs/network-profile.md.`,
      "Storage cost: `WalrusClient.storageCost(size, 1)` per stored blob (per-blob: each memory's ciphertext; quilt: each quilt holding the run's memories, its size read back from the aggregator), summed, against the local Walrus deployment (10 shards; 100 FROST per unit per epoch, 200 per unit written), so the figure compares modes, not networks. Gas: the SUI the upload wallets paid on the local ledger (record_blob transactions); the local publisher's register/certify transactions are not charged on the ledger (2 per blob on Walrus).",
      "Quilt mode gathers jobs in flight with the quilt writer's defaults (QUILT_MAX_PATCHES 256, QUILT_MAX_BYTES 8 MiB, QUILT_MAX_WAIT_MS 50). The goal ratios of issue 31 are reported; a --quick run (few agents) does not judge them.",
    ],
    data: { agents, perAgent, runs: runs.map((r) => ({ ...r, latencies: summarize(r.latencies), storageCost: r.storageCost.toString(), gas: r.gas.toString() })) },
  };
}
