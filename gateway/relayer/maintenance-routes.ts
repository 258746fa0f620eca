// The relayer's index-maintenance and account routes (spec/relayer.md): manual remember and recall, forget, stats,
// restore, and the public account-existence check. Writes append events that the memory_index projection applies
// (schemas/relayer/memory-maintenance.ts); the route then waits for its own event to be applied and answers from the read
// model. Rate limits are shared across gateway replicas (gateway/rate-limit.ts).
import { offeredCredential } from "./decrypt-credential.ts";
import { randomUUID } from "node:crypto";
import type { EventLog } from "../../eventlog/connection.ts";
import type { Db } from "../../db/pool.ts";
import { primaryReads, type Reads } from "../../db/read-pool.ts";
import { intVar, type RelayerConfig } from "../../config/env.ts";
import type { Logger } from "../../config/logger.ts";
import type { BlobPort, ChainPort, EmbeddingPort } from "../../adapters/ports.ts";
import { WalletPool } from "../../adapters/chain/wallet-pool.ts";
import { expectedTxMs } from "../../config/network-profile.ts";
import { HttpError, errorReply, json, parseJsonObject, type Handler, type HttpServer, type Reply, type Request } from "../http.ts";
import type { Authenticated } from "./signed-auth.ts";
import { rankMemories } from "../../projections/relayer/recall.ts";
import { forgetDeleted, namespaceStats } from "../../projections/relayer/memory-stats.ts";
import { ManualStoreError, storeManualMemory, type ManualMemoryPorts, type ManualStoreFailure } from "../../actors/relayer/manual-memory.ts";
import { IndexLog } from "../../projections/relayer/index-log.ts";
import { DEFAULT_CANDIDATE_CAP } from "../../actors/relayer/restore-namespace.ts";
import { command, dispatchAndAwait } from "../../eventlog/command-bus.ts";
import { commandSubject, eventSubject } from "../../eventlog/subjects.ts";
import { RESTORE, RESTORE_EVENTS, isRestoreEvent, type RestoreCommandData } from "../../schemas/relayer/restore-job.ts";
import { PgRateLimiter, clientIp, ipBucket, type WindowLimit } from "../rate-limit.ts";
import { LIMITS, ValidationError, ownerAddressOf, parseManualRecall, parseManualRemember, parseNamespaceBody, parseRestore } from "../../schemas/relayer/http.ts";
import { MAX_WALLET_ATTEMPTS } from "../../schemas/relayer/remember-job.ts";
import {
  MEMORY_EVENTS,
  memoryEvent,
  memoryAggregate,
  memoryIdOf,
  namespaceAggregate,
  type MemoryForgotten,
  type MemoryRegistered,
} from "../../schemas/relayer/memory-maintenance.ts";

/**
 * Settings of these routes. The spec's variables (RESTORE_REQUESTS_PER_OWNER_PER_MINUTE, RATE_LIMIT_DISABLED,
 * TRUSTED_PROXY_HOPS) keep their documented meaning; the others are this project's.
 */
export interface MaintenanceSettings {
  /** RESTORE_REQUESTS_PER_OWNER_PER_MINUTE: sliding window per owner, default 10, 0 disables. */
  readonly restorePerOwnerPerMinute: number;
  /**
   * MEMRELAY_RESTORE_CANDIDATE_CAP: the per-owner candidate fetch of a restore (the owner's newest blob objects
   * across all namespaces), default and maximum 10,000 (what the chain port lists in one call).
   */
  readonly restoreCandidateCap: number;
  /** MEMRELAY_RESTORE_WAIT_MS: how long a restore request waits for its job, default 5 minutes. */
  readonly restoreTimeoutMs: number;
  /** Spec: 20 per minute and 120 per hour per client IP on the exists route. */
  readonly existsPerIpPerMinute: number;
  readonly existsPerIpPerHour: number;
  /** ACCOUNT_EXISTS_GLOBAL_PER_MINUTE: the deployment-wide cap of the exists route, default 3,000, 0 disables. */
  readonly existsGlobalPerMinute: number;
  /** RATE_LIMIT_DISABLED (benchmarks only): every limit of these routes is off. */
  readonly rateLimitDisabled: boolean;
}

export function maintenanceSettings(config: RelayerConfig, env: Record<string, string | undefined> = process.env): MaintenanceSettings {
  return {
    restorePerOwnerPerMinute: intVar(env, "RESTORE_REQUESTS_PER_OWNER_PER_MINUTE", 10, 0),
    restoreCandidateCap: intVar(env, "MEMRELAY_RESTORE_CANDIDATE_CAP", DEFAULT_CANDIDATE_CAP, 1, DEFAULT_CANDIDATE_CAP),
    restoreTimeoutMs: intVar(env, "MEMRELAY_RESTORE_WAIT_MS", 300_000, 1_000),
    existsPerIpPerMinute: 20,
    existsPerIpPerHour: 120,
    existsGlobalPerMinute: intVar(env, "ACCOUNT_EXISTS_GLOBAL_PER_MINUTE", 3_000, 0),
    rateLimitDisabled: config.rateLimitDisabled,
  };
}

export interface MaintenanceDeps {
  readonly config: RelayerConfig;
  readonly log: EventLog;
  readonly db: Db;
  /** Where stats may read (DATABASE_READ_URLS replicas); default: `db`. */
  readonly reads?: Reads;
  readonly chain: ChainPort;
  readonly blobs: BlobPort;
  /**
   * The process's upload wallet pool, when it runs the actor host too: a manual record and a record batch of one
   * process must not take the same wallet at once (its gas coin serves one transaction at a time). Absent (a
   * gateway-only process): a pool of the gateway's own, made at the first manual memory.
   */
  readonly wallets?: WalletPool;
  readonly embedder: EmbeddingPort;
  readonly logger: Logger;
  readonly settings?: MaintenanceSettings;
}

/** The relayer's handler wrappers (gateway/relayer/routes.ts): metrics and error mapping, plus signed-header auth. */
export interface RouteWrappers {
  wrap(name: string, h: Handler): Handler;
  signed(name: string, h: (req: Request, who: Authenticated) => Promise<Reply>): Handler;
}

/** Importance of manual memories (REFERENCE.md: plain remembers use 0.5). */
const MANUAL_IMPORTANCE = 0.5;
const MINUTE = 60_000;
const HOUR = 3_600_000;

export function registerMaintenanceRoutes(server: HttpServer, deps: MaintenanceDeps, { wrap, signed }: RouteWrappers): void {
  const { config, db, chain, embedder, logger } = deps;
  const reads = deps.reads ?? primaryReads(db);
  const settings = deps.settings ?? maintenanceSettings(config);
  const index = new IndexLog(deps.log, db);
  const limiter = new PgRateLimiter(db);
  let wallets: WalletPool | undefined;
  const limit = (limits: WindowLimit[]) => (settings.rateLimitDisabled ? Promise.resolve() : limiter.enforce(limits));

  /** Forget, stats and restore take only optional fields: an empty body is `{}`. */
  const bodyOf = (req: Request) => (req.body.length ? parseJsonObject(req.body) : {});

  const manualPorts: ManualMemoryPorts = {
    blobs: deps.blobs,
    chain,
    wallets: () => deps.wallets ?? (config.serverChainPrivateKeys.length ? (wallets ??= new WalletPool(config.serverChainPrivateKeys, { expectedCallMs: expectedTxMs(config.network, config.networkProfile) })) : undefined),
  };
  /** The answer to each way a manual store can fail. */
  const manualStoreReply = (f: ManualStoreFailure): HttpError => {
    if (f.kind === "no_wallet") return new HttpError(503, "no upload wallet is configured (SERVER_CHAIN_PRIVATE_KEYS)");
    if (f.kind === "other_namespace") return new HttpError(409, "this ciphertext is already stored in another namespace of this owner");
    logger.warn(f.kind === "blob_store" ? "manual memory upload failed" : "manual memory not recorded on chain", { error: f.error });
    return f.kind === "blob_store"
      ? new HttpError(503, "the blob store is unavailable; retry shortly", {}, { "retry-after": "2" })
      : new HttpError(503, `the blob could not be recorded on chain after ${MAX_WALLET_ATTEMPTS} wallet attempts; retry shortly`, {}, { "retry-after": "5" });
  };

  server
    // ------------------------------------------------------------------ manual mode
    .route("post", "/api/remember/manual", signed("remember_manual", async (req, who) => {
      const body = parseManualRemember(parseJsonObject(req.body), embedder.dims);
      const stored = await storeManualMemory(manualPorts, { owner: who.owner, namespace: body.namespace, bytes: body.bytes }).catch((err) => {
        throw err instanceof ManualStoreError ? manualStoreReply(err.failure) : err;
      });
      const object = stored.object;
      const id = memoryIdOf(who.owner, stored.blobId);
      const data: MemoryRegistered = {
        id,
        owner: who.owner,
        namespace: body.namespace,
        blob_id: stored.blobId,
        object_id: object.objectId,
        vector: body.vector,
        importance: MANUAL_IMPORTANCE,
        size: stored.size,
        created_at: new Date().toISOString(),
      };
      const correlation = randomUUID();
      const r = await index.append(memoryAggregate(id), [memoryEvent(MEMORY_EVENTS.registered, data)], { causationId: correlation, correlationId: correlation });
      // Read-your-writes: recallable on the next request (the event is durable either way).
      await index.waitApplied(r.seq, 5_000);
      return json(200, { id, blob_id: stored.blobId, owner: who.owner, namespace: body.namespace });
    }), { bodyLimit: LIMITS.manualBodyBytes })
    .route("post", "/api/recall/manual", signed("recall_manual", async (req, who) => {
      const body = parseManualRecall(parseJsonObject(req.body), embedder.dims);
      const hits = await rankMemories(db, { owner: who.owner, namespace: body.namespace, vector: body.vector, limit: body.limit, weights: body.weights, composite: body.composite });
      return json(200, {
        results: hits.map((h) => ({
          blob_id: h.blob_id,
          distance: h.distance,
          created_at: new Date(h.created_at).toISOString(),
          importance: h.importance,
          ...(body.composite ? { score: h.score } : {}),
        })),
        total: hits.length,
      });
    }), { bodyLimit: LIMITS.bodyBytes })
    // ------------------------------------------------------------------ forget and stats
    .route("post", "/api/forget", signed("forget", async (req, who) => {
      const { namespace } = parseNamespaceBody(bodyOf(req));
      const before = await namespaceStats(db, who.owner, namespace);
      const data: MemoryForgotten = { owner: who.owner, namespace, forgotten_at: new Date().toISOString() };
      const correlation = randomUUID();
      const r = await index.append(namespaceAggregate(who.owner, namespace), [memoryEvent(MEMORY_EVENTS.forgotten, data)], { causationId: correlation, correlationId: correlation });
      let deleted = before.count;
      if (await index.waitApplied(r.seq, 10_000)) {
        deleted = (await forgetDeleted(db, r.events[0].id)) ?? deleted;
      } else {
        // The forget is durable and will be applied; the count is the one seen just before it.
        logger.warn("forget recorded but not yet applied to the index", { seq: r.seq });
      }
      return json(200, { deleted, namespace, owner: who.owner });
    }))
    .route("post", "/api/stats", signed("stats", async (req, who) => {
      const { namespace } = parseNamespaceBody(bodyOf(req));
      const s = await reads.read((on) => namespaceStats(on, who.owner, namespace));
      return json(200, { memory_count: s.count, storage_bytes: s.bytes, namespace, owner: who.owner });
    }))
    // ------------------------------------------------------------------ restore
    .route("post", "/api/restore", signed("restore", async (req, who) => {
      const body = parseRestore(bodyOf(req));
      await limit([{ layer: "restore_owner", key: `restore:owner:${who.owner}`, limit: settings.restorePerOwnerPerMinute, windowMs: MINUTE }]);
      const job = randomUUID();
      const data: RestoreCommandData = {
        owner: who.owner,
        namespace: body.namespace,
        limit: body.limit,
        include_forgotten: body.include_forgotten,
        candidate_cap: settings.restoreCandidateCap,
        scope: "owner",
        credential: offeredCredential(req),
      };
      const outcome = await dispatchAndAwait(deps.log, {
        commandSubject: commandSubject(RESTORE, job),
        eventSubject: eventSubject(RESTORE, job),
        command: command("restore.start", RESTORE, job, data, job),
        until: (e) => (isRestoreEvent(e) && (e.type === RESTORE_EVENTS.completed || e.type === RESTORE_EVENTS.failed) ? e : undefined),
        timeoutMs: settings.restoreTimeoutMs,
      });
      if (!outcome) throw new HttpError(503, "the restore is taking longer than this request may wait; it goes on, and a later restore finds what it restored", {}, { "retry-after": "10" });
      if (outcome.value.type === RESTORE_EVENTS.failed) {
        const f = outcome.value.data;
        throw new HttpError(f.status, f.error, {}, f.retry_after_secs ? { "retry-after": String(f.retry_after_secs) } : {});
      }
      const r = outcome.value.data;
      return json(200, {
        restored: r.restored,
        skipped: r.skipped,
        total: r.total,
        namespace: body.namespace,
        owner: who.owner,
        truncated: r.truncated,
        forgotten: r.forgotten,
        failed: r.failed,
      });
    }))
    // ------------------------------------------------------------------ public account check
    .route("get", "/api/accounts/:owner/exists", wrap("account_exists", async (req) => {
      const origin = req.headers["origin"];
      if (origin && !config.corsAllowedOrigins.includes(origin) && !config.corsAllowedOrigins.includes("*")) {
        return errorReply(403, "this origin is not allowed");
      }
      // Every request counts, malformed ones too: probing with garbage is throttled like any other.
      const ip = ipBucket(clientIp(req, config.trustedProxyHops));
      await limit([
        { layer: "exists_ip_minute", key: `exists:ip:${ip}`, limit: settings.existsPerIpPerMinute, windowMs: MINUTE },
        { layer: "exists_ip_hour", key: `exists:ip:${ip}`, limit: settings.existsPerIpPerHour, windowMs: HOUR },
        { layer: "exists_global", key: "exists:global", limit: settings.existsGlobalPerMinute, windowMs: MINUTE },
      ]);
      let owner: string;
      try {
        owner = ownerAddressOf(decodeURIComponent(req.params[0] ?? ""));
      } catch (err) {
        if (err instanceof ValidationError) throw err;
        throw new ValidationError("owner must be 0x followed by 64 hexadecimal characters");
      }
      return json(200, { exists: await chain.accountExists(owner) }, { "cache-control": "no-store" });
    }));
}
