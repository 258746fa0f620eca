// The relayer's HTTP listener (spec/relayer.md): signed routes publish commands (writes) or read read models
// (queries); public routes report health, version, config and metrics. No business state lives here.
import { transportOf } from "../../adapters/chain/sui-rpc/node-client.ts";
import { randomUUID } from "node:crypto";
import type { EventLog } from "../../eventlog/connection.ts";
import { commandSubject } from "../../eventlog/subjects.ts";
import type { Db } from "../../db/pool.ts";
import { primaryReads, type ReadPool } from "../../db/read-pool.ts";
import { registerReadPoolMetrics } from "../read-pool-metrics.ts";
import type { RelayerConfig } from "../../config/env.ts";
import type { Logger } from "../../config/logger.ts";
import { PortError, type BlobPort, type ChainPort, type DecryptCredential, type EmbeddingPort, type EncryptionPort, type LanguageModelPort } from "../../adapters/ports.ts";
import { isUnavailable } from "../../adapters/unavailable.ts";
import { HttpError, HttpServer, decodePathParam, errorReply, json, parseJsonObject, queryParams, type Handler, type Reply, type Request } from "../http.ts";
import { SignedAuth, nonceReused, type Authenticated } from "./signed-auth.ts";
import { requestJobId } from "./request-job-ids.ts";
import { JobLookup } from "../../projections/relayer/job-lookup.ts";
import { CheckpointFeed } from "../../projections/checkpoint-feed.ts";
import { ServiceMetrics, measured } from "../metrics.ts";
import { registerPipelineGauges } from "../pipeline-metrics.ts";
import type { ProjectionHandle } from "../../projections/runtime.ts";
import { MEMORY_INDEX } from "../../projections/relayer/memory-index.ts";
import { LEXICAL_INDEX } from "../../projections/relayer/lexical-index.ts";
import { JOB_STATUS } from "../../projections/relayer/job-status.ts";
import { ALERTS_PROJECTION } from "../../projections/relayer/alerts.ts";
import { OAUTH_PROJECTION } from "../../projections/relayer/oauth.ts";
import { recallMemories, type RecallPorts } from "../../projections/relayer/recall.ts";
import type { HybridSettings } from "../../projections/relayer/hybrid-rank.ts";
import type { LexicalKeyring } from "../../adapters/lexical/keys.ts";
import { LIMITS, ValidationError, isUuid, parseBulk, parseEmbed, type RecallBody, parseBulkStatus, parseRecall, parseRemember, type RememberBody } from "../../schemas/relayer/http.ts";
import { JOB, JOB_EVENTS, jobEvent, type JobEventData, type RememberCommand } from "../../schemas/relayer/remember-job.ts";
import { ConcurrencyConflict, EventStore } from "../../eventlog/event-store.ts";
import { RELAYER_VERSION, healthBody, versionBody } from "./versioning.ts";
import { registerMaintenanceRoutes } from "./maintenance-routes.ts";
import { readiness, rememberQueue, type ReadinessSources } from "./readiness.ts";
import { CREDENTIAL_HEADERS, decryptCredential } from "./decrypt-credential.ts";
import { registerLanguageModelRoutes } from "./language-model-routes.ts";
import { MCP_CORS_HEADERS, registerMcpRoutes, type SidecarLink } from "./mcp-routes.ts";
import { registerOAuthRoutes } from "./oauth-routes.ts";
import { registerSponsorRoutes } from "./sponsor-routes.ts";
import { OAuthStore } from "../../actors/relayer/oauth-store.ts";
import type { DelegateVault } from "../../adapters/oauth/delegate-vault.ts";
import { PgRateLimiter } from "../rate-limit.ts";
import { consentUrlFor, type OAuthSettings } from "../../schemas/relayer/oauth.ts";
import { localWalrusPackageConfig } from "../../adapters/chain/local/walrus-deployment.ts";
import type { WalletPool } from "../../adapters/chain/wallet-pool.ts";

export interface RelayerDeps {
  readonly config: RelayerConfig;
  readonly log: EventLog;
  readonly db: Db;
  /** The primary and DATABASE_READ_URLS replicas, for recall, ask, stats and job lookups; absent: the primary only. */
  readonly reads?: ReadPool;
  readonly auth: SignedAuth;
  /** The chain port: manual memories and the account-existence check (gateway/relayer/maintenance-routes.ts). */
  readonly chain: ChainPort;
  readonly embedder: EmbeddingPort;
  readonly blobs: BlobPort;
  readonly encryption: EncryptionPort;
  /** The process's upload wallets when it runs the actor host too (manual memories share them): maintenance-routes.ts. */
  readonly wallets?: WalletPool;
  readonly logger: Logger;
  readonly embedderMode: string;
  /**
   * The keyed lexical index's keys (recall hashes the query's terms with them) and, when recall ranks hybrid
   * (projections/relayer/hybrid-rank.ts: keyed BM25 with context fused with the vector), its settings; no settings: cosine order.
   */
  readonly lexical?: { readonly keyring: LexicalKeyring; readonly settings?: HybridSettings };
  /** Fact extraction and answers (POST /api/analyze, /api/ask). */
  readonly llm: LanguageModelPort;
  /** The MCP sidecar behind the agent transports (`/api/mcp*`). */
  readonly sidecar: SidecarLink;
  /** OAuth 2.1 for the agent transports, when MCP_OAUTH_DELEGATE_ENCRYPTION_KEY is set. */
  readonly oauth?: { readonly settings: OAuthSettings; readonly vault: DelegateVault };
  /** Projection runners of this process, for the lag gauges of `/metrics`. */
  readonly projectionRunners?: () => readonly ProjectionHandle[];
  /** The process's embedding scheduler, for `/ready` and its gauge. */
  readonly embedding?: { oldestWaitMs(): number };
}

/** Importance given to plain remembers (REFERENCE.md: remember and restore use 0.5). */
const DEFAULT_IMPORTANCE = 0.5;

export function createRelayerServer(deps: RelayerDeps): HttpServer {
  const { config, log, db, auth, logger } = deps;
  const metrics = new ServiceMetrics("memrelay");
  const queryEmbedding = metrics.histogram("query_embedding_seconds", "Time to embed a recall query");
  registerPipelineGauges(metrics, {
    log,
    db,
    projections: [MEMORY_INDEX, LEXICAL_INDEX, JOB_STATUS, ALERTS_PROJECTION, OAUTH_PROJECTION],
    runners: deps.projectionRunners ?? (() => []),
    consumerPrefix: `actor-${JOB}`,
  });
  const readinessSources: ReadinessSources = { log, embedding: deps.embedding, maxWaitSecs: config.readyMaxWaitSecs };
  metrics.gauge("oldest_remember_job_wait_seconds", "Seconds the oldest remember job has waited on the work queue for an actor host to take it", [], async (g) => {
    g.set(await rememberQueue(log).then((q) => q.waitingSecs, () => 0));
  });
  metrics.gauge("oldest_embedding_wait_seconds", "Seconds the longest-stalled embedding of this process has gone without progress", [], (g) => {
    g.set((deps.embedding?.oldestWaitMs() ?? 0) / 1000);
  });
  if (deps.reads) registerReadPoolMetrics(metrics, deps.reads);
  const reads = deps.reads ?? primaryReads(db);
  const checkpoints = new CheckpointFeed(log, db);
  const jobs = new JobLookup(db, log, checkpoints, reads);
  // The consent page (another origin) calls the consent routes.
  const consentOrigin = deps.oauth && (deps.oauth.settings.consentUrl ?? (deps.oauth.settings.issuer && consentUrlFor(deps.oauth.settings.issuer)));
  const server = new HttpServer({
    corsOrigins: consentOrigin ? [...config.corsAllowedOrigins, new URL(consentOrigin).origin] : config.corsAllowedOrigins,
    corsHeaders: ["content-type", "x-public-key", "x-signature", "x-timestamp", "x-nonce", "x-account-id", ...CREDENTIAL_HEADERS, ...MCP_CORS_HEADERS].join(", "),
    onError: (err, req) => logger.error("request failed", { method: req.method, path: req.path, error: err instanceof Error ? err.message : String(err) }),
  });

  /** Wraps a handler: metrics, validation errors as 400, infrastructure outages as 503. */
  const wrap = (name: string, h: Handler): Handler => measured(metrics, name, h, toReply);
  const signed = (name: string, h: (req: Request, who: Authenticated) => Promise<Reply>, opts?: { nonceInCommand?: boolean; idempotent?: boolean }): Handler =>
    wrap(name, async (req) => h(req, await auth.authenticate(req, opts)));

  /** `position`: the item's index in a bulk request (its place in the submission order, see schemas/relayer/lexical.ts). */
  const publishRemember = async (who: Authenticated, item: RememberBody, correlationId: string, position?: number, jobId = randomUUID()): Promise<string> => {
    const command: RememberCommand = {
      type: "remember.start",
      version: 1,
      id: jobId,
      aggregate: `${JOB}.${jobId}`,
      issued_at: new Date().toISOString(),
      correlation_id: correlationId,
      data: { owner: who.owner, namespace: item.namespace, text: item.text, importance: DEFAULT_IMPORTANCE, accepted_at: new Date().toISOString(), ...(position !== undefined ? { position } : {}) },
    };
    // The request's nonce as the command id when the route left it unclaimed: the queue refuses a replay. The very
    // same signed request arriving again (its job id derives from it) finds its job and is answered with it; another
    // request reusing the nonce does not.
    const ack = await log.js.publish(commandSubject(JOB, jobId), JSON.stringify(command), { msgID: who.commandNonce ? `nonce.${who.commandNonce}` : jobId, timeout: 5_000 });
    if (ack.duplicate && who.commandNonce && !(who.requestDigest && (await jobs.one(jobId, who.owner)))) throw nonceReused();
    return jobId;
  };

  const jobEvents = new EventStore<JobEventData>(log.js, log.jsm);
  /**
   * A bulk item the work queue refused (a stream limit, a timeout) while others of the request were queued: its job
   * records the failure with the reason, so the item ends `failed` where the client looks, never silently missing.
   * Expected sequence 0: if the command did land after all, its job already exists and keeps running instead.
   */
  const recordUnqueued = async (who: Authenticated, item: RememberBody, jobId: string, reason: unknown) => {
    const error = `not queued: ${reason instanceof Error ? reason.message : String(reason)}`;
    await jobEvents.append(`${JOB}.${jobId}`, [jobEvent(JOB_EVENTS.failed, { error, attempts: 0, owner: who.owner, namespace: item.namespace })], 0, { causationId: jobId, correlationId: jobId, commitId: `unqueued:${jobId}` }).catch((err) => {
      if (!(err instanceof ConcurrencyConflict)) throw err;
    });
  };

  const recallPorts: RecallPorts = { db, reads, embedder: deps.embedder, blobs: deps.blobs, encryption: deps.encryption, lexical: deps.lexical, onQueryEmbedded: (s) => queryEmbedding.observe(s) };
  const recall = (who: Authenticated, body: RecallBody, credential: DecryptCredential) => recallMemories(recallPorts, who.owner, body, credential);

  registerLanguageModelRoutes(server, { db, embedder: deps.embedder, llm: deps.llm, lexical: deps.lexical?.keyring }, { signed, publishRemember, recall });

  server
    .route("post", "/api/remember", signed("remember", async (req, who) => {
      const body = parseRemember(parseJsonObject(req.body));
      // `?wait=<seconds>` (0-30, this project's addition): answers like the job's long poll, saving the client a
      // second signed request: 200 with the job once done or failed, else 202 with it when the wait is over.
      const waitMs = waitOf(queryParams(req).get("wait")) * 1000;
      const jobId = await publishRemember(who, body, randomUUID(), undefined, requestJobId(who.requestDigest!, 0));
      if (!waitMs) return json(202, { job_id: jobId, status: "running" });
      const running = { job_id: jobId, status: "running" as const, owner: who.owner, namespace: body.namespace };
      const j = (await jobs.settled(jobId, who.owner, waitMs, running)) ?? running;
      return json(j.status === "done" || j.status === "failed" ? 200 : 202, j);
    }, { nonceInCommand: true, idempotent: true }), { bodyLimit: LIMITS.bodyBytes })
    .route("post", "/api/remember/bulk", signed("remember_bulk", async (req, who) => {
      const body = parseBulk(parseJsonObject(req.body));
      const correlation = randomUUID();
      // Named by the request: its retry republishes the same commands, which the work queue takes once.
      const jobIds = body.items.map((_, i) => requestJobId(who.requestDigest!, i));
      const queued = await Promise.allSettled(body.items.map((it, i) => publishRemember(who, it, correlation, i, jobIds[i])));
      const refused = queued.flatMap((q, i) => (q.status === "rejected" ? [{ i, reason: q.reason }] : []));
      // Nothing queued: nothing was written, and the request fails as a whole (503 for an outage).
      if (refused.length === jobIds.length) throw refused[0].reason;
      // Part refused: those items fail with their reason, so every item of the answer ends done or failed.
      await Promise.all(refused.map(({ i, reason }) => recordUnqueued(who, body.items[i], jobIds[i], reason)));
      return json(202, { job_ids: jobIds, total: jobIds.length, status: "running" });
    }, { idempotent: true }), { bodyLimit: LIMITS.bulkBodyBytes })
    .route("post", "/api/remember/bulk/status", signed("remember_bulk_status", async (req, who) => {
      const { job_ids } = parseBulkStatus(parseJsonObject(req.body));
      const found = await jobs.many([...new Set(job_ids.filter(isUuid).map((s) => s.toLowerCase()))], who.owner);
      return json(200, {
        results: job_ids.map((id) => {
          const j = found.get(id.toLowerCase());
          if (!j) return { job_id: id, status: "not_found" };
          return { job_id: id, status: j.status, ...(j.blob_id ? { blob_id: j.blob_id } : {}), ...(j.error ? { error: j.error } : {}) };
        }),
      });
    }))
    .route("get", "/api/remember/:job_id", signed("remember_status", async (req, who) => {
      const id = decodePathParam(req.params[0])?.toLowerCase();
      // `?wait=<seconds>` (0-30, this project's addition): a long poll until the job is done or failed.
      const waitMs = waitOf(queryParams(req).get("wait")) * 1000;
      const j = id && isUuid(id) ? await jobs.settled(id, who.owner, waitMs) : undefined;
      if (!j) return errorReply(404, "job not found");
      return json(200, j);
    }))
    .route("post", "/api/recall", signed("recall", async (req, who) => {
      const body = parseRecall(parseJsonObject(req.body));
      return json(200, await recall(who, body, decryptCredential(req, "recall needs a decrypt credential")));
    }))
    .route("post", "/api/embed", signed("embed", async (req) => {
      const { text } = parseEmbed(parseJsonObject(req.body));
      const [vector] = await deps.embedder.embed([text]);
      return json(200, { vector: Array.from(vector) });
    }), { bodyLimit: LIMITS.bodyBytes })
    .route("get", "/health", wrap("health", async () => {
      const [nats, pg] = [!log.nc.isClosed() && log.nc.info !== undefined, await db.query("SELECT 1").then(() => true, () => false)];
      const status = nats && pg ? "ok" : "degraded";
      return json(nats && pg ? 200 : 503, healthBody(status, deps.embedderMode, { nats, postgres: pg }, deps.llm.promptVersions));
    }))
    .route("get", "/ready", wrap("ready", async () => {
      const r = await readiness(readinessSources);
      return json(r.ready ? 200 : 503, r.ready ? r : { ...r, error: `not ready: ${r.reasons.join("; ")}` });
    }))
    .route("get", "/version", wrap("version", async () => json(200, versionBody())))
    .route("get", "/config", wrap("config", async () =>
      json(200, {
        packageId: config.packageId,
        network: config.network,
        chainRpcUrl: config.chainRpcUrl,
        // the name the MemWal SDKs read
        suiRpcUrl: config.chainRpcUrl,
        chainGrpcUrl: config.chainGrpcUrl,
        // the transport the chain paths use: gRPC when CHAIN_GRPC_URL is set (runtime/worker.ts, adapters/chain/sui-rpc/node-client.ts)
        chainTransport: transportOf({ grpcUrl: config.chainGrpcUrl, rpcUrl: config.chainRpcUrl }) ?? "jsonrpc",
        rateLimitDisabled: config.rateLimitDisabled,
        registryId: config.registryId,
        // the local network's Walrus deployment, for WalrusClient's packageConfig (storage nodes over http)
        ...(config.network === "localnet" ? { walrusPackageConfig: localWalrusPackageConfig(config.network) } : {}),
        relayerVersion: RELAYER_VERSION,
        embedder: { name: deps.embedder.name, dims: deps.embedder.dims },
      })))
    .route("get", "/metrics", () => metrics.reply());
  const oauth = deps.oauth && registerOAuthRoutes(server, {
    settings: deps.oauth.settings,
    store: new OAuthStore(log),
    vault: deps.oauth.vault,
    chain: deps.chain,
    limiter: new PgRateLimiter(db),
    logger,
    issuer: () => deps.oauth!.settings.issuer ?? `http://${config.host}:${server.port}`,
    trustedProxyHops: config.trustedProxyHops,
    wrap,
  });
  registerMcpRoutes(server, deps.sidecar, { trustedProxyHops: config.trustedProxyHops, logger, wrap, oauth });
  registerSponsorRoutes(server, deps.sidecar, {
    trustedProxyHops: config.trustedProxyHops,
    logger,
    wrap,
    limiter: new PgRateLimiter(db),
    rateLimit: config.sponsorRateLimit,
    rateLimitDisabled: config.rateLimitDisabled,
  });
  registerMaintenanceRoutes(server, { config, log, db, reads, chain: deps.chain, blobs: deps.blobs, wallets: deps.wallets, embedder: deps.embedder, logger }, { wrap, signed });
  server.fallback();
  return server;
}

/** The `wait` query parameter of a job lookup: whole seconds, 0 to 30. */
function waitOf(raw: string | null): number {
  if (raw === null || raw === "") return 0;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > LIMITS.jobWaitSecsMax) throw new ValidationError(`wait must be a whole number of seconds from 0 to ${LIMITS.jobWaitSecsMax}`);
  return n;
}

/** Maps known failures to replies; unknown ones propagate as 500. */
export function toReply(err: unknown): Reply | undefined {
  if (err instanceof HttpError) return errorReply(err.status, err.message, err.extra, err.headers);
  if (err instanceof ValidationError) return errorReply(400, err.message);
  // The language model's failures are the provider's, not ours or the client's: 502/504 with what went wrong.
  if (err instanceof PortError && err.port === "language-model") {
    if (err.kind === "invalid") return errorReply(502, `the language model's answer was unusable (${err.message.replace(/^language-model: /, "")}); nothing was stored`);
    if (err.kind === "unavailable") return errorReply(504, `the language model did not answer (${err.message.replace(/^language-model: /, "")}); nothing was stored`, {}, { "retry-after": "5" });
    return errorReply(502, `the language model provider refused the request (${err.kind}); nothing was stored`);
  }
  if (isUnavailable(err)) return errorReply(503, `${unavailableService(err)} unavailable; retry shortly`, {}, { "retry-after": "1" });
  if (err instanceof PortError) {
    if (err.kind === "forbidden") return errorReply(403, "the decrypt credential was refused by the key servers");
    if (err.kind === "invalid") return errorReply(400, err.message);
  }
  return undefined;
}

const PORT_SERVICES: Record<string, string> = { encryption: "the key servers (encryption) are", blobs: "the blob store is", chain: "the chain is", embeddings: "the embedder is", sponsor: "the sponsor is" };
// nats.js's failures by class (the same names in @nats-io/nats-core and @nats-io/jetstream).
const NATS_ERRORS = new Set(["ClosedConnectionError", "DrainingConnectionError", "ConnectionError", "TimeoutError", "NoRespondersError", "RequestError", "JetStreamError", "JetStreamApiError"]);
const POSTGRES_MESSAGES = /timeout exceeded when trying to connect|connection terminated|the database system is|client has encountered a connection error/i;

/**
 * Which backing service a failure came from, for the 503: "a backing service" alone left clients and operators
 * guessing (bench 2d's recalls beside long remembers). Names only the service, never the failure's text.
 */
export function unavailableService(err: unknown, depth = 0): string {
  const fallback = "a backing service is";
  if (!err || typeof err !== "object" || depth > 3) return fallback;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown };
  if (err instanceof PortError) return PORT_SERVICES[err.port] ?? `the ${err.port} service is`;
  if ((typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code)) || (typeof e.message === "string" && POSTGRES_MESSAGES.test(e.message))) return "the database (Postgres) is";
  if (NATS_ERRORS.has(err.constructor.name)) return "the event log (NATS) is";
  const inner = unavailableService(e.cause, depth + 1);
  return inner === fallback ? fallback : inner;
}
