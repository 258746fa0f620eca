// The blob storage service (spec/blobstore.md): one uWebSockets.js listener with the spec's route classes, one
// module each — data routes (./data-routes.ts, API key), admin routes (./admin-routes.ts, admin key), public blob
// reads (./public-routes.ts), the Walrus-compatible publisher/aggregator (./walrus-routes.ts) — and, here, the
// composition: backend, read models, credentials, the route table, garbage collection.
//
// Writes: read the aggregate's state from the event log, decide, append with optimistic concurrency, wait for the
// read model to apply the append, answer (actors/blobstore/commands.ts). Reads: Postgres read models built by
// projections (projections/blobstore/). Bytes: a content-addressed BlobBackend (adapters/blob-bytes/backend.ts),
// streamed in and out, never buffered whole.
//
// Options and handle: ./options.ts; serving and storing bytes: ./blob-serving.ts; infrastructure routes:
// ./infrastructure-routes.ts.
import { join } from "node:path";
import { openEventLog } from "../../eventlog/connection.ts";
import { createPool } from "../../db/pool.ts";
import { createLogger } from "../../config/logger.ts";
import { loadConfig } from "../../config/env.ts";
import { HttpError, HttpServer, errorReply, parseJsonObject, queryParams, type Handler, type Reply, type Request, type RouteOptions } from "../http.ts";
import { ServiceMetrics, measured } from "../metrics.ts";
import { registerPipelineGauges } from "../pipeline-metrics.ts";
import { isUnavailable } from "../../adapters/unavailable.ts";
import { ProjectionRunner, migrateCheckpoints, resetProjection } from "../../projections/runtime.ts";
import { waitForProjection } from "../../projections/checkpoint-wait.ts";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { FsBlobBackend, type BlobBackend } from "../../adapters/blob-bytes/backend.ts";
import { bodyBuffers, readBuffers } from "../recycled-buffers.ts";
import { JetStreamBlobBackend } from "../../adapters/blob-bytes/object-store-backend.ts";
import { BlobstoreLog } from "../../actors/blobstore/log.ts";
import { BLOBSTORE_KINDS, PROJECTION_NAMES, blobstoreProjection } from "../../projections/blobstore/read-models.ts";
import { filterOf, type Kind } from "../../schemas/blobstore/events.ts";
import { purgeOrphanObjects, type Core } from "../../actors/blobstore/commands.ts";
import { Authenticator, type AccountPrincipal, type AppPrincipal } from "./auth.ts";
import { Queries } from "../../projections/blobstore/queries.ts";
import { LIMITS } from "../../schemas/blobstore/validation.ts";
import { MasterKey } from "../../actors/blobstore/keys.ts";
import { sweep, type SweepResult } from "../../actors/blobstore/gc.ts";
import type { RouteDoc } from "./openapi.ts";
import type { BlobstoreRouteKit } from "./route-kit.ts";
import { DEFAULT_BACKEND, type BlobstoreHandle, type BlobstoreOptions } from "./options.ts";
import { CACHE_BYTES, ContentCache, blobServing } from "./blob-serving.ts";
import { registerInfrastructureRoutes } from "./infrastructure-routes.ts";
import { registerDataRoutes } from "./data-routes.ts";
import { registerAdminRoutes } from "./admin-routes.ts";
import { namingAddressVariable } from "../../config/listen-error.ts";
import { registerWalrusRoutes } from "./walrus-routes.ts";
import { NETWORK_PROFILES } from "../../config/network-profile.ts";
import { registerPublicRoutes } from "./public-routes.ts";

export { DEFAULT_BACKEND, blobstoreOptionsFromEnv, type BackendKind, type BlobstoreHandle, type BlobstoreOptions } from "./options.ts";

function toReply(err: unknown): Reply | undefined {
  if (err instanceof HttpError) return errorReply(err.status, err.message, err.extra, err.headers);
  if (isUnavailable(err)) return errorReply(503, "a backing service is unavailable; retry shortly", {}, { "retry-after": "1" });
  return undefined;
}

export async function startBlobstore(opts: BlobstoreOptions): Promise<BlobstoreHandle> {
  const logger = (opts.logger ?? createLogger()).child({ service: "blobstore" });
  if (!opts.log && !opts.natsUrl) throw new Error("startBlobstore needs natsUrl or log");
  if (!opts.db && !opts.databaseUrl) throw new Error("startBlobstore needs databaseUrl or db");
  const eventLog = opts.log ?? (await openEventLog({ servers: opts.natsUrl!, name: "memrelay-blobstore" }));
  const db = opts.db ?? createPool(opts.databaseUrl!, opts.dbPoolMax ?? 10);
  const root = join(opts.dataDir, "blobstore");
  const kind = opts.backend ?? loadConfig(process.env).blobstoreBackend ?? DEFAULT_BACKEND;
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
  /** Bytes live on the event log's NATS: while it is away, reads that miss the cache fail fast (503) too. */
  const bytesInNats = backend instanceof JetStreamBlobBackend;
  const master = opts.masterKeyHex ? MasterKey.fromHex(opts.masterKeyHex) : MasterKey.fromFile(join(root, "master.key"));
  const maxBlobBytes = opts.maxBlobBytes ?? 1024 * 1024 * 1024;
  const settleTimeoutMs = opts.settleTimeoutMs ?? 10_000;
  const walrusEpoch = opts.walrusEpoch ?? 1;
  const gcGraceMs = opts.gc?.graceMs ?? 10 * 60_000;
  const metrics = new ServiceMetrics("blobstore");
  const bytesRead = metrics.counter("bytes_read_total", "Blob bytes served");
  const bytesWritten = metrics.counter("bytes_written_total", "Blob bytes received and stored");
  const blobPuts = metrics.counter("blob_puts_total", "Blob writes, by whether the bytes were already stored", ["deduplicated"]);
  const cache = new ContentCache(opts.cacheBytes ?? CACHE_BYTES);
  metrics.gauge("content_cache_bytes", "Bytes held by the in-memory content cache", [], (g) => g.set(cache.bytes));
  const received = bodyBuffers();
  const reads = readBuffers();
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
  const needLog = () => {
    if (!natsUp) throw new HttpError(503, "the event log is unavailable; retry shortly", {}, { "retry-after": "1" });
  };

  const auth = new Authenticator(q, log, metrics, logger);
  const server = new HttpServer({
    corsOrigins: opts.corsOrigins ?? [],
    corsHeaders: "content-type, authorization, range, if-match, if-none-match, content-md5",
    onError: (err, req) => logger.error("request failed", { method: req.method, path: req.path, error: err instanceof Error ? err.message : String(err) }),
  });

  // ---------------------------------------------------------------- route table (also the OpenAPI document)
  const docs: RouteDoc[] = [];
  const wrap = (name: string, h: Handler): Handler =>
    measured(metrics, name, h, (err, req) => toReply(err) ?? (req.aborted() ? errorReply(499, "client closed the request") : undefined));
  const METHOD = { get: "get", post: "post", put: "put", patch: "patch", delete: "del" } as const;
  const route = (doc: RouteDoc, pattern: string, h: Handler, ro?: RouteOptions) => {
    docs.push(doc);
    server.route(METHOD[doc.method], pattern, wrap(`${doc.method.toUpperCase()} ${doc.path}`, h), ro ?? { bodyLimit: LIMITS.jsonBody });
    // Public reads answer HEAD as well: the GET's status and headers (Content-Length of what a GET would send), no body.
    if (doc.method === "get" && doc.auth === "public" && doc.tag !== "Infrastructure") {
      server.route("head", pattern, wrap(`HEAD ${doc.path}`, async (req) => {
        const r = await Promise.resolve()
          .then(() => h(req))
          .catch((err) => {
            const reply = toReply(err);
            if (!reply) throw err;
            return reply;
          });
        r.stream?.destroy();
        const length = r.headLength ?? r.length ?? (r.body === undefined ? undefined : typeof r.body === "string" ? Buffer.byteLength(r.body) : r.body.length);
        return { status: r.status, headers: r.headers, headLength: r.status === 304 ? undefined : (length ?? 0) };
      }));
    }
  };
  const data = (h: (req: Request, who: AccountPrincipal) => Promise<Reply>): Handler => async (req) => {
    needLog();
    return h(req, await auth.account(req));
  };
  const admin = (h: (req: Request, who: AppPrincipal) => Promise<Reply>): Handler => async (req) => {
    needLog();
    return h(req, await auth.admin(req));
  };
  const jsonBody = (req: Request, optional = false): Record<string, unknown> => (optional && !req.body.length ? {} : parseJsonObject(req.body));
  const query = queryParams;
  /** The raw (percent-encoded) object key: everything after `/blobs/` in the path. */
  const rawKey = (req: Request) => req.path.slice(`/api/v1/buckets/${req.params[0]}/blobs/`.length);

  const { serve, serveByBlobId, storeBody } = blobServing({ backend, bytesInNats, needLog, cache, reads, received, bytesRead, bytesWritten, blobPuts, q, db, maxBlobBytes, logger });
  registerInfrastructureRoutes({ route, docs, backend, eventLog, db, natsUp: () => natsUp, metrics, runProjections, runners });

  const kit: BlobstoreRouteKit = { route, data, admin, jsonBody, query, rawKey, core, log, q, master, maxBlobBytes, received, storeBody, serve, serveByBlobId, needLog, walrusEpoch };
  registerWalrusRoutes(kit, opts.networkProfile ?? NETWORK_PROFILES.local);
  registerPublicRoutes(kit);
  registerDataRoutes(kit);
  registerAdminRoutes(kit);

  server.fallback((req) => errorReply(404, `no route for ${req.method} ${req.path}`));
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
