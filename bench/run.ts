// `npm run bench`: memrelay's benchmarks on real NATS (a private nats-server on the repo's nats.conf) and the native
// Postgres (a fresh database), each role of the relayer in its own process. Results: bench/RESULTS.md and
// bench/results.json (merged: sections not run keep their previous results).
//
//   node --import tsx bench/run.ts                      every section (≈ 15–20 min on 2 cores, and ≈ 20 more for scaling)
//   node --import tsx bench/run.ts --only recall        one section (remember, pipeline, use-lite, long-texts, long-relayer, recall, legacy-recall, mcp, peer, replay, rebuild, memory,
//                                                       network, scaling, blobstore, console)
//   node --import tsx bench/run.ts --only remember,pipeline --quick    smaller counts, for a smoke run
// Flags: --plain-nats (JetStream store not encrypted), --cpu-prof (worker processes write V8 CPU profiles to
// bench/profiles/; summarise with `node --import tsx bench/profile-summary.ts <file>`), --no-save.
import { execSync } from "node:child_process";
import { cpus, totalmem } from "node:os";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { Ctx, log } from "./lib/context.ts";
import { repoRoot } from "./lib/processes.ts";
import { ORDER, saveResults, type RunInfo, type SectionResult } from "./lib/report.ts";
import { adminUrl } from "../test/support/postgres.ts";
import { rememberSection } from "./sections/remember.ts";
import { pipelineSection } from "./sections/pipeline.ts";
import { useLiteSection } from "./sections/use-lite.ts";
import { longTextsSection } from "./sections/long-texts.ts";
import { longRelayerSection } from "./sections/long-relayer.ts";
import { recallSection } from "./sections/recall.ts";
import { legacyRecallSection } from "./sections/legacy-recall.ts";
import { mcpSection } from "./sections/mcp.ts";
import { peerSection } from "./sections/peer.ts";
import { replaySection } from "./sections/replay.ts";
import { rebuildSection } from "./sections/rebuild.ts";
import { memorySection } from "./sections/memory.ts";
import { networkSection } from "./sections/network.ts";
import { scalingSection } from "./sections/scaling.ts";
import { blobstoreSection, consoleSection } from "./service-sections.ts";

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(name);
const value = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const onlyArg = value("--only");
const only = onlyArg ? new Set(onlyArg.split(",").map((s) => s.trim())) : undefined;
for (const s of only ?? []) if (!ORDER.includes(s)) {
  console.error(`unknown section ${s}; known: ${ORDER.join(", ")}`);
  process.exit(2);
}
const profileDir = join(repoRoot, "bench", "profiles");
if (flag("--cpu-prof")) mkdirSync(profileDir, { recursive: true });
const ctx = new Ctx({ only, quick: flag("--quick"), encryptedNats: !flag("--plain-nats"), cpuProf: flag("--cpu-prof"), profileDir });
const wants = (s: string) => !only || only.has(s);

async function runInfo(): Promise<RunInfo> {
  const sh = (c: string) => {
    try {
      return execSync(c, { cwd: repoRoot, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    } catch {
      return "unknown";
    }
  };
  const dirty = sh("git status --porcelain") ? " + uncommitted changes" : "";
  const c = new pg.Client({ connectionString: adminUrl() });
  await c.connect();
  const pgv = (await c.query<{ v: string }>("SELECT split_part(version(), ' on ', 1) AS v")).rows[0].v;
  const ext = (await c.query<{ v: string }>("SELECT default_version AS v FROM pg_available_extensions WHERE name = 'vector'")).rows[0]?.v ?? "?";
  const settings = (await c.query<{ name: string; setting: string; unit: string | null }>("SELECT name, setting, unit FROM pg_settings WHERE name IN ('shared_buffers', 'work_mem', 'jit', 'synchronous_commit', 'max_parallel_workers_per_gather')")).rows;
  await c.end();
  return {
    date: new Date().toISOString(),
    git: sh("git rev-parse --short HEAD") + dirty,
    node: `Node ${process.version}`,
    cpus: `${cpus().length} × ${cpus()[0]?.model ?? "cpu"}`,
    memory: `${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM`,
    nats: `${sh("nats-server --version")}${ctx.opts.encryptedNats ? " (repo nats.conf: JetStream file store encrypted with chachapoly)" : " (plain JetStream file store)"}`,
    postgres: `${pgv} with pgvector ${ext} (${settings.map((s) => `${s.name}=${s.setting}${s.unit ?? ""}`).join(", ")})`,
    command: `node --import tsx bench/run.ts ${args.join(" ")}`.trim(),
    layout: [
      "Processes (all on this machine): the bench process (load generator and observer); `memrelay worker --roles gateway`, `--roles actors` and `--roles projections`, one process each; the services process (bench/services-proc.ts: startLocalStack without relayer roles = local chain + JSON-RPC, 3 key servers, blob storage service); nats-server; the native Postgres.",
      "Each environment has its own nats-server (fresh store) and a fresh database on the native Postgres; the USE-lite section runs in a second environment after the first is torn down.",
      "The blobstore and console sections (bench/blobstore.ts, bench/console.ts) run last, each with its own nats-server, fresh database and service processes (see their notes).",
    ],
  };
}

const results: SectionResult[] = [];
const ran: string[] = [];
const info = await runInfo();
const tAll = performance.now();
let failed: unknown;
const stopping = async () => {
  log("interrupted: stopping every process of the run ...");
  await ctx.teardown().catch(() => undefined);
  process.exit(130);
};
process.once("SIGINT", stopping);
process.once("SIGTERM", stopping);
try {
  const sections: [string, () => Promise<SectionResult>][] = [
    ["remember", () => rememberSection(ctx)],
    ["pipeline", () => pipelineSection(ctx)],
    ["recall", () => recallSection(ctx)],
    ["legacy-recall", () => legacyRecallSection(ctx)],
    ["mcp", () => mcpSection(ctx)],
    ["peer", () => peerSection(ctx)],
    ["replay", () => replaySection(ctx)],
    ["rebuild", () => rebuildSection(ctx)],
  ];
  // A section that fails is reported as such and the next ones still run.
  const runSection = async (name: string, fn: () => Promise<SectionResult>) => {
    log(`=== section ${name} ===`);
    const t0 = performance.now();
    try {
      results.push(await fn());
    } catch (err) {
      failed ??= err;
      console.error(err);
      results.push({
        name,
        title: `${name} (failed)`,
        startedAt: new Date().toISOString(),
        seconds: (performance.now() - t0) / 1000,
        rows: [{ metric: "section failed", measured: err instanceof Error ? err.message : String(err), pass: false }],
        notes: ["The section threw before it finished; see the console output of the run."],
        data: {},
      });
    }
    ran.push(name);
    if (!flag("--no-save")) saveResults(info, results);
  };
  for (const [name, fn] of sections) if (wants(name)) await runSection(name, fn);
  await ctx.teardown();
  if (wants("use-lite")) await runSection("use-lite", () => useLiteSection(ctx));
  // Long texts: the model threads and the scheduler in this process (no stack).
  if (wants("long-texts")) await runSection("long-texts", () => longTextsSection(ctx));
  // Long memories and the default configuration's throughput through the relayer: an environment of its own (USE-lite).
  if (wants("long-relayer")) await runSection("long-relayer", () => longRelayerSection(ctx));
  // Remember → done under the local and a network profile: an environment per profile.
  if (wants("network")) await runSection("network", () => networkSection(ctx));
  // CPU per memory per role on a three-node JetStream cluster with 1 and 2 gateways and actor hosts: its own environment.
  if (wants("scaling")) await runSection("scaling", () => scalingSection(ctx));
  // The blob store's and the console's benchmarks: each starts its own nats-server, database and service processes.
  if (wants("blobstore")) await runSection("blobstore", () => blobstoreSection(ctx));
  if (wants("console")) await runSection("console", () => consoleSection(ctx));
} catch (err) {
  failed = err;
  console.error(err);
} finally {
  await ctx.teardown().catch(() => undefined);
}
// Peak memory is sampled for the relayer's processes (the service sections report their own figures; scaling's
// cluster processes are not the layout the memory section describes).
const relayerRan = ran.filter((n) => n !== "blobstore" && n !== "console" && n !== "scaling");
if (relayerRan.length) results.push(memorySection(ctx, relayerRan));
if (ctx.foreign.length) {
  const mean = ctx.foreign.reduce((a, b) => a + b, 0) / ctx.foreign.length;
  const max = Math.max(...ctx.foreign);
  info.layout.push(
    `Other processes on the machine (not part of this run) used on average ${Math.round(mean * 100)} % of one core during the ${ctx.foreign.length} timed windows (max ${Math.round(max * 100)} %; each window's share is in its CPU row). ` +
      (mean > 0.2 ? "**The absolute throughput and latency figures are depressed by that load; the CPU-milliseconds-per-operation rows are not much affected and bound what 2 idle cores can do.**" : "The machine was otherwise quiet."),
  );
}
if (!flag("--no-save") && results.length) saveResults(info, results);
log(`bench finished in ${((performance.now() - tAll) / 1000).toFixed(0)} s${failed ? " (with an error)" : ""}; results in bench/RESULTS.md and bench/results.json`);
for (const r of results) for (const row of r.rows) if (row.pass !== undefined) console.log(`  ${row.pass ? "pass" : "FAIL"}  ${r.name}: ${row.metric}: ${row.measured} (target ${row.target})`);
process.exit(failed ? 1 : 0);
