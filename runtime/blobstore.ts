// Composes the blob storage service's process (spec/blobstore.md): the event log and database, the byte backend
// (content-addressed, streamed in and out, never buffered whole: adapters/blob-bytes/backend.ts), the read models
// and their projections (projections/blobstore/), the write side (actors/blobstore/commands.ts: decide against the
// log, append, wait for the read model, answer), the HTTP gateway (gateway/blobstore/service.ts) and garbage
// collection. Options and handle: gateway/blobstore/options.ts.
import { join } from "node:path";
import { openEventLog } from "../eventlog/connection.ts";
import { createPool } from "../db/pool.ts";
import { createLogger } from "../config/logger.ts";
import { loadConfig } from "../config/env.ts";
import { namingAddressVariable } from "../config/listen-error.ts";
import { ServiceMetrics } from "../gateway/metrics.ts";
import { registerPipelineGauges } from "../gateway/pipeline-metrics.ts";
import { ProjectionRunner, migrateCheckpoints, readCheckpoint, resetProjection } from "../projections/runtime.ts";
import { waitForProjection } from "../projections/checkpoint-wait.ts";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { FsBlobBackend, type BlobBackend } from "../adapters/blob-bytes/backend.ts";
import { JetStreamBlobBackend } from "../adapters/blob-bytes/object-store-backend.ts";
import { BlobstoreLog } from "../actors/blobstore/log.ts";
import { BLOBSTORE_KINDS, PROJECTION_NAMES, blobstoreProjection } from "../projections/blobstore/read-models.ts";
import { filterOf, type Kind } from "../schemas/blobstore/events.ts";
import { blobstoreCommands, purgeOrphanObjects, type Core } from "../actors/blobstore/commands.ts";
import { Queries } from "../projections/blobstore/queries.ts";
import { MasterKey } from "../actors/blobstore/keys.ts";
import { sweep, type SweepResult } from "../actors/blobstore/gc.ts";
import { DEFAULT_BACKEND, type BlobstoreHandle, type BlobstoreOptions } from "../gateway/blobstore/options.ts";
import { createBlobstoreServer } from "../gateway/blobstore/service.ts";
import { NETWORK_PROFILES } from "../config/network-profile.ts";

export async function startBlobstore(opts: BlobstoreOptions): Promise<BlobstoreHandle> {
  const logger = (opts.logger ?? createLogger()).child({ service: "blobstore" });
  if (!opts.log && !opts.natsUrl) throw new Error("startBlobstore needs natsUrl or log");
  if (!opts.db && !opts.databaseUrl) throw new Error("startBlobstore needs databaseUrl or db");
  const eventLog = opts.log ?? (await openEventLog({ servers: opts.natsUrl!, name: "memrelay-blobstore" }));
  const db = opts.db ?? createPool(opts.databaseUrl!, opts.dbPoolMax ?? 10);
  const root = join(opts.dataDir, "blobstore");
  const config = loadConfig(process.env);
  const kind = opts.backend ?? config.blobstoreBackend ?? DEFAULT_BACKEND;
  let blobConn: NatsConnection | undefined;
  let backend: BlobBackend;
  if (kind === "jetstream") {
    // Blob bytes travel on their own connection when we can open one: a 100 MiB upload does not queue the event
    // log's appends behind it.
    if (opts.natsUrl) blobConn = await connect({ servers: opts.natsUrl, name: "memrelay-blobstore-bytes", maxReconnectAttempts: -1, reconnectTimeWait: 250, noAsyncTraces: true });
    const js = new JetStreamBlobBackend(blobConn ?? eventLog.nc, { hashThreads: opts.hashThreads });
    await js.init();
    backend = js;
  } else if (kind === "fs") backend = new FsBlobBackend(root, { hashThreads: opts.hashThreads });
  else backend = kind;
  const master = opts.masterKeyHex ? MasterKey.fromHex(opts.masterKeyHex) : MasterKey.fromFile(join(root, "master.key"));
  const maxBlobBytes = opts.maxBlobBytes ?? 1024 * 1024 * 1024;
  const settleTimeoutMs = opts.settleTimeoutMs ?? 10_000;
  const walrusEpoch = opts.walrusEpoch ?? 1;
  const gcGraceMs = opts.gc?.graceMs ?? 10 * 60_000;
  const metrics = new ServiceMetrics("blobstore");
  const log = new BlobstoreLog(eventLog);
  const q = new Queries(db);

  await migrateCheckpoints(db);
  const runProjections = opts.runProjections ?? true;
  const runners = {} as Record<Kind, ProjectionRunner>;
  const newRunner = (kind: Kind) => new ProjectionRunner(eventLog, db, blobstoreProjection(kind), logger.child({ projection: kind }));
  registerPipelineGauges(metrics, {
    log: eventLog,
    db,
    projections: BLOBSTORE_KINDS.map((k) => PROJECTION_NAMES[k]),
    runners: () => (runProjections ? BLOBSTORE_KINDS.map((k) => runners[k]) : []),
  });
  if (runProjections) {
    for (const kind of BLOBSTORE_KINDS) runners[kind] = newRunner(kind);
    for (const kind of BLOBSTORE_KINDS) await runners[kind].start();
  } else {
    for (const kind of BLOBSTORE_KINDS) await blobstoreProjection(kind).migrate(db);
  }

  /** Resolves true once the read model of `kind` has applied `seq`: this process's runner, or whichever runs it. */
  const waitApplied = (kind: Kind, seq: number, timeoutMs: number): Promise<boolean> =>
    waitForProjection(db, PROJECTION_NAMES[kind], seq, timeoutMs, runProjections ? runners[kind] : undefined);
  const core: Core = {
    log,
    db,
    async settle(kind, seq) {
      if (!(await waitApplied(kind, seq, settleTimeoutMs))) {
        logger.warn("read model is behind: answering before it reflects the write", { projection: kind, seq });
      }
    },
  };
  const caughtUp = async (timeoutMs = 30_000) => {
    const results = await Promise.all(
      BLOBSTORE_KINDS.map(async (kind) => {
        const seq = await log.lastSeq(filterOf(kind));
        return seq === 0 || waitApplied(kind, seq, timeoutMs);
      }),
    );
    return results.every(Boolean);
  };
  if (!(await caughtUp(30_000))) logger.warn("read models are still catching up with the event log");

  // Fail fast while NATS is away: a request that needs the log gets 503 at once instead of waiting out a timeout.
  let natsUp = true;
  void (async () => {
    for await (const st of eventLog.nc.status()) {
      if (st.type === "disconnect") natsUp = false;
      else if (st.type === "reconnect") natsUp = true;
    }
  })().catch(() => undefined);
  const server = createBlobstoreServer({
    networkProfile: opts.networkProfile ?? NETWORK_PROFILES.local,
    quiltShards: opts.quiltShards ?? config.walrusShards,
    commands: blobstoreCommands(core, master, (bucketId) => q.countObjects(bucketId)),
    log,
    q,
    master,
    backend,
    eventLog,
    db,
    metrics,
    logger,
    corsOrigins: opts.corsOrigins ?? [],
    maxBlobBytes,
    cacheBytes: opts.cacheBytes,
    walrusEpoch,
    natsUp: () => natsUp,
    runProjections,
    runners,
    readModels: { lastSeq: (subjects) => log.lastSeq(subjects), applied: (kind) => readCheckpoint(db, PROJECTION_NAMES[kind]), waitApplied },
  });
  const port = await server.listen(opts.host ?? "127.0.0.1", opts.port ?? 8200).catch(async (err) => {
    // Nothing may outlive a failed start (its runners would keep the process alive, retrying against a closed pool).
    for (const r of Object.values(runners)) await r.stop();
    if (!opts.db) await db.end().catch(() => undefined);
    if (!opts.log) await eventLog.close().catch(() => undefined);
    await blobConn?.drain().catch(() => blobConn?.close());
    return namingAddressVariable("BLOBSTORE_PORT")(err);
  });
  const url = `http://${opts.host && opts.host !== "0.0.0.0" ? opts.host : "127.0.0.1"}:${port}`;
  logger.info("blob storage service listening", { url, backend: backend.name });

  // ---------------------------------------------------------------- garbage collection
  let sweeping: Promise<SweepResult> | undefined;
  const gc = (o: { full?: boolean; graceMs?: number } = {}) =>
    (sweeping ??= (async () => {
      if (o.full) await purgeOrphanObjects(core);
      return sweep({ db, log, backend, graceMs: o.graceMs ?? gcGraceMs, logger, full: o.full });
    })().finally(() => (sweeping = undefined)));
  const intervalMs = opts.gc?.intervalMs ?? 60_000;
  let ticks = 0;
  // Every tick drains the queue of unreferenced blobs; every 60th also scans for strays (bytes or objects).
  const timer = intervalMs > 0 ? setInterval(() => void gc({ full: ++ticks % 60 === 0 }).catch((err) => logger.warn("blob sweep failed", { error: (err as Error).message })), intervalMs) : undefined;
  timer?.unref();

  const replay = async (kinds: readonly Kind[] = BLOBSTORE_KINDS) => {
    if (!runProjections) throw new Error("this instance runs no projections: replay where they run");
    for (const kind of kinds) {
      const old = runners[kind];
      await old.stop();
      await resetProjection(db, old.projection);
      runners[kind] = newRunner(kind);
      await runners[kind].start();
    }
    if (!(await caughtUp(120_000))) throw new Error("replay did not catch up within 120 s");
  };

  let stopped = false;
  return {
    port,
    url,
    backend,
    runners,
    gc,
    caughtUp,
    replay,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (timer) clearInterval(timer);
      server.close();
      await sweeping?.catch(() => undefined);
      for (const r of Object.values(runners)) await r.stop();
      if (!opts.db) await db.end().catch(() => undefined);
      if (!opts.log) await eventLog.close().catch(() => undefined);
      await blobConn?.drain().catch(() => blobConn?.close());
    },
  };
}
