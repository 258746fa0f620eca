// The blob storage service (spec/blobstore.md): one uWebSockets.js listener with the spec's route classes —
// data routes (API key), admin routes (admin key), public blob reads, infrastructure — plus the Walrus-compatible
// publisher/aggregator routes the relayer and the console store their blobs through.
//
// Writes: read the aggregate's state from the event log, decide, append with optimistic concurrency, wait for the
// read model to apply the append, answer. Reads: Postgres read models built by projections (./projections.ts).
// Bytes: a content-addressed BlobBackend (./backend.ts), streamed in and out, never buffered whole.
import { join } from "node:path";
import { createHash } from "node:crypto";
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
import { KIND, filterOf, objectAggregateId, type BucketState, type Kind, type ObjectState } from "../../schemas/blobstore/events.ts";
import {
  checkPreconditions,
  createAccount,
  createBucket,
  deleteBucket,
  deleteObject,
  issueAccessKey,
  issueKey,
  liveBucket,
  liveObject,
  purgeOrphanObjects,
  recordObject,
  registerWalrusBlob,
  revokeKey,
  updateBucket,
  type Core,
  type Preconditions,
} from "../../actors/blobstore/commands.ts";
import { Authenticator, type AccountPrincipal, type AppPrincipal } from "./auth.ts";
import { Queries, decodeCursor, encodeCursor, type BucketRow, type KeyRow, type ObjectRow } from "../../projections/blobstore/queries.ts";
import {
  LIMITS,
  isAccessKeyId,
  isBlobId,
  isObjectId,
  isUuid,
  optionalString,
  parseLimit,
  parseRange,
  parseWalrusStore,
  validateBucketName,
  validateContentType,
  validateMetadata,
  validateObjectKey,
} from "../../schemas/blobstore/validation.ts";
import { MasterKey } from "../../actors/blobstore/keys.ts";
import { enqueueGc, sweep, type SweepResult } from "../../actors/blobstore/gc.ts";
import { buildOpenApi, type RouteDoc } from "./openapi.ts";
import { deriveWalletAddress } from "../../actors/blobstore/wallet.ts";

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

const bucketJson = (b: BucketState | BucketRow) => ({
  name: b.name,
  bucket_id: b.bucket_id,
  account_id: b.account_id,
  description: b.description,
  metadata: b.metadata,
  created_at: b.created_at,
  updated_at: b.updated_at,
  ...("blob_count" in b ? { blob_count: b.blob_count, total_bytes: b.total_bytes } : {}),
});

const blobJson = (o: ObjectState | ObjectRow) => ({
  key: o.key,
  blob_id: o.blob_id,
  bucket_name: o.bucket,
  account_id: o.account_id,
  content_type: o.content_type,
  size: o.size,
  md5: o.md5,
  etag: `"${o.md5}"`,
  created_at: o.created_at,
  updated_at: o.updated_at,
});

const apiKeyJson = (k: KeyRow) => ({
  id: k.key_id,
  account_id: k.account_id,
  prefix: k.prefix,
  label: k.label,
  state: k.revoked_at ? "revoked" : "active",
  created_at: k.created_at,
  revoked_at: k.revoked_at,
  last_used_at: k.last_used_at,
});

/** ETags in If-Match / If-None-Match: `*` or a list of (possibly weak) quoted values. */
function etagList(h: string | undefined): string[] | null {
  if (h === undefined) return null;
  return h
    .split(",")
    .map((s) => s.trim().replace(/^W\//, "").replace(/^"(.*)"$/, "$1"))
    .filter(Boolean);
}

function preconditions(req: Request): Preconditions {
  const inm = etagList(req.headers["if-none-match"]);
  if (inm && !(inm.length === 1 && inm[0] === "*")) throw new HttpError(400, "If-None-Match on a write supports only *");
  return { ifNoneMatchAny: inm !== null, ifMatch: etagList(req.headers["if-match"]) };
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

  const P = {
    bucket: { name: "bucket_name", in: "path", description: "bucket name" } as const,
    key: { name: "key", in: "path", description: "object key (may contain /; percent-encode other reserved characters)" } as const,
    account: { name: "account_id", in: "path", description: "account id (uuid)" } as const,
    blobId: { name: "blob_id", in: "path", description: "blob id: 32 bytes as URL-safe base64 without padding" } as const,
    range: { name: "Range", in: "header", description: "bytes=start-end (one range); 206 or 416" } as const,
    limit: { name: "limit", in: "query", description: `page size, 1-${LIMITS.listMax} (default ${LIMITS.listDefault})` } as const,
    cursor: { name: "cursor", in: "query", description: "next_cursor of the previous page" } as const,
  };
  const E401 = { description: "missing, malformed, unknown or revoked key" };
  const E404 = { description: "not found" };
  const E400 = { description: "invalid input" };

  // ---------------------------------------------------------------- serving bytes

  async function serve(req: Request, b: { blobId: string; size: number; contentType: string; etag: string; lastModified?: Date; immutable: boolean }): Promise<Reply> {
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

  // ---------------------------------------------------------------- Walrus publisher / aggregator

  route(
    {
      method: "put",
      path: "/v1/blobs",
      summary: "Walrus publisher: store a blob (raw body)",
      tag: "Walrus",
      auth: "public",
      params: [
        { name: "epochs", in: "query", description: `epochs ahead, 1-${LIMITS.maxEpochsAhead} or "max" (default 1)` },
        { name: "deletable", in: "query", description: "true: a deletable blob object (always newly created)" },
        { name: "permanent", in: "query", description: "true: a permanent blob object (default)" },
        { name: "send_object_to", in: "query", description: "Sui address that owns the new blob object" },
      ],
      body: { description: "blob bytes", binary: true },
      responses: { 200: { description: "newlyCreated or alreadyCertified", schema: "WalrusStored" }, 400: E400, 413: { description: "body over the limit" } },
    },
    "/v1/blobs",
    async (req) => {
      const p = parseWalrusStore(req.query);
      needLog();
      const { put, orphan } = await storeBody(req);
      try {
        const endEpoch = walrusEpoch + p.epochs;
        if (!p.deletable && put.deduplicated) {
          const c = await q.certified(put.blobId, endEpoch);
          if (c) return json(200, { alreadyCertified: { blobId: put.blobId, object: c.object_id, endEpoch: c.end_epoch } });
        }
        const o = await registerWalrusBlob(core, {
          blob_id: put.blobId,
          size: put.size,
          encoding_type: "RS2",
          registered_epoch: walrusEpoch,
          certified_epoch: walrusEpoch,
          end_epoch: endEpoch,
          deletable: p.deletable,
          owner: p.sendObjectTo ?? PUBLISHER_ADDRESS,
          storage_size: put.size,
        });
        return json(200, {
          newlyCreated: {
            blobObject: {
              id: o.object_id,
              registeredEpoch: o.registered_epoch,
              blobId: o.blob_id,
              size: o.size,
              encodingType: o.encoding_type,
              certifiedEpoch: o.certified_epoch,
              storage: { id: o.storage_id, startEpoch: o.registered_epoch, endEpoch: o.end_epoch, storageSize: o.storage_size },
              deletable: o.deletable,
            },
            resourceOperation: { registerFromScratch: { encodedLength: o.storage_size, epochsAhead: p.epochs } },
            cost: 0,
          },
        });
      } catch (err) {
        await orphan();
        throw err;
      }
    },
    { bodyMode: "stream", bodyLimit: maxBlobBytes, bodyChunk: received.copy },
  );

  route(
    {
      method: "get",
      path: "/v1/blobs/by-object-id/{object_id}",
      summary: "Walrus aggregator: read a blob by its blob object id",
      tag: "Walrus",
      auth: "public",
      params: [{ name: "object_id", in: "path", description: "0x + 64 hex" }, P.range],
      responses: { 200: { description: "bytes", binary: true }, 206: { description: "range", binary: true }, 400: E400, 404: E404, 416: { description: "range not satisfiable" } },
    },
    "/v1/blobs/by-object-id/:object_id",
    async (req) => {
      const id = req.params[0].toLowerCase();
      if (!isObjectId(id)) throw new HttpError(400, "object id must be 0x followed by 64 hex digits");
      const o = await q.walrusObject(id);
      if (!o) throw new HttpError(404, `blob object ${id} not found`);
      return serve(req, { blobId: o.blob_id, size: o.size, contentType: "application/octet-stream", etag: `"${o.blob_id}"`, immutable: true });
    },
  );

  route(
    {
      method: "get",
      path: "/v1/blobs/{blob_id}",
      summary: "Walrus aggregator: read a blob by blob id",
      tag: "Walrus",
      auth: "public",
      params: [P.blobId, P.range],
      responses: { 200: { description: "bytes", binary: true }, 206: { description: "range", binary: true }, 400: E400, 404: E404, 416: { description: "range not satisfiable" } },
    },
    "/v1/blobs/:blob_id",
    (req) => serveByBlobId(req, req.params[0]),
  );

  // ---------------------------------------------------------------- public reads

  route(
    {
      method: "get",
      path: "/api/v1/blobs/by-blob-id/{blob_id}",
      summary: "Read a blob by blob id (public)",
      tag: "Blobs",
      auth: "public",
      params: [P.blobId, P.range],
      responses: { 200: { description: "bytes", binary: true }, 206: { description: "range", binary: true }, 400: E400, 404: E404, 416: { description: "range not satisfiable" } },
    },
    "/api/v1/blobs/by-blob-id/:blob_id",
    (req) => serveByBlobId(req, req.params[0]),
  );

  route(
    {
      method: "get",
      path: "/api/v1/buckets/{bucket_name}/blobs/{key}",
      summary: "Read a blob by bucket name and key (public)",
      tag: "Blobs",
      auth: "public",
      params: [P.bucket, P.key, P.range],
      responses: { 200: { description: "bytes with the stored content type", binary: true }, 206: { description: "range", binary: true }, 304: { description: "ETag matches If-None-Match" }, 400: E400, 404: E404, 416: { description: "range not satisfiable" } },
    },
    "/api/v1/buckets/:bucket/blobs/*",
    async (req) => {
      const bucket = validateBucketName(req.params[0]);
      const key = validateObjectKey(rawKey(req));
      const o = await q.publicObject(bucket, key);
      if (!o) throw new HttpError(404, `blob ${key} not found in bucket ${bucket}`);
      return serve(req, { blobId: o.blob_id, size: o.size, contentType: o.content_type, etag: `"${o.md5}"`, lastModified: new Date(o.updated_ms), immutable: false });
    },
  );

  // ---------------------------------------------------------------- data routes (API key)

  /**
   * The bucket a write goes to. A bucket generation's id and owner never change, so they are cached; whether the
   * generation is still live is checked against the log after the write is appended (recordObject), which undoes
   * a write that raced a bucket deletion. A cached owner that does not match is re-read before answering 404.
   */
  const bucketFacts = new Map<string, BucketState>();
  const writableBucket = async (name: string, who: AccountPrincipal): Promise<BucketState> => {
    let b = bucketFacts.get(name);
    if (!b || b.account_id !== who.accountId) {
      b = liveBucket(await log.last(KIND.bucket, name)) ?? undefined;
      if (b) {
        if (bucketFacts.size > 10_000) bucketFacts.clear();
        bucketFacts.set(name, b);
      } else bucketFacts.delete(name);
    }
    if (!b || b.account_id !== who.accountId) throw new HttpError(404, `bucket ${name} not found`);
    return b;
  };

  /** A bucket the caller's account owns, else 404 (someone else's bucket is not found either). */
  const owned = <B extends { account_id: string }>(who: AccountPrincipal, name: string, b: B | null): B => {
    if (!b || b.account_id !== who.accountId) throw new HttpError(404, `bucket ${name} not found`);
    return b;
  };
  const ownBucket = async (who: AccountPrincipal, name: string): Promise<BucketRow> => owned(who, name, await q.bucket(name));

  route(
    { method: "post", path: "/api/v1/buckets", summary: "Create a bucket", tag: "Buckets", auth: "api_key", body: { description: "bucket", schema: "BucketCreate" }, responses: { 201: { description: "created", schema: "Bucket" }, 400: E400, 401: E401, 409: { description: "name taken" } } },
    "/api/v1/buckets",
    data(async (req, who) => {
      const body = jsonBody(req);
      if (typeof body.name !== "string") throw new HttpError(400, "name is required (a string)");
      const name = validateBucketName(body.name);
      const description = optionalString(body, "description", LIMITS.description) ?? "";
      const metadata = validateMetadata(body.metadata);
      const b = await createBucket(core, who.accountId, name, description, metadata);
      return json(201, bucketJson(b));
    }),
  );

  route(
    { method: "get", path: "/api/v1/buckets", summary: "List the account's buckets", tag: "Buckets", auth: "api_key", params: [P.limit, P.cursor], responses: { 200: { description: "page", schema: "BucketList" }, 400: E400, 401: E401 } },
    "/api/v1/buckets",
    data(async (req, who) => {
      const qs = query(req);
      const limit = parseLimit(qs.get("limit"));
      const rows = await q.bucketsOf(who.accountId, decodeCursor(qs.get("cursor")), limit + 1);
      const page = rows.slice(0, limit);
      return json(200, { data: page.map(bucketJson), next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1].name) : null });
    }),
  );

  route(
    { method: "get", path: "/api/v1/buckets/{bucket_name}", summary: "Read a bucket", tag: "Buckets", auth: "api_key", params: [P.bucket], responses: { 200: { description: "bucket", schema: "Bucket" }, 400: E400, 401: E401, 404: E404 } },
    "/api/v1/buckets/:bucket",
    data(async (req, who) => json(200, bucketJson(await ownBucket(who, validateBucketName(req.params[0]))))),
  );

  const update = data(async (req, who) => {
    const name = validateBucketName(req.params[0]);
    const body = jsonBody(req);
    const patch: { description?: string; metadata?: Record<string, string> } = {};
    if ("description" in body) patch.description = optionalString(body, "description", LIMITS.description) ?? "";
    if ("metadata" in body) patch.metadata = validateMetadata(body.metadata);
    const unknown = Object.keys(body).filter((k) => k !== "description" && k !== "metadata");
    if (unknown.length) throw new HttpError(400, `only description and metadata can be updated (got ${unknown.join(", ")})`);
    return json(200, bucketJson(await updateBucket(core, who.accountId, name, patch)));
  });
  for (const method of ["patch", "put"] as const) {
    route(
      { method, path: "/api/v1/buckets/{bucket_name}", summary: "Update a bucket's description and metadata", tag: "Buckets", auth: "api_key", params: [P.bucket], body: { description: "fields to change", schema: "BucketUpdate" }, responses: { 200: { description: "updated", schema: "Bucket" }, 400: E400, 401: E401, 404: E404 } },
      "/api/v1/buckets/:bucket",
      update,
    );
  }

  route(
    {
      method: "delete",
      path: "/api/v1/buckets/{bucket_name}",
      summary: "Delete a bucket (empty, or with ?force=true together with its blobs)",
      tag: "Buckets",
      auth: "api_key",
      params: [P.bucket, { name: "force", in: "query", description: "true: delete the bucket's blobs too" }],
      responses: { 204: { description: "deleted" }, 400: E400, 401: E401, 404: E404, 409: { description: "not empty" } },
    },
    "/api/v1/buckets/:bucket",
    data(async (req, who) => {
      const name = validateBucketName(req.params[0]);
      const force = query(req).get("force") === "true";
      bucketFacts.delete(name);
      await deleteBucket(core, who.accountId, name, force, (id) => q.countObjects(id));
      bucketFacts.delete(name);
      return { status: 204 };
    }),
  );

  route(
    {
      method: "get",
      path: "/api/v1/buckets/{bucket_name}/blobs",
      summary: "List a bucket's blobs (key order)",
      tag: "Blobs",
      auth: "api_key",
      params: [P.bucket, { name: "prefix", in: "query", description: "only keys starting with this" }, P.limit, P.cursor],
      responses: { 200: { description: "page", schema: "BlobList" }, 400: E400, 401: E401, 404: E404 },
    },
    "/api/v1/buckets/:bucket/blobs",
    data(async (req, who) => {
      const name = validateBucketName(req.params[0]);
      const b = owned(who, name, await q.bucketOwner(name));
      const qs = query(req);
      const limit = parseLimit(qs.get("limit"));
      const prefix = qs.get("prefix") ?? "";
      const rows = await q.objects(b.bucket_id, prefix, decodeCursor(qs.get("cursor")), limit + 1);
      const page = rows.slice(0, limit);
      return json(200, { data: page.map(blobJson), next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1].key) : null });
    }),
  );

  route(
    {
      method: "put",
      path: "/api/v1/buckets/{bucket_name}/blobs/{key}",
      summary: "Write a blob (raw body, streamed); If-None-Match: * and If-Match supported",
      tag: "Blobs",
      auth: "api_key",
      params: [
        P.bucket,
        P.key,
        { name: "Content-Type", in: "header", description: "stored and served back (default application/octet-stream)" },
        { name: "If-None-Match", in: "header", description: "* : only if the key does not exist" },
        { name: "If-Match", in: "header", description: "ETag(s) or *: only if the current blob matches" },
        { name: "Content-MD5", in: "header", description: "base64 MD5 of the body, checked" },
      ],
      body: { description: "blob bytes", binary: true },
      responses: { 201: { description: "stored", schema: "Blob" }, 400: E400, 401: E401, 404: E404, 412: { description: "precondition failed" }, 413: { description: "body over the limit" } },
    },
    "/api/v1/buckets/:bucket/blobs/*",
    data(async (req, who) => {
      const name = validateBucketName(req.params[0]);
      const key = validateObjectKey(rawKey(req));
      const contentType = validateContentType(req.headers["content-type"]);
      const pre = preconditions(req);
      const md5Header = req.headers["content-md5"];
      let expectMd5: string | undefined;
      if (md5Header !== undefined) {
        const raw = Buffer.from(md5Header, "base64");
        if (raw.length !== 16) throw new HttpError(400, "Content-MD5 must be the base64 of 16 bytes");
        expectMd5 = raw.toString("hex");
      }
      const bucket = await writableBucket(name, who);
      if (pre.ifNoneMatchAny || pre.ifMatch) {
        // Fail before the body is read; the append checks again against the state it is made on.
        checkPreconditions(liveObject(await log.last(KIND.blob, objectAggregateId(bucket.bucket_id, key))), pre);
      }
      const { put, orphan } = await storeBody(req);
      try {
        if (expectMd5 && expectMd5 !== put.md5) throw new HttpError(400, "Content-MD5 does not match the body");
        const r = await recordObject(core, bucket, key, { blobId: put.blobId, size: put.size, md5: put.md5, contentType }, pre).catch((err) => {
          if (err instanceof HttpError && err.status === 404) bucketFacts.delete(name);
          throw err;
        });
        return json(201, { ...blobJson(r.state), deduplicated: put.deduplicated });
      } catch (err) {
        await orphan();
        throw err;
      }
    }),
    { bodyMode: "stream", bodyLimit: maxBlobBytes, bodyChunk: received.copy },
  );

  route(
    {
      method: "delete",
      path: "/api/v1/buckets/{bucket_name}/blobs/{key}",
      summary: "Delete a blob (bytes are removed when nothing else references them)",
      tag: "Blobs",
      auth: "api_key",
      params: [P.bucket, P.key, { name: "If-Match", in: "header", description: "ETag(s) or *" }],
      responses: { 204: { description: "deleted" }, 400: E400, 401: E401, 404: E404, 412: { description: "precondition failed" } },
    },
    "/api/v1/buckets/:bucket/blobs/*",
    data(async (req, who) => {
      const name = validateBucketName(req.params[0]);
      const key = validateObjectKey(rawKey(req));
      const bucket = liveBucket(await log.last(KIND.bucket, name));
      if (!bucket || bucket.account_id !== who.accountId) throw new HttpError(404, `bucket ${name} not found`);
      await deleteObject(core, bucket, key, { ifNoneMatchAny: false, ifMatch: etagList(req.headers["if-match"]) });
      return { status: 204 };
    }),
  );

  route(
    { method: "get", path: "/api/v1/wallet", summary: "The account's wallet address", tag: "Wallet", auth: "api_key", responses: { 200: { description: "wallet", schema: "Wallet" }, 401: E401 } },
    "/api/v1/wallet",
    data(async (_req, who) => json(200, { provisioned: true, wallet: { address: deriveWalletAddress(master, who.accountId) } })),
  );

  // ---------------------------------------------------------------- admin routes (admin key)

  const ownedAccount = async (who: AppPrincipal, id: string) => {
    const a = isUuid(id) ? await q.account(id) : null;
    if (!a) throw new HttpError(404, `account ${id} not found`);
    if (a.app_id !== who.appId) throw new HttpError(403, "account does not belong to this app");
    return a;
  };
  const E403 = { description: "the account does not belong to this app" };

  route(
    { method: "post", path: "/accounts", summary: "Create an account and its first API key (shown once)", tag: "Admin", auth: "admin_key", body: { description: "optional name", schema: "AccountCreate", required: false }, responses: { 201: { description: "created", schema: "AccountCreated" }, 400: E400, 401: E401 } },
    "/accounts",
    admin(async (req, who) => {
      const name = optionalString(jsonBody(req, true), "name", LIMITS.accountName);
      const { account, key } = await createAccount(core, who.appId, name);
      return json(201, { ...account, api_key: { id: key.state.key_id, account_id: account.account_id, prefix: key.state.prefix, secret: key.secret, created_at: key.state.created_at } }, { "cache-control": "no-store" });
    }),
  );

  route(
    { method: "get", path: "/accounts", summary: "List the app's accounts", tag: "Admin", auth: "admin_key", params: [P.limit, P.cursor], responses: { 200: { description: "page", schema: "AccountList" }, 400: E400, 401: E401 } },
    "/accounts",
    admin(async (req, who) => {
      const qs = query(req);
      const limit = parseLimit(qs.get("limit"));
      const rows = await q.accounts(who.appId, decodeCursor(qs.get("cursor")), limit + 1);
      const page = rows.slice(0, limit);
      return json(200, { data: page, next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1].account_id) : null });
    }),
  );

  route(
    { method: "get", path: "/accounts/{account_id}", summary: "Read an account", tag: "Admin", auth: "admin_key", params: [P.account], responses: { 200: { description: "account", schema: "Account" }, 401: E401, 403: E403, 404: E404 } },
    "/accounts/:account_id",
    admin(async (req, who) => json(200, await ownedAccount(who, req.params[0]))),
  );

  route(
    { method: "post", path: "/accounts/{account_id}/api-keys", summary: "Issue a data API key (secret shown once)", tag: "Admin", auth: "admin_key", params: [P.account], responses: { 201: { description: "issued", schema: "ApiKeyWithSecret" }, 401: E401, 403: E403, 404: E404 } },
    "/accounts/:account_id/api-keys",
    admin(async (req, who) => {
      const a = await ownedAccount(who, req.params[0]);
      const label = req.body.length ? optionalString(jsonBody(req), "label", LIMITS.label) : null;
      const k = await issueKey(core, { kind: "api", appId: who.appId, accountId: a.account_id, label });
      return json(201, { id: k.state.key_id, account_id: a.account_id, prefix: k.state.prefix, secret: k.secret, label: k.state.label, created_at: k.state.created_at }, { "cache-control": "no-store" });
    }),
  );

  route(
    { method: "get", path: "/accounts/{account_id}/api-keys", summary: "List an account's API keys (no secrets)", tag: "Admin", auth: "admin_key", params: [P.account], responses: { 200: { description: "keys", schema: { type: "array", items: { $ref: "#/components/schemas/ApiKey" } } }, 401: E401, 403: E403, 404: E404 } },
    "/accounts/:account_id/api-keys",
    admin(async (req, who) => {
      const a = await ownedAccount(who, req.params[0]);
      return json(200, (await q.listKeys({ accountId: a.account_id }, "api")).map(apiKeyJson));
    }),
  );

  route(
    { method: "delete", path: "/accounts/{account_id}/api-keys/{key_id}", summary: "Revoke an API key (effective on the next request)", tag: "Admin", auth: "admin_key", params: [P.account, { name: "key_id", in: "path", description: "API key id" }], responses: { 204: { description: "revoked" }, 401: E401, 403: E403, 404: E404 } },
    "/accounts/:account_id/api-keys/:key_id",
    admin(async (req, who) => {
      const a = await ownedAccount(who, req.params[0]);
      const keyId = req.params[1];
      const r = isUuid(keyId) ? await revokeKey(core, keyId, { kind: "api", accountId: a.account_id }) : { outcome: "not_found" as const };
      if (r.outcome === "not_found") throw new HttpError(404, `API key ${keyId} not found`);
      return { status: 204 };
    }),
  );

  route(
    { method: "post", path: "/accounts/{account_id}/access-keys", summary: "Issue an S3-style access key (secret shown once; at most 3 active)", tag: "Admin", auth: "admin_key", params: [P.account], responses: { 201: { description: "issued", schema: "AccessKeyWithSecret" }, 401: E401, 403: E403, 404: E404, 409: { description: "limit reached" } } },
    "/accounts/:account_id/access-keys",
    admin(async (req, who) => {
      const a = await ownedAccount(who, req.params[0]);
      if ((await q.countActiveKeys(a.account_id, "access")) >= MAX_ACCESS_KEYS) throw new HttpError(409, `access key limit reached (${MAX_ACCESS_KEYS} active)`);
      const k = await issueAccessKey(core, master, { appId: who.appId, accountId: a.account_id });
      return json(201, { access_key_id: k.accessKeyId, secret_access_key: k.secretAccessKey, created_at: k.state.created_at }, { "cache-control": "no-store" });
    }),
  );

  route(
    { method: "get", path: "/accounts/{account_id}/access-keys", summary: "List an account's access keys (no secrets)", tag: "Admin", auth: "admin_key", params: [P.account], responses: { 200: { description: "keys", schema: { type: "array", items: { $ref: "#/components/schemas/AccessKey" } } }, 401: E401, 403: E403, 404: E404 } },
    "/accounts/:account_id/access-keys",
    admin(async (req, who) => {
      const a = await ownedAccount(who, req.params[0]);
      const keys = await q.listKeys({ accountId: a.account_id }, "access");
      return json(200, keys.map((k) => ({ access_key_id: k.key_id, state: k.revoked_at ? "revoked" : "active", created_at: k.created_at, revoked_at: k.revoked_at })));
    }),
  );

  route(
    { method: "delete", path: "/accounts/{account_id}/access-keys/{access_key_id}", summary: "Revoke an access key", tag: "Admin", auth: "admin_key", params: [P.account, { name: "access_key_id", in: "path", description: "access key id" }], responses: { 204: { description: "revoked" }, 401: E401, 403: E403, 404: E404 } },
    "/accounts/:account_id/access-keys/:access_key_id",
    admin(async (req, who) => {
      const a = await ownedAccount(who, req.params[0]);
      const id = req.params[1];
      const r = isAccessKeyId(id) ? await revokeKey(core, id, { kind: "access", accountId: a.account_id }) : { outcome: "not_found" as const };
      if (r.outcome === "not_found") throw new HttpError(404, `access key ${id} not found`);
      return { status: 204 };
    }),
  );

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

const MAX_ACCESS_KEYS = 3;
/** Owner of Walrus blob objects stored without send_object_to (a fixed local publisher address). */
const PUBLISHER_ADDRESS = "0x" + createHash("sha256").update("memrelay-blobstore-publisher").digest("hex");
