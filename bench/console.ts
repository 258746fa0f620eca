// Developer console benchmark (issue 5, "Done when"):
//   1. upload throughput for 1 MiB and 10 MiB files through the console (multipart, streamed into the blob store),
//      as a ratio to writing the same bytes to the blob store directly (its data API, same account, same
//      concurrency) — goal ≥ 0.8. Reported twice: at the 202 (bytes stored, job queued) and at completion (job
//      verified the object, recorded the blob on chain, file listed as completed). Beside them, the relay floor: the
//      same bytes through a bare HTTP relay into the blob store (the same uWS layer and storage client as the console,
//      nothing else), the best any console that moves the bytes over HTTP could do on the machine. The three sides
//      take turns in slices (each in every position once), so the machine's drift over a run favours none of them.
//   2. list p99 with 100,000 files in one space (spread over 10 buckets): space and bucket listings, every sort,
//      deep cursors and substring search, sequential requests over HTTP — goal ≤ 30 ms.
//
// The services run in child processes on a private nats-server and a fresh database — by default the blob store
// (with the ledger), the console's listener and the console's actors + projections each in its own process, as the
// services scale; `--layout single` runs everything in one process as `memrelay start` does. The relay floor is a
// process of its own. The load generator runs in this process.
//   node --import tsx bench/console.ts [--seconds 6] [--concurrency 1,4] [--sizes 1,10] [--files 100000] [--layout split|single] [--out file.json]
// --files 0 skips the list measurement, --sizes none the uploads. Diagnosis: BENCH_CPU_PROF=<dir> (CPU profiles of the services processes, and
// phase marks on stderr on the same clock), BENCH_CHILD_NODE_ARGS="--trace-gc" (extra node flags for them).
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes, randomUUID, createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Agent, request } from "undici";
import { startNatsServer } from "../test/support/nats-server.ts";
import { createTestDatabase } from "../test/support/postgres.ts";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { createPool } from "../db/pool.ts";
import { encodeCommit, envelope } from "../eventlog/event-store.ts";
import { readCheckpoint } from "../projections/runtime.ts";
import { ConsoleLog } from "../actors/console/log.ts";
import { mintKey, signUp } from "../actors/console/directory.ts";
import { ConsoleClient, multipartBody } from "../client/console-client.ts";
import { AGG, EV, type UploadQueued } from "../schemas/console/events.ts";
import { CONSOLE_PROJECTION } from "../projections/console/read-models.ts";
import { pidsByCmdline, postgresSharedPids } from "./lib/processes.ts";

const MiB = 1024 * 1024;

export interface ConsoleBenchOptions {
  /** measured seconds per upload scenario */
  readonly seconds?: number;
  /** concurrent uploads: every size is measured at each of these (default 1 and 4) */
  readonly concurrency?: readonly number[];
  /** upload sizes in MiB (default 1 and 10) */
  readonly sizes?: readonly number[];
  /** files seeded into one space for the list measurement (0 skips the list measurement) */
  readonly files?: number;
  /** list requests measured */
  readonly listRequests?: number;
  /**
   * split (default): the blob store, the console's listener and the console's actors + projections in three
   * processes, as the services scale (the relayer benchmark splits its roles the same way); single: everything in one
   * process, as `memrelay start` runs it.
   */
  readonly layout?: "split" | "single";
  readonly log?: (line: string) => void;
}

export interface UploadScenario {
  readonly size_mib: number;
  readonly concurrency: number;
  readonly direct_mib_s: number;
  readonly accepted_mib_s: number;
  readonly completed_mib_s: number;
  readonly ratio_accepted: number;
  readonly ratio_completed: number;
  /** a bare HTTP relay into the blob store (the console's transport alone): what any console could reach at best */
  readonly floor_mib_s: number;
  readonly ratio_floor: number;
  readonly direct_p50_ms: number;
  readonly accepted_p50_ms: number;
  readonly completed_p50_ms: number;
  readonly uploads: number;
  /** CPU milliseconds per MiB uploaded, per process (in `processes` order: the services, then the load generator) */
  readonly cpu_ms_per_mib: { readonly processes: readonly string[]; readonly direct: readonly number[]; readonly floor: readonly number[]; readonly console: readonly number[] };
  /** share of the whole machine's CPU in use during each side (1 = every core busy) */
  readonly machine_busy: { readonly direct: number; readonly console: number };
}

export interface ListScenario {
  readonly name: string;
  readonly requests: number;
  readonly p50_ms: number;
  readonly p99_ms: number;
}

export interface ConsoleBenchResult {
  readonly layout: "split" | "single";
  readonly uploads: readonly UploadScenario[];
  /** null when the list measurement was skipped (files: 0) */
  readonly list: { readonly files: number; readonly seed_seconds: number; readonly p50_ms: number; readonly p99_ms: number; readonly scenarios: readonly ListScenario[] } | null;
  readonly goals: { readonly upload_ratio: number; readonly list_p99_ms: number };
  /** null: not measured */
  readonly pass: { readonly upload: boolean | null; readonly list: boolean | null };
}

const pct = (xs: number[], p: number) => {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

// ------------------------------------------------------------------ the services process

interface ServiceInfo {
  consoleUrl?: string;
  relayUrl?: string;
  blobstoreUrl?: string;
  storageApiKey?: string;
  operatorKeyHex?: string;
}

/**
 * A services process. BENCH_ROLE=all: ledger, blob store and console in one process (the `memrelay start`
 * composition); blobstore: ledger and blob store; console-gateway / console-workers: the console's listener, or its
 * actors and projections, against BENCH_BLOBSTORE_URL.
 */
async function serve(): Promise<void> {
  const { LocalChain } = await import("../adapters/chain/local/local-chain.ts");
  const { generateKeypair } = await import("../adapters/chain/local/accounts.ts");
  const { startBlobstore } = await import("../gateway/blobstore/service.ts");
  const { startConsole } = await import("../gateway/console/service.ts");
  const { provisionSponsor, provisionStorage } = await import("../runtime/console-provision.ts");
  const { createLogger } = await import("../config/logger.ts");
  // warnings and errors of the services on stderr (a failed upload says why), nothing else
  const logger = createLogger({ sink: (l) => void (/ (WARN|ERROR) /.test(l) && process.stderr.write(l + "\n")) });
  const env = process.env;
  const role = env.BENCH_ROLE ?? "all";
  if (role === "relay-floor") return serveRelayFloor(env.BENCH_BLOBSTORE_URL!, env.BENCH_STORAGE_KEY!);
  const log = await openEventLog({ servers: env.NATS_URL!, name: `console-bench-${role}` });
  const db = createPool(env.DATABASE_URL!, 24);
  const operator = env.BENCH_OPERATOR_KEY ? Uint8Array.from(Buffer.from(env.BENCH_OPERATOR_KEY, "hex")) : generateKeypair().secretKey;
  const chain = await LocalChain.open(log, { packageId: "0x" + "a1".repeat(32), network: "localnet", operatorKey: operator });
  const stops: (() => Promise<unknown>)[] = [];
  const info: ServiceInfo = { operatorKeyHex: Buffer.from(operator).toString("hex") };
  let storage = { url: env.BENCH_BLOBSTORE_URL ?? "", apiKey: env.BENCH_STORAGE_KEY ?? "" };
  if (role === "all" || role === "blobstore") {
    const blobstore = await startBlobstore({ log, db, port: 0, dataDir: join(env.BENCH_DATA_DIR!, "blobstore"), logger, gc: { intervalMs: 0 } });
    stops.push(() => blobstore.stop());
    storage = await provisionStorage({ log, db, blobstoreUrl: blobstore.url, runners: blobstore.runners, dataDir: env.BENCH_DATA_DIR! });
    Object.assign(info, { blobstoreUrl: blobstore.url, storageApiKey: storage.apiKey });
  }
  if (role !== "blobstore") {
    const sponsorSecretKey = await provisionSponsor({ chain, operatorSecretKey: operator, dataDir: env.BENCH_DATA_DIR! });
    const roles = role === "console-gateway" ? { gateway: true, actors: false, projections: false } : role === "console-workers" ? { gateway: false, actors: true, projections: true } : undefined;
    const console_ = await startConsole({ log, db, chain, storage, sponsorSecretKey, port: 0, logger, limits: { uploadsPerMinute: 0 }, roles });
    stops.unshift(() => console_.stop());
    info.consoleUrl = console_.url;
  }
  process.stdout.write(JSON.stringify(info) + "\n");
  await stopRequested();
  for (const stop of stops) await stop().catch(() => undefined);
  await chain.close();
  await log.close();
  await db.end();
  process.exit(0);
}

/**
 * The relay floor: what any console must do with an upload's bytes and nothing else — the same uWS listener layer
 * (gateway/http.ts, recycled receive buffers) streaming a raw body into the blob store through the console's storage
 * client (adapters/file-storage/blobstore-http.ts), answering with the stored object. No multipart, keys, checks, log or read models.
 */
async function serveRelayFloor(blobstoreUrl: string, apiKey: string): Promise<void> {
  const { HttpServer, json } = await import("../gateway/http.ts");
  const { bodyBuffers } = await import("../gateway/recycled-buffers.ts");
  const { BlobStoreStorage } = await import("../adapters/file-storage/blobstore-http.ts");
  const storage = new BlobStoreStorage({ url: blobstoreUrl, apiKey });
  const slabs = bodyBuffers();
  const server = new HttpServer({ corsOrigins: [] });
  server.route(
    "put",
    "/relay/:bucket/:key",
    async (req) => json(202, await storage.put(req.params[0], req.params[1], req.bodyStream!, "application/octet-stream", (c) => slabs.release(c))),
    { bodyMode: "stream", bodyLimit: Number.MAX_SAFE_INTEGER, bodyChunk: slabs.copy },
  );
  const port = await server.listen("127.0.0.1", 0);
  process.stdout.write(JSON.stringify({ relayUrl: `http://127.0.0.1:${port}` } satisfies ServiceInfo) + "\n");
  await stopRequested();
  server.close();
  await storage.close();
  process.exit(0);
}

/** Resolves when the bench asks a services process to stop (stdin closed, or SIGTERM). */
function stopRequested(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.stdin.on("end", resolve);
    process.stdin.on("close", resolve);
    process.once("SIGTERM", resolve);
    process.stdin.resume();
  });
}

function startServices(env: Record<string, string>): Promise<{ child: ChildProcess; info: ServiceInfo }> {
  const self = fileURLToPath(import.meta.url);
  const prof = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const extra = process.env.BENCH_CHILD_NODE_ARGS ? process.env.BENCH_CHILD_NODE_ARGS.split(" ") : [];
  const child = spawn(process.execPath, [...prof, ...extra, "--import", "tsx", self, "--serve"], { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let buf = "";
    let found = false;
    const tag = env.BENCH_ROLE ?? "services";
    child.stdout!.on("data", (d: Buffer) => {
      buf += d.toString();
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        // the first JSON line is the process's addresses; anything else (e.g. --trace-gc) goes to stderr
        if (!found && line.startsWith("{")) {
          found = true;
          resolve({ child, info: JSON.parse(line) as ServiceInfo });
        } else process.stderr.write(`[${tag}] ${line}\n`);
      }
    });
    child.once("exit", (code) => reject(new Error(`services process exited with ${code}`)));
  });
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  child.stdin?.end();
  await new Promise((r) => {
    const t = setTimeout(() => (child.kill("SIGKILL"), r(undefined)), 10_000);
    child.once("exit", () => (clearTimeout(t), r(undefined)));
  });
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

interface Meter {
  procs: number[];
  busy: number;
  total: number;
}

/** Machine-wide busy and total CPU seconds (all cores), from /proc/stat. */
function machineCpu(): { busy: number; total: number } {
  try {
    const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: (total - f[3] - (f[4] ?? 0)) / 100, total: total / 100 };
  } catch {
    return { busy: 0, total: 0 };
  }
}

// ------------------------------------------------------------------ load

const SIDES = ["direct", "floor", "console"] as const;
type Side = (typeof SIDES)[number];
/** Slices per side in an upload scenario. */
const ROUNDS = 3;
interface SideTotals {
  lat: number[];
  seconds: number;
  /** time after the slices until their uploads were completed (console) */
  settleSeconds: number;
  /** CPU seconds per metered process */
  cpu: number[];
  busy: number;
  total: number;
}

/** Runs `op` on `concurrency` workers for `seconds` after a warm-up; returns latencies (ms) and elapsed seconds. */
async function load(concurrency: number, seconds: number, op: () => Promise<void>, warmupOps = 2): Promise<{ lat: number[]; seconds: number }> {
  for (let i = 0; i < warmupOps; i++) await op();
  const lat: number[] = [];
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await op();
        lat.push(performance.now() - t);
      }
    }),
  );
  return { lat, seconds: (performance.now() - t0) / 1000 };
}

export async function runConsoleBench(opts: ConsoleBenchOptions = {}): Promise<ConsoleBenchResult> {
  const say = opts.log ?? ((l: string) => console.error(l));
  const seconds = opts.seconds ?? 6;
  const levels = opts.concurrency ?? [1, 4];
  const fileCount = opts.files ?? 100_000;
  const nats = await startNatsServer();
  const database = await createTestDatabase("memrelay_bench_console");
  const dataDir = mkdtempSync(join(tmpdir(), "memrelay-console-bench-"));
  const children: ChildProcess[] = [];
  const childNames: string[] = [];
  let log: EventLog | undefined;
  const db = createPool(database.url, 4);
  const agent = new Agent({ connections: Math.max(...levels) * 2 + 4, keepAliveTimeout: 30_000 });
  try {
    const procEnv = { NATS_URL: nats.url, DATABASE_URL: database.url, BENCH_DATA_DIR: dataDir };
    let info: ServiceInfo;
    if ((opts.layout ?? "split") === "single") {
      const started = await startServices({ ...procEnv, BENCH_ROLE: "all" });
      children.push(started.child);
      childNames.push("services");
      info = started.info;
    } else {
      const store = await startServices({ ...procEnv, BENCH_ROLE: "blobstore" });
      children.push(store.child);
      childNames.push("blob store");
      const consoleEnv = { ...procEnv, BENCH_BLOBSTORE_URL: store.info.blobstoreUrl!, BENCH_STORAGE_KEY: store.info.storageApiKey!, BENCH_OPERATOR_KEY: store.info.operatorKeyHex! };
      const workers = await startServices({ ...consoleEnv, BENCH_ROLE: "console-workers" });
      children.push(workers.child);
      childNames.push("console workers");
      const gateway = await startServices({ ...consoleEnv, BENCH_ROLE: "console-gateway" });
      children.push(gateway.child);
      childNames.push("console gateway");
      if (process.env.BENCH_CPU_PROF) say(`pids: ${children.map((ch, i) => `${childNames[i]}=${ch.pid}`).join(" ")}`);
      info = { ...store.info, consoleUrl: gateway.info.consoleUrl };
    }
    const relay = await startServices({ BENCH_ROLE: "relay-floor", BENCH_BLOBSTORE_URL: info.blobstoreUrl!, BENCH_STORAGE_KEY: info.storageApiKey! });
    children.push(relay.child);
    childNames.push("relay floor");
    const relayUrl = relay.info.relayUrl!;
    const meterNames = [...childNames, "bench client", "nats-server", "postgres"];
    const natsPids = pidsByCmdline(join(dirname(nats.storeDir), "nats.conf"));
    const dbName = new URL(database.url).pathname.slice(1);
    const sum = (pids: number[]) => pids.reduce((a, pid) => a + cpuSeconds(pid), 0);
    const meter = (): Meter => ({
      procs: [
        ...children.map((ch) => cpuSeconds(ch.pid)),
        cpuSeconds(process.pid),
        sum(natsPids),
        // the database's backends (pools keep their connections) and Postgres' shared processes (WAL writer, ...)
        sum([...pidsByCmdline(`: postgres ${dbName} `), ...postgresSharedPids()]),
      ],
      ...machineCpu(),
    });
    log = await openEventLog({ servers: nats.url, name: "console-bench" });
    const clog = new ConsoleLog(log);
    const dir = {
      clog,
      settle: async (seq: number) => {
        while ((await readCheckpoint(db, CONSOLE_PROJECTION)) < seq) await new Promise((r) => setTimeout(r, 5));
      },
    };
    const user = await signUp(dir, { email: "bench@example.com", tier: "enterprise" });
    const key = await mintKey(dir, { userId: user.user.user_id, role: "read_write" });
    const c = new ConsoleClient(info.consoleUrl!, key.secret, agent);
    const spaceId = user.space.space_id;

    // ---------------------------------------------------------------- uploads
    const uploads: UploadScenario[] = [];
    for (const sizeMiB of opts.sizes ?? [1, 10]) for (const concurrency of levels) {
      const payload = randomBytes(sizeMiB * MiB);
      // direct: the same bytes, the same concurrency, into one blob-store bucket of the console's own account
      const directBucket = `bench-direct-${sizeMiB}-${concurrency}`;
      await request(`${info.blobstoreUrl}/api/v1/buckets`, { method: "POST", dispatcher: agent, headers: { authorization: `Bearer ${info.storageApiKey}`, "content-type": "application/json" }, body: JSON.stringify({ name: directBucket }) }).then((r) => r.body.dump());
      let n = 0;
      const mark = (what: string) => process.env.BENCH_CPU_PROF && say(`  mark ${what} ${process.hrtime.bigint() / 1000n}`);
      const bucket = await c.createPrivateBucket(spaceId, `bench-${sizeMiB}mib-${concurrency}`, key.service_key!.secret_key);
      // let the access index mirror the grant
      for (;;) {
        try {
          await c.upload(bucket.bucket_id, { bytes: Buffer.from("warm"), filename: "warm" });
          break;
        } catch {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      // distinct bytes per write (content addressing would otherwise deduplicate): vary the first 8 bytes
      const distinct = () => {
        const body = Buffer.from(payload);
        body.writeDoubleLE(Math.random(), 0);
        return body;
      };
      const ids: string[] = [];
      const sides: Record<Side, { op: () => Promise<void>; settle?: (from: number) => Promise<void> }> = {
        direct: {
          op: async () => {
            const r = await request(`${info.blobstoreUrl}/api/v1/buckets/${directBucket}/blobs/o-${n++}`, { method: "PUT", dispatcher: agent, headers: { authorization: `Bearer ${info.storageApiKey}`, "content-type": "application/octet-stream" }, body: distinct() });
            await r.body.dump();
            if (r.statusCode !== 201) throw new Error(`direct write answered ${r.statusCode}`);
          },
        },
        // the relay floor: the same bytes through a bare HTTP relay into the same bucket
        floor: {
          op: async () => {
            const r = await request(`${relayUrl}/relay/${directBucket}/r-${n++}`, { method: "PUT", dispatcher: agent, headers: { "content-type": "application/octet-stream" }, body: distinct() });
            await r.body.dump();
            if (r.statusCode !== 202) throw new Error(`relay floor answered ${r.statusCode}`);
          },
        },
        console: {
          op: async () => void ids.push((await c.upload(bucket.bucket_id, { bytes: distinct(), filename: `f-${n++}.bin` })).id),
          // Completion is observed in the read model from this process (no polling load on the console); a slice
          // ends once its uploads are completed, so no job of it runs during another side's slice.
          settle: async (from) => {
            const t0 = performance.now();
            for (;;) {
              const r = await db.query<{ done: string; other: string }>(
                "SELECT count(*) FILTER (WHERE status = 'completed')::text AS done, count(*) FILTER (WHERE status NOT IN ('uploading', 'completed'))::text AS other FROM console_files WHERE file_id = ANY($1::uuid[])",
                [ids.slice(from)],
              );
              if (Number(r.rows[0].other) > 0) throw new Error("an upload did not complete");
              if (Number(r.rows[0].done) === ids.length - from) return;
              if (performance.now() - t0 > 120_000) throw new Error("uploads did not complete within 120 s");
              await new Promise((res) => setTimeout(res, 10));
            }
          },
        },
      };
      // The sides take turns in short slices, each side in every position once: the machine's state drifts over a
      // run (the page cache fills with the written blobs and writing into it gets dearer), which would otherwise
      // favour whichever side runs first.
      const acc = Object.fromEntries(SIDES.map((k) => [k, { lat: [] as number[], seconds: 0, settleSeconds: 0, cpu: meterNames.map(() => 0), busy: 0, total: 0 }])) as Record<Side, SideTotals>;
      for (let round = 0; round < ROUNDS; round++) {
        for (let i = 0; i < SIDES.length; i++) {
          const side = SIDES[(round + i) % SIDES.length];
          const from = ids.length;
          mark(`${side} ${sizeMiB}x${concurrency} start`);
          const a = meter();
          const r = await load(concurrency, seconds / ROUNDS, sides[side].op);
          const t = performance.now();
          await sides[side].settle?.(from);
          const b = meter();
          mark(`${side} end`);
          const t2 = acc[side];
          t2.lat.push(...r.lat);
          t2.seconds += r.seconds;
          t2.settleSeconds += (performance.now() - t) / 1000;
          b.procs.forEach((x, j) => (t2.cpu[j] += x - a.procs[j]));
          t2.busy += b.busy - a.busy;
          t2.total += b.total - a.total;
        }
      }
      const { direct, floor, console: accepted } = acc;
      const completedLat = (
        await db.query<{ ms: number }>("SELECT extract(epoch FROM upload_finished_at - created_at) * 1000 AS ms FROM console_files WHERE file_id = ANY($1::uuid[])", [ids])
      ).rows.map((r) => Number(r.ms));
      const count = accepted.lat.length;
      const perMiB = (t: SideTotals) => t.cpu.map((x) => round((x * 1000) / Math.max(1, t.lat.length * sizeMiB), 1));
      const [cpuDirect, cpuFloor, cpuConsole] = [perMiB(direct), perMiB(floor), perMiB(accepted)];
      const busy = (t: SideTotals) => round(t.busy / Math.max(1e-9, t.total), 2);
      const directMiBs = (direct.lat.length * sizeMiB) / direct.seconds;
      const floorMiBs = (floor.lat.length * sizeMiB) / floor.seconds;
      const acceptedMiBs = (count * sizeMiB) / accepted.seconds;
      const completedMiBs = (count * sizeMiB) / (accepted.seconds + accepted.settleSeconds);
      const s: UploadScenario = {
        size_mib: sizeMiB,
        concurrency,
        uploads: count,
        direct_mib_s: round(directMiBs, 1),
        accepted_mib_s: round(acceptedMiBs, 1),
        completed_mib_s: round(completedMiBs, 1),
        ratio_accepted: round(acceptedMiBs / directMiBs),
        floor_mib_s: round(floorMiBs, 1),
        ratio_floor: round(floorMiBs / directMiBs),
        ratio_completed: round(completedMiBs / directMiBs),
        direct_p50_ms: round(pct(direct.lat, 50), 1),
        accepted_p50_ms: round(pct(accepted.lat, 50), 1),
        completed_p50_ms: round(pct(completedLat, 50), 1),
        cpu_ms_per_mib: { processes: meterNames, direct: cpuDirect, floor: cpuFloor, console: cpuConsole },
        machine_busy: { direct: busy(direct), console: busy(accepted) },
      };
      say(`  CPU ms per MiB (${meterNames.join(", ")}): direct ${cpuDirect.join(" / ")}, relay floor ${cpuFloor.join(" / ")}, console ${cpuConsole.join(" / ")}; machine busy ${s.machine_busy.direct} / ${s.machine_busy.console}`);
      say(`upload ${sizeMiB} MiB ×${concurrency}: direct ${s.direct_mib_s} MiB/s, relay floor ${s.floor_mib_s} MiB/s (×${s.ratio_floor}), console ${s.accepted_mib_s} MiB/s at 202 (×${s.ratio_accepted}), ${s.completed_mib_s} MiB/s completed (×${s.ratio_completed})`);
      uploads.push(s);
    }

    const goals = { upload_ratio: 0.8, list_p99_ms: 30 };
    const uploadPass = uploads.length ? uploads.every((u) => u.ratio_accepted >= goals.upload_ratio) : null;
    if (fileCount <= 0) return { layout: opts.layout ?? "split", uploads, list: null, goals, pass: { upload: uploadPass, list: null } };

    // ---------------------------------------------------------------- list with 100,000 files
    const buckets: { id: string; storage: string }[] = [];
    for (let i = 0; i < 10; i++) {
      const b = await c.createPrivateBucket(spaceId, `library-${i}`, key.service_key!.secret_key);
      buckets.push({ id: b.bucket_id, storage: (await c.bucket(b.bucket_id)).storage_bucket_name });
    }
    say(`seeding ${fileCount} files through the event log and the console projection ...`);
    const tSeed = performance.now();
    const kinds = [
      ["IMG_", ".jpg", "image/jpeg"],
      ["report-", ".pdf", "application/pdf"],
      ["notes ", ".md", "text/markdown"],
      ["dataset_", ".parquet", "application/octet-stream"],
      ["clip-", ".mp4", "video/mp4"],
    ] as const;
    const base = Date.now() - fileCount * 1000;
    let lastSeq = 0;
    const inFlight = new Set<Promise<void>>();
    for (let i = 0; i < fileCount; i++) {
      const [prefix, ext, mime] = kinds[i % kinds.length];
      const b = buckets[i % buckets.length];
      const fileId = randomUUID();
      const created = new Date(base + i * 1000).toISOString();
      const queued: UploadQueued = {
        file_id: fileId,
        bucket_id: b.id,
        space_id: spaceId,
        name: `${prefix}${String(i).padStart(6, "0")}${ext}`,
        size: 1_000 + ((i * 7919) % 5_000_000),
        mime_type: mime,
        blob_id: createHash("sha256").update(fileId).digest("base64url"),
        md5: "0".repeat(32),
        is_private: true,
        metadata: { seq: i },
        storage_bucket_name: b.storage,
        storage_key: fileId,
        uploader_user_id: user.user.user_id,
        uploader_key_id: key.key_id,
        owner_address: key.service_key!.address,
        name_claim: `f-${b.id}-${i}`,
        created_at: created,
      };
      const ctx = { causationId: fileId, correlationId: fileId };
      const events = [
        envelope(`${AGG.upload}.${fileId}`, { type: EV.uploadQueued, version: 1, data: queued }, ctx),
        envelope(`${AGG.upload}.${fileId}`, { type: EV.uploadStarted, version: 1, data: { started_at: created } }, ctx),
        envelope(`${AGG.upload}.${fileId}`, { type: EV.uploadCompleted, version: 1, data: { storage_object_id: "0x" + "0".repeat(64), completed_at: created, bucket_id: b.id, space_id: spaceId, size: queued.size } }, ctx),
      ];
      const p = log.js.publish(`evt.${AGG.upload}.${fileId}`, encodeCommit({ events })).then((ack) => {
        lastSeq = Math.max(lastSeq, ack.seq);
      });
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
      if (inFlight.size >= 2_000) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    await dir.settle(lastSeq);
    // what autovacuum does after a bulk insert like this one (PostgreSQL 13+ vacuums on inserts too): the visibility
    // map for index-only scans and statistics for the planner
    await db.query("VACUUM ANALYZE console_files");
    const seedSeconds = round((performance.now() - tSeed) / 1000, 1);
    say(`seeded in ${seedSeconds} s; measuring lists ...`);
    const total = (await c.files("spaces", spaceId, { limit: 1 })).pagination.hasMore;
    if (!total) throw new Error("seeding did not reach the read model");

    const deepCursors: string[] = [];
    let cur: string | null = null;
    for (let i = 0; i < 50; i++) {
      const p: { pagination: { nextCursor: string | null } } = await c.files("spaces", spaceId, { limit: 100, ...(cur ? { cursor: cur } : {}) });
      cur = p.pagination.nextCursor;
      if (cur) deepCursors.push(cur);
    }
    const n = opts.listRequests ?? 300;
    const oneFile = (i: number) => `img_${String(((i * 37) % Math.floor(fileCount / 5)) * 5).padStart(6, "0")}`;
    type Page = { data: { name: string }[]; pagination: { hasMore: boolean } };
    // [name, request, check of the answer (run on the warm-up requests: the figures are of correct answers)]
    const scenarios: [string, (i: number) => Promise<Page>, (p: Page, i: number) => boolean][] = [
      ["space, newest first (default)", () => c.files("spaces", spaceId), (p) => p.data.length === 20],
      ["space, 100 per page, deep cursor", (i) => c.files("spaces", spaceId, { limit: 100, cursor: deepCursors[i % deepCursors.length] }), (p) => p.data.length === 100],
      ["space, by name asc", () => c.files("spaces", spaceId, { sortField: "name", sortOrder: "asc" }), (p) => p.data.length === 20],
      ["space, by size desc", () => c.files("spaces", spaceId, { sortField: "size" }), (p) => p.data.length === 20],
      ["space, by type asc", () => c.files("spaces", spaceId, { sortField: "type", sortOrder: "asc" }), (p) => p.data.length === 20],
      ["space, q matching many (\"report\")", () => c.files("spaces", spaceId, { q: "report" }), (p) => p.data.length === 20 && p.data.every((f) => f.name.startsWith("report-"))],
      ["space, by size desc, q matching many", () => c.files("spaces", spaceId, { sortField: "size", q: "report" }), (p) => p.data.length === 20],
      [
        "space, q matching 4 % of files, none among the newest (\"_01\")",
        () => c.files("spaces", spaceId, { q: "_01" }),
        (p) => (fileCount < 20_000 || p.data.length === 20) && p.data.every((f) => f.name.toLowerCase().includes("_01")),
      ],
      // the names sort clip-, dataset_, img_, notes, report-: every match after 80 % of the space
      ["space, by name asc, q matching 20 % of files that sort last", () => c.files("spaces", spaceId, { sortField: "name", sortOrder: "asc", q: "report" }), (p) => p.data.length === 20 && p.data.every((f) => f.name.startsWith("report-"))],
      ["space, q matching one file", (i) => c.files("spaces", spaceId, { q: oneFile(i) }), (p, i) => p.data.length === 1 && p.data[0].name.toLowerCase().startsWith(oneFile(i))],
      ["space, q matching none", () => c.files("spaces", spaceId, { q: "no-such-file" }), (p) => p.data.length === 0],
      ["bucket, newest first", (i) => c.files("buckets", buckets[i % buckets.length].id), (p) => p.data.length === 20],
      // "notes" files are in buckets 2 and 7 only: most of these searches match nothing in the bucket
      ["bucket, by name desc, q", (i) => c.files("buckets", buckets[i % buckets.length].id, { sortField: "name", q: "notes" }), (p) => p.data.every((f) => f.name.startsWith("notes "))],
    ];
    const all: number[] = [];
    const out: ListScenario[] = [];
    for (const [name, fn, ok] of scenarios) {
      for (let i = 0; i < 5; i++) if (!ok(await fn(i), i)) throw new Error(`list ${name}: unexpected answer`);
      const lat: number[] = [];
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await fn(i);
        lat.push(performance.now() - t);
      }
      all.push(...lat);
      out.push({ name, requests: n, p50_ms: round(pct(lat, 50)), p99_ms: round(pct(lat, 99)) });
      say(`list ${name}: p50 ${round(pct(lat, 50))} ms, p99 ${round(pct(lat, 99))} ms`);
    }
    const list = { files: fileCount, seed_seconds: seedSeconds, p50_ms: round(pct(all, 50)), p99_ms: round(pct(all, 99)), scenarios: out };
    return { layout: opts.layout ?? "split", uploads, list, goals, pass: { upload: uploadPass, list: list.p99_ms <= goals.list_p99_ms } };
  } finally {
    await agent.close().catch(() => undefined);
    for (const c of children.reverse()) await stopChild(c);
    await log?.close().catch(() => undefined);
    await db.end().catch(() => undefined);
    await database.drop().catch(() => undefined);
    await nats.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The results as a Markdown section (for bench/RESULTS.md and the README). */
export function consoleBenchMarkdown(r: ConsoleBenchResult): string {
  const lines = [
    "### Developer console",
    "",
    `Layout: ${r.layout === "split" ? "blob store, console listener and console workers in three processes" : "one services process (as memrelay start)"}.`,
    "",
    "| upload | concurrent | direct to blob store | bare relay (floor) | ratio | console, at 202 | ratio | console, completed | ratio | p50 direct / 202, job after 202 | CPU ms per MiB, direct → console |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ...r.uploads.map(
      (u) =>
        `| ${u.size_mib} MiB | ${u.concurrency} | ${u.direct_mib_s} MiB/s | ${u.floor_mib_s} MiB/s | ${u.ratio_floor} | ${u.accepted_mib_s} MiB/s | **${u.ratio_accepted}** | ${u.completed_mib_s} MiB/s | ${u.ratio_completed} | ${u.direct_p50_ms} / ${u.accepted_p50_ms} / ${u.completed_p50_ms} ms | ${u.cpu_ms_per_mib.processes.map((p, i) => `${p} ${u.cpu_ms_per_mib.direct[i]} → ${u.cpu_ms_per_mib.console[i]}`).join("; ")} |`,
    ),
    "",
    `Goal: ratio ≥ ${r.goals.upload_ratio} (${r.pass.upload ? "met" : "not met"} at the 202).`,
  ];
  const l = r.list;
  if (l) {
    lines.push(
      "",
      `| list, ${l.files.toLocaleString("en")} files in one space | p50 | p99 |`,
      "|---|---|---|",
      ...l.scenarios.map((s) => `| ${s.name} | ${s.p50_ms} ms | ${s.p99_ms} ms |`),
      `| **all** | ${l.p50_ms} ms | **${l.p99_ms} ms** |`,
      "",
      `Goal: p99 ≤ ${r.goals.list_p99_ms} ms (${r.pass.list ? "met" : "not met"}). Seeding ${l.files} files took ${l.seed_seconds} s.`,
    );
  }
  return lines.join("\n");
}

const isMain = process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  const args = process.argv.slice(2);
  const val = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  if (args.includes("--serve")) await serve();
  else {
    const r = await runConsoleBench({
      seconds: val("--seconds") ? Number(val("--seconds")) : undefined,
      concurrency: val("--concurrency") ? val("--concurrency")!.split(",").map(Number) : undefined,
      files: val("--files") ? Number(val("--files")) : undefined,
      sizes: val("--sizes") ? (val("--sizes") === "none" ? [] : val("--sizes")!.split(",").map(Number)) : undefined,
      layout: val("--layout") === "single" ? "single" : "split",
    });
    const md = consoleBenchMarkdown(r);
    console.log(md);
    const outFile = val("--out");
    if (outFile) writeFileSync(outFile, JSON.stringify(r, null, 2) + "\n");
    process.exit(0);
  }
}
