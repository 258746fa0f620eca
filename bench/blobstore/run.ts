// The blob store benchmark's run (bench/blobstore.ts): a private nats-server and a fresh database, the service in a
// child process with an app, an account and a bucket; writes and public reads per size against the raw backend and
// the HTTP floor, then the service's memory while a large blob streams in and out.
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { Pool } from "undici";
import { startNatsServer } from "../../test/support/nats-server.ts";
import pg from "pg";
import { adminUrl, createTestDatabase } from "../../test/support/postgres.ts";
import { readBuffers } from "../../gateway/recycled-buffers.ts";
import { DEFAULT_BACKEND, type BackendKind } from "../../gateway/blobstore/options.ts";
import { blobstoreCommand } from "../../cli/blobstore.ts";
import { compare, type Backing, type Scenario } from "./measure.ts";
import { openBackend, startChild } from "./service-process.ts";

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

const KiB = 1024;
const MiB = 1024 * 1024;

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
  let stats: pg.Client | undefined;
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

    // nats-server and the Postgres backends of the bench database, for their CPU per operation
    stats = new pg.Client({ connectionString: adminUrl() });
    await stats.connect();
    const statsClient = stats;
    const backing: Backing = {
      natsPid: nats.pid!,
      postgresPids: async () =>
        (await statsClient.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [tdb.name])).rows.map((r) => r.pid),
    };
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
      const cmp = { conns, seconds, size, servicePid: child.pid!, backing };
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
    await stats?.end().catch(() => undefined);
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
