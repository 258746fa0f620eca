// Blob store benchmark (issue 3, "Performance"): write and public-read throughput and p99 for 1 KiB and 1 MiB blobs
// at 32 concurrent connections through the service, against writing and reading the same bytes straight to the
// backend in the same run; and the service's resident memory while a 100 MiB blob streams in and out.
//
// The service runs in a child process (its own event loop, as in production) on a private nats-server and a fresh
// database; the load generator (undici, keep-alive) and the raw-backend baseline run in this process. A third side,
// the "HTTP floor", serves the same backend through the same uWS layer in the child with no service logic, to tell
// the cost of HTTP from the cost of the service. Sides alternate in 1-second slices; each reports ops/s, p50/p99 and
// its process's CPU per operation, and every comparison records how busy the rest of the machine was.
// The raw side and the floor use the backend the service uses (--backend, default BLOBSTORE_BACKEND or the service's
// default): for "jetstream" the raw side is the same JetStreamBlobBackend called in this process on its own NATS
// connection and bucket (no HTTP, no service logic, no content cache), for "fs" the FsBlobBackend.
//   node --import tsx bench/blobstore.ts [--seconds 4] [--connections 32] [--stream-mib 100] [--backend jetstream|fs] [--out results.json]
// Env (diagnosis): BENCH_ONLY=1KiB|1MiB, BENCH_SKIP_READS=1, BENCH_SKIP_WRITES=1, BENCH_CHILD_NODE_ARGS="--cpu-prof".
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Pool } from "undici";
import { startNatsServer } from "../test/support/nats-server.ts";
import { createTestDatabase } from "../test/support/postgres.ts";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { FsBlobBackend, type BlobBackend } from "../adapters/blob-bytes/backend.ts";
import { JetStreamBlobBackend } from "../adapters/blob-bytes/object-store-backend.ts";
import { bodyBuffers, readBuffers } from "../gateway/recycled-buffers.ts";
import { DEFAULT_BACKEND, type BackendKind } from "../gateway/blobstore/service.ts";
import { blobstoreCommand } from "../cli/blobstore.ts";

export interface BlobBenchOptions {
  /** measured seconds per scenario (after a short warm-up) */
  readonly seconds?: number;
  readonly connections?: number;
  /** size of the streamed blob for the memory measurement */
  readonly streamMiB?: number;
  /** backend of the service, the floor and the raw side (default BLOBSTORE_BACKEND, else the service's default) */
  readonly backend?: BackendKind;
  readonly log?: (line: string) => void;
}

/** A backend of `kind` (JetStream: on its own connection and bucket, so that the sides do not share a socket). */
async function openBackend(kind: BackendKind, natsUrl: string, dir: string, bucket: string): Promise<{ backend: BlobBackend; close(): Promise<void> }> {
  if (kind === "fs") return { backend: new FsBlobBackend(dir), close: async () => undefined };
  const nc: NatsConnection = await connect({ servers: natsUrl, name: `bench-${bucket}`, noAsyncTraces: true });
  const backend = new JetStreamBlobBackend(nc, { bucket });
  await backend.init();
  return { backend, close: () => nc.close() };
}

interface Scenario {
  ops: number;
  seconds: number;
  ops_per_s: number;
  mib_per_s: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
}

const KiB = 1024;
const MiB = 1024 * 1024;

function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

interface Sample {
  lat: number[];
  errors: number;
  seconds: number;
  /** every op run, warm-up included (CPU is measured over the whole slice) */
  all: number;
}

/** Runs `op` on `concurrency` workers for `seconds` (after `warmup` seconds), collecting latencies. */
async function load(concurrency: number, seconds: number, op: (worker: number, i: number) => Promise<boolean>, warmup = 0.3): Promise<Sample> {
  const lat: number[] = [];
  let errors = 0;
  const warmEnd = performance.now() + warmup * 1000;
  const end = warmEnd + seconds * 1000;
  let counter = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (;;) {
        const s = performance.now();
        if (s >= end) return;
        const ok = await op(w, counter++).catch(() => false);
        if (s < warmEnd) continue;
        if (ok) lat.push(performance.now() - s);
        else errors++;
      }
    }),
  );
  // ops started in the window, over the window plus the tail of the last ones still running at its end
  return { lat, errors, seconds: (Math.max(end, performance.now()) - warmEnd) / 1000, all: counter };
}

function summarise(samples: Sample[], size: number): Scenario {
  const lat = samples.flatMap((x) => x.lat);
  const seconds = samples.reduce((a, x) => a + x.seconds, 0);
  const sorted = Float64Array.from(lat).sort();
  const r = (n: number) => Math.round(n * 1000) / 1000;
  return {
    ops: lat.length,
    seconds: r(seconds),
    ops_per_s: Math.round(lat.length / seconds),
    mib_per_s: r((lat.length * size) / MiB / seconds),
    p50_ms: r(percentile(sorted, 50)),
    p99_ms: r(percentile(sorted, 99)),
    errors: samples.reduce((a, x) => a + x.errors, 0),
  };
}

/**
 * Service and backend alternate in short slices, so that whatever else the machine is doing weighs on both
 * sides of the ratio alike.
 */
async function compare(
  ctx: { conns: number; seconds: number; size: number; servicePid: number },
  service: (w: number, i: number) => Promise<boolean>,
  backend: (w: number, i: number) => Promise<boolean>,
  floor: (w: number, i: number) => Promise<boolean>,
) {
  const slices = Math.max(2, Math.round(ctx.seconds));
  const slice = ctx.seconds / slices;
  const m0 = machineCpuMs();
  const own0 = cpuMsOf(process.pid) + cpuMsOf(ctx.servicePid);
  const s: Sample[] = [];
  const b: Sample[] = [];
  const f: Sample[] = [];
  let serviceCpu = 0;
  let backendCpu = 0;
  let floorCpu = 0;
  // the load generator's own CPU (this process) on the HTTP sides: part of what the raw side does not pay
  let serviceClientCpu = 0;
  let floorClientCpu = 0;
  for (let i = 0; i < slices; i++) {
    const c0 = process.cpuUsage();
    b.push(await load(ctx.conns, slice, backend));
    backendCpu += cpuMs(process.cpuUsage(c0));
    let t0 = cpuMsOf(ctx.servicePid);
    let l0 = process.cpuUsage();
    s.push(await load(ctx.conns, slice, service));
    serviceCpu += cpuMsOf(ctx.servicePid) - t0;
    serviceClientCpu += cpuMs(process.cpuUsage(l0));
    t0 = cpuMsOf(ctx.servicePid);
    l0 = process.cpuUsage();
    f.push(await load(ctx.conns, slice, floor));
    floorCpu += cpuMsOf(ctx.servicePid) - t0;
    floorClientCpu += cpuMs(process.cpuUsage(l0));
  }
  const m1 = machineCpuMs();
  const own = cpuMsOf(process.pid) + cpuMsOf(ctx.servicePid) - own0;
  const span = Math.max(1, m1.total - m0.total);
  const sv = summarise(s, ctx.size);
  const bk = summarise(b, ctx.size);
  const fl = summarise(f, ctx.size);
  const perOp = (cpuMs: number, xs: Sample[]) => Math.round((cpuMs * 1000) / Math.max(1, xs.reduce((a, x) => a + x.all, 0)));
  return {
    service: { ...sv, cpu_us_per_op: perOp(serviceCpu, s), client_cpu_us_per_op: perOp(serviceClientCpu, s) },
    backend: { ...bk, cpu_us_per_op: perOp(backendCpu, b) },
    http_floor: { ...fl, cpu_us_per_op: perOp(floorCpu, f), client_cpu_us_per_op: perOp(floorClientCpu, f) },
    throughput_ratio: round(sv.ops_per_s / bk.ops_per_s),
    overhead_pct: round((bk.ops_per_s / sv.ops_per_s - 1) * 100),
    overhead_over_http_floor_pct: round((fl.ops_per_s / sv.ops_per_s - 1) * 100),
    // share of the machine (100 % = all cores) used while this comparison ran, and by processes other than the
    // bench and the service (nats-server and Postgres count as other here, as do unrelated workloads)
    machine_cpu_pct: Math.round(((m1.busy - m0.busy) / span) * 100),
    other_processes_cpu_pct: Math.round(((m1.busy - m0.busy - own) / span) * 100),
  };
}

const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;

/** Machine-wide busy and total CPU time in ms (from /proc/stat). */
function machineCpuMs(): { busy: number; total: number } {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + (f[4] ?? 0);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (total - idle) * 10, total: total * 10 };
}

/** CPU time (user + system) a process has used, in ms (from /proc, 10 ms resolution). */
function cpuMsOf(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : 0;
}

/** Unique content per op without generating megabytes of randomness: a counter stamped into a random base. */
function stamped(base: Buffer, n: number, worker: number): Buffer {
  const b = Buffer.from(base);
  b.writeUInt32LE(n >>> 0, 0);
  b.writeUInt32LE(worker, 4);
  b.writeUInt32LE(process.pid, 8);
  return b;
}

async function startChild(cfg: Record<string, unknown>): Promise<{ child: ChildProcess; url: string; floorUrl: string }> {
  const self = fileURLToPath(import.meta.url);
  const extra = process.env.BENCH_CHILD_NODE_ARGS ? process.env.BENCH_CHILD_NODE_ARGS.split(" ") : [];
  const child = spawn(process.execPath, [...extra, "--import", "tsx", self, "--serve", JSON.stringify(cfg)], { stdio: ["ignore", "pipe", "inherit"] });
  const [url, floorUrl] = await new Promise<[string, string]>((resolve, reject) => {
    let buf = "";
    child.stdout!.on("data", (c: Buffer) => {
      buf += c.toString();
      const m = /READY (\S+) (\S+)/.exec(buf);
      if (m) resolve([m[1], m[2]]);
    });
    child.once("exit", (code) => reject(new Error(`blob store child exited with ${code}`)));
  });
  return { child, url, floorUrl };
}

export async function benchBlobstore(opts: BlobBenchOptions = {}): Promise<Record<string, unknown>> {
  const seconds = opts.seconds ?? 4;
  const conns = opts.connections ?? 32;
  const streamMiB = opts.streamMiB ?? 100;
  const envKind = process.env.BLOBSTORE_BACKEND;
  const kind: BackendKind = opts.backend ?? (envKind === "jetstream" || envKind === "fs" ? envKind : DEFAULT_BACKEND);
  const say = opts.log ?? ((l: string) => process.stderr.write(l + "\n"));
  const nats = await startNatsServer();
  const tdb = await createTestDatabase("bs_bench");
  const dir = mkdtempSync(join(tmpdir(), "memrelay-bsbench-"));
  let child: ChildProcess | undefined;
  const pool: { p?: Pool; f?: Pool } = {};
  let rawClose: (() => Promise<void>) | undefined;
  try {
    const started = await startChild({ natsUrl: nats.url, databaseUrl: tdb.url, dataDir: join(dir, "service"), maxBlobBytes: (streamMiB + 16) * MiB, backend: kind });
    child = started.child;
    const url = started.url;
    const p = (pool.p = new Pool(url, { connections: conns, pipelining: 1, keepAliveTimeout: 30_000 }));
    const fp = (pool.f = new Pool(started.floorUrl, { connections: conns, pipelining: 1, keepAliveTimeout: 30_000 }));
    const call = async (method: "GET" | "PUT" | "POST", path: string, body?: Buffer | string | Readable, headers: Record<string, string> = {}) => {
      const r = await p.request({ method, path, body, headers });
      const chunks: Buffer[] = [];
      for await (const c of r.body) chunks.push(c as Buffer);
      return { status: r.statusCode, body: Buffer.concat(chunks) };
    };

    // an app, an account, a bucket
    const out: string[] = [];
    const rc = await blobstoreCommand(["admin-key", "issue", "--app", "bench", "--json"], { NATS_URL: nats.url, DATABASE_URL: tdb.url }, { out: (l) => out.push(l), err: () => undefined });
    if (rc !== 0) throw new Error("could not issue an admin key");
    const admin = JSON.parse(out[0]).secret as string;
    const acct = JSON.parse((await call("POST", "/accounts", "{}", { authorization: `Bearer ${admin}`, "content-type": "application/json" })).body.toString());
    const auth = { authorization: `Bearer ${acct.api_key.secret}` };
    if ((await call("POST", "/api/v1/buckets", JSON.stringify({ name: "bench" }), { ...auth, "content-type": "application/json" })).status !== 201) throw new Error("bucket");

    const opened = await openBackend(kind, nats.url, join(dir, "raw"), "bench_raw");
    rawClose = opened.close;
    const raw = opened.backend;
    const rawReads = readBuffers();
    const results: Record<string, unknown> = {};
    const only = process.env.BENCH_ONLY; // e.g. "1KiB" to profile one size
    for (const [label, size] of ([["1KiB", KiB], ["1MiB", MiB]] as const).filter(([l]) => !only || l === only)) {
      const base = randomBytes(size);
      // --- writes: unique content per op (identical bytes would be deduplicated, never written)
      say(`writes ${label}`);
      const cmp = { conns, seconds, size, servicePid: child.pid! };
      if (!process.env.BENCH_SKIP_WRITES) results[`write_${label}`] = await compare(
        cmp,
        async (w, i) => (await call("PUT", `/api/v1/buckets/bench/blobs/w${label}/${w}/${i}`, stamped(base, i, w + 1000), auth)).status === 201,
        async (w, i) => {
          await raw.put(stamped(base, i, w));
          return true;
        },
        async (w, i) => {
          const r = await fp.request({ method: "PUT", path: `/floor/x`, body: stamped(base, i, w + 2000) });
          await r.body.dump();
          return r.statusCode === 201;
        },
      );
      if (process.env.BENCH_SKIP_READS) continue;
      // --- public reads of a fixed set of blobs
      const n = size === KiB ? 1000 : 64;
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        const bytes = stamped(base, i, 9999);
        const r = await call("PUT", `/api/v1/buckets/bench/blobs/r${label}/${i}`, bytes, auth);
        ids.push(JSON.parse(r.body.toString()).blob_id);
        await raw.put(bytes);
        await (await fp.request({ method: "PUT", path: "/floor/x", body: bytes })).body.dump();
      }
      say(`reads ${label}`);
      results[`read_${label}`] = await compare(
        cmp,
        async (_w, i) => {
          const r = await p.request({ method: "GET", path: `/api/v1/buckets/bench/blobs/r${label}/${i % n}` });
          let got = 0;
          for await (const c of r.body) got += (c as Buffer).length;
          return r.statusCode === 200 && got === size;
        },
        async (_w, i) => {
          // the same read strategy as the service: whole reads up to 1 MiB into recycled buffers, streams beyond
          const o = await raw.open(ids[i % n], undefined, { inlineBelow: MiB, alloc: rawReads.take });
          if (!o) return false;
          if (o.stream) for await (const _c of o.stream);
          if (o.bytes) rawReads.release(o.bytes);
          return true;
        },
        async (_w, i) => {
          const r = await fp.request({ method: "GET", path: `/floor/${ids[i % n]}` });
          let got = 0;
          for await (const c of r.body) got += (c as Buffer).length;
          return r.statusCode === 200 && got === size;
        },
      );
    }

    // --- memory while streaming a large blob in and out
    async function streaming() {
      say(`streaming ${streamMiB} MiB`);
      const pid = child!.pid!;
      await new Promise((r) => setTimeout(r, 500));
      const idle = rssOf(pid);
      let peak = idle;
      const sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 10);
      const chunk = randomBytes(MiB);
      const body = Readable.from((function* () {
        for (let i = 0; i < streamMiB; i++) yield stamped(chunk, i, 4242);
      })());
      const tUp = performance.now();
      const up = await call("PUT", "/api/v1/buckets/bench/blobs/stream/big", body, auth);
      const upSecs = (performance.now() - tUp) / 1000;
      const peakUp = peak;
      peak = rssOf(pid);
      const tDown = performance.now();
      const r = await p.request({ method: "GET", path: "/api/v1/buckets/bench/blobs/stream/big" });
      let got = 0;
      for await (const c of r.body) got += (c as Buffer).length;
      const downSecs = (performance.now() - tDown) / 1000;
      clearInterval(sampler);
      const peakDown = Math.max(peak, rssOf(pid));
      if (up.status !== 201 || got !== streamMiB * MiB) throw new Error(`streaming failed: ${up.status} ${got}`);
      const mib = (b: number) => Math.round((b / MiB) * 10) / 10;
      results[`stream_${streamMiB}MiB`] = {
        rss_idle_mib: mib(idle),
        rss_peak_upload_mib: mib(peakUp),
        rss_peak_download_mib: mib(peakDown),
        rss_growth_mib: mib(Math.max(peakUp, peakDown) - idle),
        upload_mib_per_s: Math.round(streamMiB / upSecs),
        download_mib_per_s: Math.round(streamMiB / downSecs),
      };
    }
    if (!only) await streaming();
    const w1 = results.write_1MiB as { overhead_pct: number } | undefined;
    const r1 = results.read_1KiB as { service: Scenario } | undefined;
    const rm = results.read_1MiB as { overhead_pct: number } | undefined;
    results.goals = {
      write_1MiB_overhead_le_30pct: w1 ? w1.overhead_pct <= 30 : null,
      read_1MiB_overhead_le_30pct: rm ? rm.overhead_pct <= 30 : null,
      public_1KiB_reads_ge_5000_per_s: r1 ? r1.service.ops_per_s >= 5000 : null,
    };
    const os = await import("node:os");
    results.setup = { connections: conns, seconds_per_scenario: seconds, cpus: os.cpus().length, node: process.version, backend: raw.name, load_average_1m_at_end: os.loadavg()[0] };
    return results;
  } finally {
    await pool.p?.close().catch(() => undefined);
    await pool.f?.close().catch(() => undefined);
    await rawClose?.().catch(() => undefined);
    if (child && child.exitCode === null) {
      await new Promise<void>((resolve) => {
        child!.once("exit", () => resolve());
        child!.kill("SIGTERM");
      });
    }
    await tdb.drop().catch(() => undefined);
    await nats.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

const round = (n: number) => Math.round(n * 1000) / 1000;

/** Child mode: start the service and report its address. */
async function serve(cfg: { natsUrl: string; databaseUrl: string; dataDir: string; maxBlobBytes: number; backend: BackendKind }): Promise<void> {
  const { startBlobstore } = await import("../gateway/blobstore/service.ts");
  const { createLogger } = await import("../config/logger.ts");
  const warnings = createLogger({ sink: (l) => void (/ (WARN|ERROR) /.test(l) && process.stderr.write(l + "\n")) });
  const svc = await startBlobstore({ ...cfg, port: 0, logger: warnings, gc: { intervalMs: 0 } });
  // The HTTP floor: the same listener layer and backend with none of the service (no auth, events, read models).
  const { HttpServer, json } = await import("../gateway/http.ts");
  const floorBackend = (await openBackend(cfg.backend, cfg.natsUrl, join(cfg.dataDir, "floor"), "bench_floor")).backend;
  const floor = new HttpServer({ corsOrigins: [] });
  // the same receive buffers as the service's body routes (part of the HTTP layer, not of the service logic)
  const received = bodyBuffers();
  const reads = readBuffers();
  floor.route("put", "/floor/:id", async (req) => json(201, await floorBackend.put(req.bodyStream!, { release: received.release })), {
    bodyMode: "stream",
    bodyLimit: cfg.maxBlobBytes,
    bodyChunk: received.copy,
  });
  floor.route("get", "/floor/:id", async (req) => {
    const o = await floorBackend.open(req.params[0], undefined, { inlineBelow: MiB, alloc: reads.take });
    if (!o) return json(404, { error: "not found" });
    const bytes = o.bytes;
    return bytes ? { status: 200, body: bytes, sent: () => reads.release(bytes) } : { status: 200, stream: o.stream, length: o.size };
  });
  const floorPort = await floor.listen("127.0.0.1", 0);
  process.stdout.write(`READY ${svc.url} http://127.0.0.1:${floorPort}\n`);
  const stop = () => void svc.stop().finally(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const arg = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  if (arg("--serve")) {
    await serve(JSON.parse(arg("--serve")!));
  } else {
    const results = await benchBlobstore({
      seconds: arg("--seconds") ? Number(arg("--seconds")) : undefined,
      connections: arg("--connections") ? Number(arg("--connections")) : undefined,
      streamMiB: arg("--stream-mib") ? Number(arg("--stream-mib")) : undefined,
      backend: arg("--backend") as BackendKind | undefined,
    });
    const text = JSON.stringify(results, null, 2);
    if (arg("--out")) writeFileSync(arg("--out")!, text + "\n");
    process.stdout.write(text + "\n");
    process.exit(0);
  }
}
