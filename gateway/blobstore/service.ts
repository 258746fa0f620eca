// The blob storage service's HTTP gateway (spec/blobstore.md): one uWebSockets.js server with the spec's route
// classes, one module each — data routes (./data-routes.ts, API key), admin routes (./admin-routes.ts, admin key),
// public blob reads (./public-routes.ts), the Walrus-compatible publisher/aggregator (./walrus-routes.ts), the
// infrastructure routes (./infrastructure-routes.ts) — and, here, what they share: the route table with its OpenAPI
// document and HEAD answers, the credential wrappers, and serving and storing bytes (./blob-serving.ts). The process
// around it (event log, read models, backend, garbage collection) is composed in runtime/blobstore.ts.
import type { EventLog } from "../../eventlog/connection.ts";
import type { Db } from "../../db/pool.ts";
import type { Logger } from "../../config/logger.ts";
import { HttpError, HttpServer, errorReply, parseJsonObject, queryParams, type Handler, type Reply, type Request, type RouteOptions } from "../http.ts";
import { measured, type ServiceMetrics } from "../metrics.ts";
import { isUnavailable } from "../../adapters/unavailable.ts";
import type { ProjectionRunner } from "../../projections/runtime.ts";
import type { BlobBackend } from "../../adapters/blob-bytes/backend.ts";
import { bodyBuffers, readBuffers } from "../recycled-buffers.ts";
import { JetStreamBlobBackend } from "../../adapters/blob-bytes/object-store-backend.ts";
import type { Kind } from "../../schemas/blobstore/events.ts";
import type { BlobstoreCommands } from "../../actors/blobstore/commands.ts";
import type { BlobstoreLog } from "../../actors/blobstore/log.ts";
import type { MasterKey } from "../../actors/blobstore/keys.ts";
import { Authenticator, type AccountPrincipal, type AppPrincipal } from "./auth.ts";
import type { Queries } from "../../projections/blobstore/queries.ts";
import { LIMITS } from "../../schemas/blobstore/validation.ts";
import type { RouteDoc } from "./openapi.ts";
import type { BlobstoreRouteKit } from "./route-kit.ts";
import { CACHE_BYTES, ContentCache, blobServing } from "./blob-serving.ts";
import { registerInfrastructureRoutes } from "./infrastructure-routes.ts";
import { registerDataRoutes } from "./data-routes.ts";
import { registerAdminRoutes } from "./admin-routes.ts";
import { publisherNetwork, registerWalrusRoutes } from "./walrus-routes.ts";
import { registerQuiltRoutes } from "./quilt-routes.ts";
import type { NetworkProfile } from "../../config/network-profile.ts";
import { registerPublicRoutes } from "./public-routes.ts";
import { confirmMisses, type ReadModelPositions } from "./miss-check.ts";

export interface BlobstoreGatewayDeps {
  /** The write side, composed in runtime/blobstore.ts: what the routes dispatch to. */
  readonly commands: BlobstoreCommands;
  /** The event log as the blob store reads it (credentials: a key's state from its last event). */
  readonly log: BlobstoreLog;
  readonly q: Queries;
  readonly master: MasterKey;
  readonly backend: BlobBackend;
  readonly eventLog: EventLog;
  readonly db: Db;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  readonly corsOrigins: readonly string[];
  readonly maxBlobBytes: number;
  readonly cacheBytes?: number;
  readonly walrusEpoch: number;
  /** MEMRELAY_NETWORK_PROFILE: the Walrus publisher and aggregator routes wait as the network's would. */
  readonly networkProfile: NetworkProfile;
  /** Shards of the committee whose layout quilts take (quilt-routes.ts). */
  readonly quiltShards: number;
  /** Whether the event log's connection is up (requests that need it fail fast with 503 while it is not). */
  readonly natsUp: () => boolean;
  readonly runProjections: boolean;
  readonly runners: Readonly<Record<Kind, ProjectionRunner>>;
  /** Where the read models stand against the event log: a read that misses is checked against it (miss-check.ts). */
  readonly readModels: ReadModelPositions;
}

function toReply(err: unknown): Reply | undefined {
  if (err instanceof HttpError) return errorReply(err.status, err.message, err.extra, err.headers);
  if (isUnavailable(err)) return errorReply(503, "a backing service is unavailable; retry shortly", {}, { "retry-after": "1" });
  return undefined;
}

/** The blob store's HTTP server with every route registered; the caller listens and closes it. */
export function createBlobstoreServer(deps: BlobstoreGatewayDeps): HttpServer {
  const { commands, log, q, master, backend, eventLog, db, metrics, logger, maxBlobBytes, walrusEpoch, natsUp, runProjections, runners } = deps;
  /** Bytes live on the event log's NATS: while it is away, reads that miss the cache fail fast (503) too. */
  const bytesInNats = backend instanceof JetStreamBlobBackend;
  const bytesRead = metrics.counter("bytes_read_total", "Blob bytes served");
  const bytesWritten = metrics.counter("bytes_written_total", "Blob bytes received and stored");
  const blobPuts = metrics.counter("blob_puts_total", "Blob writes, by whether the bytes were already stored", ["deduplicated"]);
  const cache = new ContentCache(deps.cacheBytes ?? CACHE_BYTES);
  metrics.gauge("content_cache_bytes", "Bytes held by the in-memory content cache", [], (g) => g.set(cache.bytes));
  const received = bodyBuffers();
  const reads = readBuffers();
  const needLog = () => {
    if (!natsUp()) throw new HttpError(503, "the event log is unavailable; retry shortly", {}, { "retry-after": "1" });
  };
  const readsBehind = metrics.counter("reads_behind_read_model_total", "Reads that missed while their read model was behind the event log (answered 503)");
  const confirmMiss = confirmMisses({ positions: deps.readModels, needLog, onBehind: () => readsBehind.inc() });

  const auth = new Authenticator(q, log, metrics, logger);
  const server = new HttpServer({
    corsOrigins: deps.corsOrigins,
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

  const { serve, serveByBlobId, storeBody, referencedSize } = blobServing({ backend, bytesInNats, needLog, confirmMiss, cache, reads, received, bytesRead, bytesWritten, blobPuts, q, db, maxBlobBytes, logger });
  registerInfrastructureRoutes({ route, docs, backend, eventLog, db, natsUp, metrics, runProjections, runners });

  const kit: BlobstoreRouteKit = { route, data, admin, jsonBody, query, rawKey, commands, q, master, maxBlobBytes, received, storeBody, serve, serveByBlobId, referencedSize, needLog, confirmMiss, walrusEpoch };
  // One publisher: blobs and quilts share its sub-wallets.
  const publisher = publisherNetwork(deps.networkProfile);
  registerWalrusRoutes(kit, publisher);
  registerQuiltRoutes(kit, { network: publisher, shards: deps.quiltShards, backend });
  registerPublicRoutes(kit);
  registerDataRoutes(kit);
  registerAdminRoutes(kit);

  server.fallback((req) => errorReply(404, `no route for ${req.method} ${req.path}`));
  return server;
}
