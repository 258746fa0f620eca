// The blob storage service (spec/blobstore.md): one uWebSockets.js listener with the spec's route classes, one
// module each — data routes (./data-routes.ts, API key), admin routes (./admin-routes.ts, admin key), public blob
// reads (./public-routes.ts), the Walrus-compatible publisher/aggregator (./walrus-routes.ts) — and, here, the
// composition: backend, read models, credentials, byte serving, infrastructure routes, garbage collection.
//
// Writes: read the aggregate's state from the event log, decide, append with optimistic concurrency, wait for the
// read model to apply the append, answer (actors/blobstore/commands.ts). Reads: Postgres read models built by
// projections (projections/blobstore/). Bytes: a content-addressed BlobBackend (adapters/blob-bytes/backend.ts),
// streamed in and out, never buffered whole.
import { join } from "node:path";
import type { EventLog } from "../../eventlog/connection.ts";
import { openEventLog } from "../../eventlog/connection.ts";
import { createPool, type Db } from "../../db/pool.ts";
import { createLogger, type Logger } from "../../config/logger.ts";
import { intVar, loadConfig } from "../../config/env.ts";
import { HttpError, HttpServer, errorReply, json, parseJsonObject, queryParams, type Handler, type Reply, type Request, type RouteOptions } from "../http.ts";
import { ServiceMetrics, measured } from "../metrics.ts";
import { registerPipelineGauges } from "../pipeline-metrics.ts";
import { isUnavailable } from "../unavailable.ts";
import { ProjectionRunner, migrateCheckpoints, readCheckpoint, resetProjection } from "../../projections/runtime.ts";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { FsBlobBackend, type BlobBackend, type OpenedBlob } from "../../adapters/blob-bytes/backend.ts";
import { defaultHashThreads } from "../../adapters/blob-bytes/hasher.ts";
import { bodyBuffers, readBuffers } from "../recycled-buffers.ts";
import { JetStreamBlobBackend } from "../../adapters/blob-bytes/object-store-backend.ts";
import { BlobstoreLog } from "../../actors/blobstore/log.ts";
import { BLOBSTORE_KINDS, PROJECTION_NAMES, blobstoreProjection } from "../../projections/blobstore/read-models.ts";
import { filterOf, type Kind } from "../../schemas/blobstore/events.ts";
import { purgeOrphanObjects, type Core } from "../../actors/blobstore/commands.ts";
import { Authenticator, type AccountPrincipal, type AppPrincipal } from "./auth.ts";
import { Queries } from "../../projections/blobstore/queries.ts";
import { LIMITS, isBlobId, parseRange } from "../../schemas/blobstore/validation.ts";
import { MasterKey } from "../../actors/blobstore/keys.ts";
import { enqueueGc, sweep, type SweepResult } from "../../actors/blobstore/gc.ts";
import { buildOpenApi, type RouteDoc } from "./openapi.ts";
import { etagList, type BlobstoreRouteKit, type ServedBlob } from "./route-kit.ts";
import { registerDataRoutes } from "./data-routes.ts";
import { registerAdminRoutes } from "./admin-routes.ts";
import { registerWalrusRoutes } from "./walrus-routes.ts";
import { registerPublicRoutes } from "./public-routes.ts";

export const BLOBSTORE_VERSION = "1.0.0";

export type BackendKind = "jetstream" | "fs";
/** The backend used when none is configured (see README: "Storage backend"). */
export const DEFAULT_BACKEND: BackendKind = "fs";

export interface BlobstoreOptions {
  /** NATS server(s) of the event log; or pass an open `log`. */
  readonly natsUrl?: string;
  readonly log?: EventLog;
  /** Postgres of the read models; or pass a `db` pool. */
  readonly databaseUrl?: string;
  readonly db?: Db;
  /** Connections of the pool opened from `databaseUrl` (default 10). */
  readonly dbPoolMax?: number;
  /** Listening port (BLOBSTORE_PORT, default 8200; 0 picks a free one). */
  readonly port?: number;
  readonly host?: string;
  /** Blob bytes live under `<dataDir>/blobstore` (and the master key file, unless `masterKeyHex` is given). */
  readonly dataDir: string;
  readonly logger?: Logger;
  /** Largest blob accepted (413 beyond it, with the limit in the error). Default 1 GiB. */
  readonly maxBlobBytes?: number;
  readonly corsOrigins?: readonly string[];
  /** Master key (64 hex) sealing S3 secrets and deriving wallets; replicas must share it. */
  readonly masterKeyHex?: string;
  /**
   * Where bytes live: "jetstream" (the JetStream object store on the event log's NATS, bucket `memrelay_blobs`),
   * "fs" (`<dataDir>/blobstore/blobs`), or any other `BlobBackend`. Default: DEFAULT_BACKEND (BLOBSTORE_BACKEND).
   */
  readonly backend?: BlobBackend | BackendKind;
  /** Threads hashing bodies (BLOBSTORE_HASH_THREADS; default every core but one; 0: on the event loop). */
  readonly hashThreads?: number;
  /** Bytes of the in-memory LRU of small blob contents (≤ 64 KiB each) in front of the backend. Default 64 MiB; 0 disables. */
  readonly cacheBytes?: number;
  /** Garbage collection of unreferenced bytes: grace period and sweep interval (0 disables the timer). */
  readonly gc?: { readonly graceMs?: number; readonly intervalMs?: number };
  /** The epoch the Walrus routes report as current (no epoch clock runs locally). Default 1. */
  readonly walrusEpoch?: number;
  /** How long a write waits for its read model before answering anyway. Default 10 s. */
  readonly settleTimeoutMs?: number;
  /**
   * Run the read-model projections in this process (default true). Past one replica, run them in one process
   * (DESIGN.md 2.4: one active consumer per read model) and start the other gateways with false: their writes then
   * wait for the shared checkpoint instead of a local runner.
   */
  readonly runProjections?: boolean;
}

export interface BlobstoreHandle {
  readonly port: number;
  readonly url: string;
  readonly backend: BlobBackend;
  /** This process's projection runners (empty with runProjections: false). */
  readonly runners: Readonly<Partial<Record<Kind, ProjectionRunner>>>;
  /** Runs one garbage-collection sweep now (`full` also scans the backend for unreferenced bytes). */
  gc(opts?: { full?: boolean; graceMs?: number }): Promise<SweepResult>;
  /** Resolves true once every read model has applied everything the log held when called. */
  caughtUp(timeoutMs?: number): Promise<boolean>;
  /** Drops and rebuilds read models from the event log (all by default); resolves when they have caught up. */
  replay(kinds?: readonly Kind[]): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Options from the operator environment (the names of config/env.ts plus the blob store's own):
 * BLOBSTORE_PORT, HOST, NATS_URL, DATABASE_URL, MEMRELAY_DATA_DIR, CORS_ALLOWED_ORIGINS, BLOBSTORE_MASTER_KEY
 * (64 hex, shared by replicas), BLOBSTORE_MAX_BLOB_BYTES (default 1 GiB), BLOBSTORE_GC_GRACE_SECS (default 600),
 * BLOBSTORE_BACKEND (jetstream | fs), BLOBSTORE_CACHE_BYTES (default 64 MiB), BLOBSTORE_HASH_THREADS (default every
 * core but one).
 */
export function blobstoreOptionsFromEnv(env: Record<string, string | undefined>, logger?: Logger): BlobstoreOptions {
  const c = loadConfig(env);
  return {
    natsUrl: c.natsUrl,
    databaseUrl: c.databaseUrl,
    port: c.blobstorePort,
    host: c.host,
    dataDir: c.dataDir,
    corsOrigins: c.corsAllowedOrigins,
    masterKeyHex: env.BLOBSTORE_MASTER_KEY || undefined,
    maxBlobBytes: intVar(env, "BLOBSTORE_MAX_BLOB_BYTES", 1024 * 1024 * 1024, 0),
    gc: { graceMs: intVar(env, "BLOBSTORE_GC_GRACE_SECS", 600, 0) * 1000 },
    backend: c.blobstoreBackend,
    cacheBytes: c.blobstoreCacheBytes,
    hashThreads: defaultHashThreads(env),
    logger,
  };
}

/** Blobs up to this size are cached in memory by blob id. */
const SMALL = 64 * 1024;
/**
 * Reads up to this size go out in one piece (one file read, one uWS end: the copy loop stays in C++); larger ones
 * stream with backpressure, so memory per request is bounded by this whatever the blob size.
 */
const READ_INLINE = 1024 * 1024;
const CACHE_BYTES = 64 * 1024 * 1024;

/**
 * Small immutable blob contents by blob id, least recently used out first, bounded by bytes (content-addressed:
 * safe to cache on any replica; reads check the blob's references in the read model first, so a deleted blob is
 * never served from here).
 */
class ContentCache {
  private readonly map = new Map<string, Buffer>();
  bytes = 0;
  constructor(private readonly maxBytes: number) {}
  get(id: string): Buffer | undefined {
    const b = this.map.get(id);
    if (b) {
      // most recently used last
      this.map.delete(id);
      this.map.set(id, b);
    }
    return b;
  }
  put(id: string, b: Buffer): void {
    if (this.map.has(id) || b.length > SMALL || b.length > this.maxBytes) return;
    this.map.set(id, b);
    this.bytes += b.length;
    for (const [k, v] of this.map) {
      if (this.bytes <= this.maxBytes) break;
      this.map.delete(k);
      this.bytes -= v.length;
    }
  }
}

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
  const waitApplied = async (kind: Kind, seq: number, timeoutMs: number): Promise<boolean> => {
    if (runProjections) return runners[kind].waitFor(seq, timeoutMs);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if ((await readCheckpoint(db, PROJECTION_NAMES[kind])) >= seq) return true;
      if (Date.now() >= deadline) return false;
      await new Promise((r) => setTimeout(r, 5));
    }
  };
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


  // ---------------------------------------------------------------- serving bytes

  async function serve(req: Request, b: ServedBlob): Promise<Reply> {
    const headers: Record<string, string> = {
      "content-type": b.contentType,
      etag: b.etag,
      "accept-ranges": "bytes",
      "x-blob-id": b.blobId,
      "cache-control": b.immutable ? "public, max-age=3600, immutable" : "no-cache",
    };
    if (b.lastModified) headers["last-modified"] = b.lastModified.toUTCString();
    const inm = etagList(req.headers["if-none-match"]);
    if (inm && (inm.includes("*") || inm.includes(b.etag.replace(/"/g, "")))) return { status: 304, headers };
    const range = parseRange(req.headers["range"], b.size);
    if (range === "unsatisfiable") {
      return errorReply(416, `range not satisfiable for a blob of ${b.size} bytes`, { size: b.size }, { "content-range": `bytes */${b.size}` });
    }
    const status = range ? 206 : 200;
    if (range) headers["content-range"] = `bytes ${range.start}-${range.end}/${b.size}`;
    if (req.method === "HEAD") return { status, headers, headLength: range ? range.end - range.start + 1 : b.size };
    let opened: OpenedBlob | null;
    if (b.size <= SMALL) {
      let whole = cache.get(b.blobId);
      if (!whole) {
        if (bytesInNats) needLog();
        opened = await backend.open(b.blobId, undefined, { inlineBelow: SMALL });
        if (opened?.bytes) cache.put(b.blobId, (whole = opened.bytes));
      }
      if (whole) {
        const body = range ? whole.subarray(range.start, range.end + 1) : whole;
        bytesRead.inc(body.length);
        return { status, headers, body };
      }
      opened = null;
    } else {
      if (bytesInNats) needLog();
      opened = await backend.open(b.blobId, range, { inlineBelow: READ_INLINE, alloc: reads.take });
    }
    if (!opened) {
      logger.error("referenced blob bytes are missing from the backend", { blob_id: b.blobId });
      throw new HttpError(500, "the blob's bytes are missing from storage");
    }
    bytesRead.inc(opened.size);
    const bytes = opened.bytes;
    if (bytes) return { status, headers, body: bytes, sent: () => reads.release(bytes) };
    return { status, headers, stream: opened.stream, length: opened.size };
  }

  async function serveByBlobId(req: Request, raw: string): Promise<Reply> {
    if (!isBlobId(raw)) throw new HttpError(400, "blob id must be 32 bytes as URL-safe base64 without padding (43 characters)");
    const size = await q.content(raw);
    if (size === null) throw new HttpError(404, `blob ${raw} not found`);
    return serve(req, { blobId: raw, size, contentType: "application/octet-stream", etag: `"${raw}"`, immutable: true });
  }

  /** Stores a request body; bytes that end up unreferenced (a failed write) are queued for the sweeper. */
  async function storeBody(req: Request) {
    const put = await backend.put(req.bodyStream!, { maxBytes: maxBlobBytes, release: received.release });
    bytesWritten.inc(put.size);
    blobPuts.inc({ deduplicated: String(put.deduplicated) });
    const orphan = async () => {
      if (!put.deduplicated) await enqueueGc(db, put.blobId).catch((err) => logger.warn("could not queue an orphaned blob", { blob_id: put.blobId, error: (err as Error).message }));
    };
    return { put, orphan };
  }

  // ---------------------------------------------------------------- infrastructure

  route(
    { method: "get", path: "/health", summary: "Liveness", tag: "Infrastructure", auth: "public", responses: { 200: { description: "alive", schema: { type: "object" } } } },
    "/health",
    () => json(200, { status: "ok", service: "blobstore", version: BLOBSTORE_VERSION, backend: backend.name }),
  );

  const withTimeout = <T>(p: Promise<T>, ms: number) => Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error("timeout")), ms).unref())]);
  route(
    {
      method: "get",
      path: "/ready",
      summary: "Readiness: 200 only when NATS JetStream and Postgres answer",
      tag: "Infrastructure",
      auth: "public",
      responses: { 200: { description: "ready", schema: { type: "object" } }, 503: { description: "a dependency is down" } },
    },
    "/ready",
    async () => {
      const nats = natsUp && !eventLog.nc.isClosed() && (await withTimeout(eventLog.jsm.getAccountInfo(), 1_500).then(() => true, () => false));
      const postgres = await withTimeout(db.query("SELECT 1"), 1_500).then(() => true, () => false);
      const projections = runProjections ? Object.fromEntries(BLOBSTORE_KINDS.map((k) => [runners[k].projection.name, { checkpoint: runners[k].checkpoint }])) : "run elsewhere";
      const ready = nats && postgres;
      return json(ready ? 200 : 503, { ready, checks: { nats: nats ? "ok" : "down", postgres: postgres ? "ok" : "down" }, projections, ...(ready ? {} : { error: "dependencies unavailable" }) });
    },
  );

  route(
    { method: "get", path: "/metrics", summary: "Prometheus metrics", tag: "Infrastructure", auth: "public", responses: { 200: { description: "text exposition", schema: "Metrics" } } },
    "/metrics",
    () => metrics.reply(),
  );

  let openapi: string | undefined;
  route(
    { method: "get", path: "/api/docs", summary: "This OpenAPI 3 document", tag: "Infrastructure", auth: "public", responses: { 200: { description: "OpenAPI JSON", schema: { type: "object" } } } },
    "/api/docs",
    () => ({ status: 200, headers: { "content-type": "application/json" }, body: (openapi ??= JSON.stringify(buildOpenApi(docs, { version: BLOBSTORE_VERSION }))) }),
  );

  const kit: BlobstoreRouteKit = { route, data, admin, jsonBody, query, rawKey, core, log, q, master, maxBlobBytes, received, storeBody, serve, serveByBlobId, needLog, walrusEpoch };
  registerWalrusRoutes(kit);
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
    throw err;
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

