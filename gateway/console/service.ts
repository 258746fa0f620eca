// The developer console API's HTTP gateway (spec/console.md; CONSOLE_PORT, paths under /api/v1 plus the neutral
// /encryption/sponsor routes): it authenticates, validates and either publishes commands to the console's actors or
// answers from the console's read models. This module builds the server and holds the scope checks every route
// makes; the routes are one module per resource: ./bucket-routes.ts (spaces, buckets), ./file-routes.ts (files),
// ./sponsor-routes.ts (sponsorship). The process around it (actors, projections, storage, chain) is composed in
// runtime/console.ts.
//
// Where the spec answers synchronously (reserve, finalize, bucket update and delete, sponsor execute, file delete)
// the gateway publishes the command and awaits the outcome event, then waits for the console read model to reach it
// (read-your-writes). Uploads stream the multipart body straight into storage and answer 202 once the upload job is
// queued; its actor does the rest. The access index is a separate projection: right after finalize or a grant it may
// lag, and uploads then answer 403 mirror_missing_grant — the real lag, never an artificial delay.
import type { EventLog } from "../../eventlog/connection.ts";
import type { Db } from "../../db/pool.ts";
import type { Logger } from "../../config/logger.ts";
import { HttpError, HttpServer, json, queryParams, type Handler, type Reply, type Request } from "../http.ts";
import { ServiceMetrics, measured } from "../metrics.ts";
import { registerPipelineGauges } from "../pipeline-metrics.ts";
import type { ProjectionHandle } from "../../projections/runtime.ts";
import type { SponsoredChainPort } from "../../adapters/ports.ts";
import type { keypairFromSecret } from "../../adapters/chain/sui/keys.ts";
import { AGG, CMD, EV, isConsoleEvent, type AccessScope, type ConsoleEvent, type UploadQueued, type UploadState } from "../../schemas/console/events.ts";
import { foldUpload } from "../../schemas/console/upload-view.ts";
import { CODE, ConsoleHttpError, PLAN_TIERS, notFound, pathUuid } from "../../schemas/console/http.ts";
import type { ConsoleLog } from "../../actors/console/log.ts";
import { StorageError, type StoragePort } from "../../adapters/file-storage/blobstore-http.ts";
import { bodyBuffers } from "../recycled-buffers.ts";
import { ConsoleAuth, type Principal } from "./auth.ts";
import type { Queries } from "../../projections/console/queries.ts";
import type { BucketRow, FileRow } from "../../projections/console/query-parts.ts";
import { CONSOLE_PROJECTION } from "../../projections/console/read-models.ts";
import { ACCESS_PROJECTION } from "../../projections/console/access-index.ts";
import { RateLimiter, type ConsoleRouteKit, type GatewayLimits } from "./route-kit.ts";
import { registerBucketRoutes } from "./bucket-routes.ts";
import { registerFileRoutes } from "./file-routes.ts";
import { registerSponsorRoutes } from "./sponsor-routes.ts";
import type { PolicyReader } from "../../actors/console/chain.ts";
import { inactive } from "../../actors/console/bucket.decider.ts";
import { contractError, inContract } from "./domain-errors.ts";

export const CONSOLE_VERSION = "1.0.0-beta";

export interface ConsoleGatewayDeps {
  readonly log: EventLog;
  readonly db: Db;
  readonly clog: ConsoleLog;
  readonly q: Queries;
  readonly policies: PolicyReader;
  readonly chain: SponsoredChainPort;
  readonly sponsor: ReturnType<typeof keypairFromSecret>;
  readonly storage: StoragePort;
  readonly logger: Logger;
  readonly limits: GatewayLimits;
  /** Waits until the console read model reflects stream sequence `seq`. */
  readonly settle: (seq: number, timeoutMs?: number) => Promise<void>;
  /** This process's projections, if it runs them (for the pipeline gauges). */
  readonly runners: { readonly console?: ProjectionHandle; readonly access?: ProjectionHandle };
  readonly corsOrigins: readonly string[];
}

function toReply(thrown: unknown): Reply | undefined {
  const err = inContract(thrown);
  if (err instanceof ConsoleHttpError) return json(err.status, err.body(), err.headers);
  if (err instanceof StorageError) {
    // the blob store refused or dropped the bytes: the client may retry the upload as a whole
    return json(err.transient ? 503 : 502, { error: "file storage is unavailable; retry shortly" }, { "retry-after": "1" });
  }
  if (err instanceof HttpError) {
    const code = err.status === 413 ? CODE.payloadTooLarge : err.status === 400 ? CODE.badRequest : err.status === 401 ? CODE.unauthorized : undefined;
    return json(err.status, { error: err.message, ...(code ? { code } : {}), ...err.extra }, err.headers);
  }
  const msg = err instanceof Error ? err.message : String(err);
  if (/CONNECTION_CLOSED|closed|disconnect|TIMEOUT|timeout|no responders|ECONNREFUSED|Connection terminated|connect ECONN|57P01|the database system/i.test(msg)) {
    return json(503, { error: "a backing service is unavailable; retry shortly" }, { "retry-after": "1" });
  }
  return undefined;
}

/** The console's HTTP server with every route registered; the caller listens and closes it. */
export function createConsoleServer(deps: ConsoleGatewayDeps): HttpServer {
  const { log, db, clog, q, policies, chain, sponsor, storage, logger, limits, settle, runners } = deps;
  const auth = new ConsoleAuth(q, clog);
  const metrics = new ServiceMetrics("console");
  registerPipelineGauges(metrics, {
    log,
    db,
    projections: [CONSOLE_PROJECTION, ACCESS_PROJECTION],
    runners: () => [runners.console, runners.access].filter((r): r is ProjectionHandle => !!r),
    consumerPrefix: "actor-console",
  });
  const uploadLimiter = new RateLimiter(limits.uploadsPerMinute);
  const slabs = bodyBuffers();
  const server = new HttpServer({
    corsOrigins: deps.corsOrigins,
    corsHeaders: "content-type, authorization",
    onError: (err, req) => logger.error("request failed", { method: req.method, path: req.path, error: err instanceof Error ? err.message : String(err) }),
  });

  const wrap = (name: string, h: Handler): Handler =>
    measured(metrics, name, h, (err) => {
      if (err instanceof StorageError) logger.warn("file storage failed", { route: name, status: err.status, error: err.message });
      const reply = toReply(err);
      if (reply) return reply;
      logger.error("request failed", { route: name, error: err instanceof Error ? err.message : String(err) });
      return json(500, { error: "internal error" });
    });
  const authed = (name: string, h: (req: Request, p: Principal) => Promise<Reply>): Handler => wrap(name, async (req) => h(req, await auth.authenticate(req)));
  const qs = queryParams;
  const P = "/api/v1";

  // ---------------------------------------------------------------- scope checks

  const scopeError = () => new ConsoleHttpError(403, "this API key cannot access the target resource", CODE.bucketNotInScope);
  const scopeSpace = async (p: Principal, spaceId: string) => {
    if (p.spaceId && p.spaceId !== spaceId) {
      if (!(await q.space(spaceId))) throw notFound(`space ${spaceId} not found`);
      throw scopeError();
    }
    const role = await q.role(spaceId, p.userId);
    if (!role) {
      if (!(await q.space(spaceId))) throw notFound(`space ${spaceId} not found`);
      throw scopeError();
    }
    return role;
  };
  const scopeBucket = async (p: Principal, raw: string): Promise<BucketRow> => {
    const id = pathUuid(raw, "bucket");
    const b = await q.bucketWithRole(id, p.userId);
    if (!b || b.state === "deleted") throw notFound(`bucket ${id} not found`);
    if (!b.role || (p.spaceId && p.spaceId !== b.space_id)) throw scopeError();
    return b;
  };
  const scopeFile = async (p: Principal, rawBucket: string, rawFile: string) => {
    const bucket = await scopeBucket(p, rawBucket);
    const id = pathUuid(rawFile, "file");
    // Read-your-writes: a file accepted moments ago is known to the log before the read model has it.
    const f = (await q.file(id)) ?? (await uploadView(id))?.file ?? null;
    if (!f || f.bucket_id !== bucket.bucket_id) throw notFound(`file ${id} not found in bucket ${bucket.bucket_id}`);
    return { bucket, file: f };
  };
  /** Private buckets: the access index must grant one of the caller's service-key addresses `need`. */
  const checkAccess = async (p: Principal, b: BucketRow, need: AccessScope, known?: AccessScope | null) => {
    if (b.visibility !== "private") return;
    if (!b.encryption_policy_id) throw new ConsoleHttpError(409, "the private bucket has no encryption policy", CODE.bucketNotFinalized);
    const addresses = p.serviceAddress ? [p.serviceAddress] : await q.serviceAddresses(p.userId);
    const have = known !== undefined ? known : await q.access(b.encryption_policy_id, addresses);
    if (have === "readwrite" || (have === "read" && need === "read")) return;
    // Not in the index: the chain is the source of truth. Granted there → the index has not mirrored it yet.
    if (await policies.grants(b.encryption_policy_id, addresses, need)) {
      throw new ConsoleHttpError(403, "the access grant is not mirrored into the access index yet; retry in a few seconds", CODE.mirrorMissingGrant, {}, { "retry-after": "3" });
    }
    throw new ConsoleHttpError(403, `this key's service key has no ${need} grant on the bucket's policy`, CODE.bucketNotInScope);
  };
  const activeBucket = (b: BucketRow) => {
    const refused = inactive(b);
    if (refused) throw contractError(refused);
  };
  const tierOf = (name: string) => limits.tiers[name] ?? limits.tiers.free ?? PLAN_TIERS.free;

  /**
   * An upload the read model does not have yet, as its job's events (or its command still on the queue) tell it:
   * queued or active (a finished job reads as active until the read model shows it), and a file summary.
   */
  const uploadView = async (fileId: string): Promise<{ state: UploadState; progress: number | null; error: { code: string; message: string } | null; file: FileRow } | null> => {
    // Cheap reads first (this answers polls right after a 202): the job's last commit, the command still queued; the
    // full history (a handful of events) only when neither carries the upload's description. Snapshots are the actor
    // host's own: their shape follows the machine's, not a contract.
    const last = await clog.last(AGG.upload, fileId);
    const events = (last?.events ?? []).filter(isConsoleEvent);
    const queuedIn = (es: readonly ConsoleEvent[]): UploadQueued | undefined => es.flatMap((e) => (e.type === EV.uploadQueued ? [e.data] : []))[0];
    let queued = queuedIn(events);
    if (!queued && !last) {
      const pending = await clog.pendingCommand(AGG.upload, fileId);
      if (pending?.type === CMD.uploadStart) queued = pending.data;
    }
    if (!queued && last) {
      const { events: all } = await clog.store.load(`${AGG.upload}.${fileId}`);
      queued = queuedIn(all.map((e) => e.event));
    }
    if (!queued) return null;
    // The upload's one fold (schemas/console/upload-view.ts) over its last commit (the subject holds console events
    // only), except that an outcome shows once the read model has it, with the file's status: until then, active.
    const state: UploadState = foldUpload(events).upload_state === "queued" ? "queued" : "active";
    const progress: number | null = 0;
    const error: { code: string; message: string } | null = null;
    const storageObjectId: string | null = null;
    const updated = events.at(-1)?.occurred_at ?? queued.created_at;
    const file: FileRow = {
      file_id: queued.file_id,
      bucket_id: queued.bucket_id,
      space_id: queued.space_id,
      name: queued.name,
      blob_id: queued.blob_id,
      storage_object_id: storageObjectId,
      storage_bucket_name: queued.storage_bucket_name,
      storage_key: queued.storage_key,
      size: String(queued.size),
      mime_type: queued.mime_type,
      status: "uploading",
      is_private: queued.is_private,
      metadata: queued.metadata,
      name_claim: queued.name_claim,
      upload_state: state,
      upload_progress: progress,
      upload_error: error,
      upload_finished_at: null,
      created_at: new Date(queued.created_at),
      updated_at: new Date(updated),
      deleted_at: null,
      name_lower: queued.name.toLowerCase(),
    };
    return { state, progress, error, file };
  };
  const kit: ConsoleRouteKit = { server, wrap, authed, qs, P, auth, clog, q, policies, chain, sponsor, storage, logger, limits, settle, slabs, uploadLimiter, scopeError, scopeSpace, scopeBucket, scopeFile, checkAccess, activeBucket, tierOf, uploadView };
  registerBucketRoutes(kit);
  registerFileRoutes(kit);
  registerSponsorRoutes(kit);

  // ---------------------------------------------------------------- infrastructure

  server.route("get", "/health", wrap("health", async () => {
    const nats = !log.nc.isClosed();
    const pg = await db.query("SELECT 1").then(() => true, () => false);
    return json(nats && pg ? 200 : 503, { status: nats && pg ? "ok" : "degraded", service: "console", version: CONSOLE_VERSION, checks: { nats, postgres: pg } });
  }));
  server.route("get", "/metrics", () => metrics.reply());
  server.fallback((req) => json(404, { error: `no route for ${req.method} ${req.path}`, code: CODE.notFound }));
  return server;
}
