// The benchmarks of the blob storage service (bench/blobstore.ts, issue 3) and of the developer console
// (bench/console.ts, issue 5) as sections of `npm run bench` (`--only blobstore`, `--only console`). Each starts its
// own nats-server, fresh database and service processes; both scripts still run on their own.
import { log, type Ctx } from "./lib/context.ts";
import type { Row, SectionResult } from "./lib/report.ts";
import { benchBlobstore } from "./blobstore/run.ts";
import { runConsoleBench } from "./console/run.ts";

/** Waits (bounded) for a quiet machine and says how busy the rest of it was. */
async function othersNote(ctx: Ctx): Promise<string> {
  const others = await ctx.quiet().catch(() => undefined);
  if (others === undefined) return "";
  ctx.foreign.push(others);
  return `Processes outside this run used ${Math.round(others * 100)} % of one core just before it started${others > 0.2 ? " (**a busy machine: throughputs are depressed**)" : ""}.`;
}

interface Side {
  ops_per_s: number;
  mib_per_s: number;
  p50_ms: number;
  p99_ms: number;
  cpu_us_per_op: number;
  client_cpu_us_per_op?: number;
  nats_cpu_us_per_op?: number;
  postgres_cpu_us_per_op?: number;
}
interface Comparison {
  service: Side;
  backend: Side;
  http_floor: Side;
  overhead_pct: number;
  overhead_over_http_floor_pct: number;
  machine_cpu_pct: number;
  other_processes_cpu_pct: number;
}

export async function blobstoreSection(ctx: Ctx): Promise<SectionResult> {
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const before = await othersNote(ctx);
  const seconds = ctx.n(4, 1);
  const connections = 32;
  const streamMiB = ctx.n(100, 20);
  const r = await benchBlobstore({ seconds, connections, streamMiB, log: (l) => log(`  ${l}`) });
  const c = (k: string) => r[k] as Comparison | undefined;
  const rows: Row[] = [];
  const side = (s: Side) =>
    `${s.ops_per_s.toLocaleString("en-US")}/s (${s.mib_per_s} MiB/s), p50 ${s.p50_ms} ms, p99 ${s.p99_ms} ms, ${s.cpu_us_per_op} µs CPU/op` +
    (s.client_cpu_us_per_op === undefined ? "" : ` (+ load generator ${s.client_cpu_us_per_op}, nats-server ${s.nats_cpu_us_per_op ?? "?"}, Postgres ${s.postgres_cpu_us_per_op ?? "?"} µs)`);
  const busy = (x: Comparison) => `machine ${x.machine_cpu_pct} % busy, other processes ${x.other_processes_cpu_pct} %`;
  const r1k = c("read_1KiB");
  if (r1k) rows.push({ metric: `public 1 KiB reads, ${connections} connections`, target: "≥ 5,000/s", measured: `${r1k.service.ops_per_s.toLocaleString("en-US")}/s, p99 ${r1k.service.p99_ms} ms`, pass: r1k.service.ops_per_s >= 5000 });
  for (const [key, what] of [["write_1MiB", "1 MiB writes"], ["read_1MiB", "1 MiB reads"]] as const) {
    const x = c(key);
    if (!x) continue;
    rows.push({
      metric: `${what}: slower than the raw backend (backend ÷ service throughput − 1)`,
      target: "≤ 30 %",
      measured: `${Math.round(x.overhead_pct)} % (service ${x.service.mib_per_s} vs backend ${x.backend.mib_per_s} MiB/s; ${Math.round(x.overhead_over_http_floor_pct)} % slower than a bare uWS endpoint moving the same bytes)`,
      pass: x.overhead_pct <= 30,
    });
    // Issue 15: the same bytes against their own floor, a bare uWS endpoint over the same backend, in the same run.
    const ratio = x.service.mib_per_s / x.http_floor.mib_per_s;
    rows.push({
      metric: `${what}: service ÷ a bare uWS endpoint moving the same bytes (issue 15)`,
      target: "≥ 0.9×",
      measured: `${ratio.toFixed(2)}× (${x.service.mib_per_s} vs ${x.http_floor.mib_per_s} MiB/s)`,
      pass: ratio >= 0.9,
    });
  }
  for (const [key, what] of [["write_1KiB", "1 KiB writes"], ["read_1KiB", "1 KiB reads"], ["write_1MiB", "1 MiB writes"], ["read_1MiB", "1 MiB reads"]] as const) {
    const x = c(key);
    if (!x) continue;
    rows.push({ metric: `${what}: service`, measured: side(x.service) });
    rows.push({ metric: `${what}: raw backend, in process`, measured: side(x.backend) });
    rows.push({ metric: `${what}: bare uWS endpoint over the backend ("HTTP floor")`, measured: `${side(x.http_floor)}; ${busy(x)}` });
  }
  const stream = r[`stream_${streamMiB}MiB`] as { rss_idle_mib: number; rss_peak_upload_mib: number; rss_peak_download_mib: number; rss_growth_mib: number; upload_mib_per_s: number; download_mib_per_s: number } | undefined;
  if (stream) {
    rows.push({
      metric: `resident memory of the service while one ${streamMiB} MiB blob streams in and out`,
      target: "flat",
      measured: `idle ${stream.rss_idle_mib} MiB, peak ${stream.rss_peak_upload_mib} MiB up / ${stream.rss_peak_download_mib} MiB down (+${stream.rss_growth_mib} MiB); ${stream.upload_mib_per_s} / ${stream.download_mib_per_s} MiB/s`,
      pass: stream.rss_growth_mib < streamMiB / 2,
    });
  }
  const setup = r.setup as { backend?: string; load_average_1m_at_end?: number } | undefined;
  return {
    name: "blobstore",
    title: "6. Blob storage service (issue 3)",
    startedAt,
    seconds: (performance.now() - t0) / 1000,
    rows,
    notes: [
      `\`node --import tsx bench/blobstore.ts\` as a section: the service in a child process (its own event loop) on a private nats-server and a fresh database, ${connections} keep-alive connections from this process; service, raw backend (${setup?.backend ?? "?"}, called in this process) and the HTTP floor alternate in slices of about a second, each side in every position (the raw side, run in this process, weighed on whichever side followed it), ${seconds} s each per scenario.`,
      "Overhead = raw backend ops/s ÷ service ops/s − 1. \"Flat\" memory: the service's resident set grows by less than half the streamed size (it streams, never buffers a blob).",
      ...(before ? [before] : []),
    ],
    data: r,
  };
}

export async function consoleSection(ctx: Ctx): Promise<SectionResult> {
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const before = await othersNote(ctx);
  const files = ctx.n(100_000, 10_000);
  const r = await runConsoleBench({ seconds: ctx.n(6, 2), concurrency: ctx.opts.quick ? [4] : [1, 4], files, listRequests: ctx.n(300, 60), log: (l) => log(`  ${l}`) });
  const rows: Row[] = [];
  for (const u of r.uploads) {
    rows.push({
      metric: `upload ${u.size_mib} MiB × ${u.concurrency} concurrent: console ÷ direct to the blob store, at the 202`,
      target: `≥ ${r.goals.upload_ratio}`,
      measured: `${u.ratio_accepted} (${u.accepted_mib_s} vs ${u.direct_mib_s} MiB/s; at completion ${u.ratio_completed}; p50 ${u.accepted_p50_ms} vs ${u.direct_p50_ms} ms)`,
      pass: u.ratio_accepted >= r.goals.upload_ratio,
    });
    rows.push({
      metric: `upload ${u.size_mib} MiB × ${u.concurrency}: bare HTTP relay into the blob store ÷ direct (the floor of any console that moves the bytes)`,
      measured: `${u.ratio_floor} (${u.floor_mib_s} MiB/s)`,
    });
    // Issue 15's goal for the console: 1 MiB uploads, 4 concurrent, against the relay floor of the same run.
    const overFloor = u.accepted_mib_s / u.floor_mib_s;
    const goal = u.size_mib === 1 && u.concurrency === 4;
    rows.push({
      metric: `upload ${u.size_mib} MiB × ${u.concurrency}: console ÷ the relay floor${goal ? " (issue 15)" : ""}`,
      target: goal ? "≥ 0.85×" : undefined,
      measured: `${overFloor.toFixed(2)}×`,
      pass: goal ? overFloor >= 0.85 : undefined,
    });
  }
  for (const u of r.uploads) {
    const cpu = u.cpu_ms_per_mib;
    const sum = (xs: readonly number[]) => Math.round(xs.reduce((a, b) => a + b, 0) * 10) / 10;
    rows.push({
      metric: `upload ${u.size_mib} MiB × ${u.concurrency}: CPU ms per MiB, direct → relay floor → console`,
      measured: `${cpu.processes.map((p, i) => `${p} ${cpu.direct[i]} → ${cpu.floor[i]} → ${cpu.console[i]}`).join("; ")}; sum ${sum(cpu.direct)} → ${sum(cpu.floor)} → ${sum(cpu.console)} (machine busy ${Math.round(u.machine_busy.direct * 100)} % → ${Math.round(u.machine_busy.console * 100)} %)`,
    });
  }
  const l = r.list;
  if (l) {
    rows.push({
      metric: `list p99, ${l.files.toLocaleString("en-US")} files in one space (every scenario below, ${l.scenarios[0]?.requests ?? 0} sequential requests each)`,
      target: `≤ ${r.goals.list_p99_ms} ms`,
      measured: `${l.p99_ms} ms (p50 ${l.p50_ms} ms)`,
      pass: l.p99_ms <= r.goals.list_p99_ms,
    });
    for (const s of l.scenarios) rows.push({ metric: `list: ${s.name}`, measured: `p50 ${s.p50_ms} ms, p99 ${s.p99_ms} ms` });
  }
  return {
    name: "console",
    title: "7. Developer console (issue 5)",
    startedAt,
    seconds: (performance.now() - t0) / 1000,
    rows,
    notes: [
      `\`node --import tsx bench/console.ts\` as a section (layout: ${r.layout === "split" ? "blob store, console listener and console workers (actors + projections) in three processes" : "one services process"}, on a private nats-server and a fresh database; the load generator is this process).`,
      "Uploads: multipart POSTs of distinct random bytes, closed loop at the given concurrency; \"direct\" PUTs the same bytes to the blob store's data API with the console's own storage account, at the same concurrency; the \"relay floor\" sends them through a bare HTTP relay into the blob store (the console's uWS layer and storage client, no multipart, keys, checks, log or read models: what any console moving the bytes over HTTP pays at least). The three sides take turns in three slices each, every side in every position once (the page cache filling with written blobs makes later writes dearer). The ratio is MiB/s through the console at the 202 (bytes stored, job queued) over MiB/s direct; \"at completion\" counts each console slice until its uploads are completed in the read model.",
      "CPU per MiB is user + system time from /proc of each process over each side (the blob store does the same work either way; the console adds its listener, its upload job and their NATS and Postgres traffic).",
      `Lists: ${l ? `${l.files.toLocaleString("en-US")} files seeded as upload events through the console projection (${l.seed_seconds} s), spread over 10 buckets; sequential GETs over HTTP with an API key; each answer's contents are checked during the warm-up.` : "not measured."}`,
      ...(before ? [before] : []),
    ],
    data: r as unknown as Record<string, unknown>,
  };
}
