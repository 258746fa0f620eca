// The console benchmark's run (bench/console.ts): a private nats-server and a fresh database, the services
// processes and the relay floor, one enterprise user; then the upload and the list measurements.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Agent } from "undici";
import { startNatsServer } from "../../test/support/nats-server.ts";
import { createTestDatabase } from "../../test/support/postgres.ts";
import { openEventLog, type EventLog } from "../../eventlog/connection.ts";
import { createPool } from "../../db/pool.ts";
import { readCheckpoint } from "../../projections/runtime.ts";
import { ConsoleLog } from "../../actors/console/log.ts";
import { mintKey, signUp } from "../../actors/console/directory.ts";
import { ConsoleClient } from "../../client/console-client.ts";
import { CONSOLE_PROJECTION } from "../../projections/console/read-models.ts";
import { pidsByCmdline, postgresSharedPids } from "../lib/processes.ts";
import type { ConsoleBenchOptions, ConsoleBenchResult } from "./results.ts";
import { cpuSeconds, machineCpu, type Meter } from "./meter.ts";
import { startServices, stopChild, type ServiceInfo } from "./services.ts";
import { measureUploads } from "./uploads.ts";
import { measureLists } from "./lists.ts";

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

    const uploads = await measureUploads({ say, db, user, key, c, spaceId, agent, info, relayUrl, meter, meterNames, seconds, levels, sizes: opts.sizes ?? [1, 10] });

    const goals = { upload_ratio: 0.8, list_p99_ms: 30 };
    const uploadPass = uploads.length ? uploads.every((u) => u.ratio_accepted >= goals.upload_ratio) : null;
    if (fileCount <= 0) return { layout: opts.layout ?? "split", uploads, list: null, goals, pass: { upload: uploadPass, list: null } };

    const list = await measureLists({ say, db, user, key, c, spaceId, log, dir, fileCount, listRequests: opts.listRequests });
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
