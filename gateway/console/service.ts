// The developer console API (spec/console.md) on the same backbone as the relayer: a uWebSockets.js listener
// (CONSOLE_PORT, paths under /api/v1 plus the neutral /encryption/sponsor routes) that authenticates, validates and
// either publishes commands to the console's actors or answers from the console's read models.
//
//   actors       console.key, console.bucket, console.upload, console.file, console.sponsor (./actors)
//   projections  console (spaces, buckets, files, keys) and console_access (the access index)   (./projections.ts)
//   storage      the blob storage service's data API over HTTP                                  (./storage.ts)
//   chain        the chain port: bucket policies and access groups, sponsored by the console    (actors/console/chain.ts)
//
// Where the spec answers synchronously (reserve, finalize, bucket update and delete, sponsor execute, file delete)
// the gateway publishes the command and awaits the outcome event, then waits for the console read model to reach it
// (read-your-writes). Uploads stream the multipart body straight into storage and answer 202 once the upload job is
// queued; its actor does the rest. The access index is a separate projection: right after finalize or a grant it may
// lag, and uploads then answer 403 mirror_missing_grant — the real lag, never an artificial delay.
import { randomUUID } from "node:crypto";
import type { EventLog } from "../../eventlog/connection.ts";
import type { Db } from "../../db/pool.ts";
import { createLogger, type Logger } from "../../config/logger.ts";
import { HttpError, HttpServer, decodePathParam, json, queryParams, type Handler, type Reply, type Request } from "../http.ts";
import { ServiceMetrics, measured } from "../metrics.ts";
import { registerPipelineGauges } from "../pipeline-metrics.ts";
import type { CommandEnvelope, EventEnvelope } from "../../schemas/envelope.ts";
import { ProjectionRunner, migrateCheckpoints, readCheckpoint } from "../../projections/runtime.ts";
import type { SponsoredChainPort } from "../../adapters/ports.ts";
import { keypairFromSecret } from "../../adapters/chain/local/keys.ts";
import { TX_CLOCK_SKEW_MS } from "../../adapters/chain/local/model.ts";
import type { StoredObject as ChainObject } from "../../schemas/chain.ts";
import {
  AGG,
  CMD,
  EV,
  type AccessScope,
  type BucketFinalizeFailed,
  type BucketReserveCommandData,
  type BucketUpdateCommandData,
  type FileDeleteCommandData,
  type SponsorExecuted,
  type SponsorFailed,
  type SponsorReserved,
  type UploadQueued,
  type UploadState,
} from "../../schemas/console/events.ts";
import {
  CODE,
  CONSOLE_LIMITS,
  ConsoleHttpError,
  PLAN_TIERS,
  badRequest,
  notFound,
  parseBucketListQuery,
  parseCreateBucket,
  parseFileListQuery,
  parseFileMetadata,
  parseJsonBody,
  parseSignatureBody,
  parseSpaceType,
  parseSponsor,
  parseUpdateBucket,
  pathUuid,
  validateFileName,
  validateMimeType,
  type PlanTier,
} from "../../schemas/console/http.ts";
import { ConsoleLog, claimId, command } from "../../actors/console/log.ts";
import { BlobStoreStorage, StorageError, storageBucketName, type StoragePort, type StoredObject } from "../../adapters/file-storage/blobstore-http.ts";
import { Admission } from "./admission.ts";
import { bodyBuffers } from "../recycled-buffers.ts";
import { ConsoleAuth, requireWrite, type Principal } from "./auth.ts";
import { Queries, type BucketRow, type FileListRow, type FileRow, type SpaceRow } from "../../projections/console/queries.ts";
import { ACCESS_PROJECTION, CONSOLE_PROJECTION, accessIndexProjection, consoleProjection } from "../../projections/console/read-models.ts";
import { PolicyReader, buildSponsoredTx, txTimestamp, verifySenderSignature } from "../../actors/console/chain.ts";
import { boundaryOf, parseMultipart } from "./multipart.ts";
import type { ConsoleActorPorts } from "../../actors/console/ports.ts";
import { ConsoleActorHost } from "../../actors/console/host.ts";
import type { DirectoryContext } from "../../actors/console/directory.ts";
import { keyActor } from "../../actors/console/key.actor.ts";
import { bucketActor } from "../../actors/console/bucket.actor.ts";
import { uploadActor } from "../../actors/console/upload.actor.ts";
import { fileActor } from "../../actors/console/file.actor.ts";
import { sponsorActor } from "../../actors/console/sponsor.actor.ts";

export const CONSOLE_VERSION = "1.0.0-beta";

export interface ConsoleLimits {
  /** per upload (spec: 100 MiB) */
  readonly maxUploadBytes?: number;
  /** uploads per minute per API key before 429 (0 disables) */
  readonly uploadsPerMinute?: number;
  /** how long the status route keeps answering for a finished upload before 404 */
  readonly uploadStatusRetentionMs?: number;
  /** lifetime of a sponsored transaction reservation */
  readonly sponsorTtlMs?: number;
  readonly tiers?: Readonly<Record<string, PlanTier>>;
}

export interface ConsoleOptions {
  readonly log: EventLog;
  readonly db: Db;
  readonly chain: SponsoredChainPort;
  /** The blob storage service's data API and the console account's API key (or any StoragePort). */
  readonly storage: StoragePort | { readonly url: string; readonly apiKey: string };
  /** The console's sponsor: pays the gas of sponsored transactions and blob records (fund it). */
  readonly sponsorSecretKey: Uint8Array;
  readonly host?: string;
  /** CONSOLE_PORT (default 8100; 0 picks a free one) */
  readonly port?: number;
  readonly logger?: Logger;
  readonly corsOrigins?: readonly string[];
  readonly roles?: { readonly gateway?: boolean; readonly actors?: boolean; readonly projections?: boolean };
  readonly actorConcurrency?: number;
  readonly limits?: ConsoleLimits;
}

export interface ConsoleHandle {
  readonly port: number;
  readonly url: string;
  readonly sponsorAddress: string;
  readonly runners: { readonly console?: ProjectionRunner; readonly access?: ProjectionRunner };
  readonly hosts: readonly ConsoleActorHost[];
  /** What this process's actors run with (for operators and tests that run an extra actor host). */
  readonly actorPorts: ConsoleActorPorts;
  /** Resolves once the console read model has applied everything the log holds now. */
  caughtUp(timeoutMs?: number): Promise<boolean>;
  /** Operator actions (sign up, spaces, members, keys) against this console's log and read model. */
  readonly directory: DirectoryContext;
  stop(): Promise<void>;
}

const DEFAULT_RETENTION_MS = 60_000;
const DEFAULT_SPONSOR_TTL_MS = 5 * 60_000;

const bucketJson = (b: BucketRow) => ({
  id: b.bucket_id,
  space_id: b.space_id,
  name: b.name,
  storage_bucket_name: b.storage_bucket_name,
  visibility: b.visibility,
  encryption_policy_id: b.encryption_policy_id,
  storage_used: Number(b.storage_used),
  file_count: b.file_count,
  state: b.state,
  created_at: b.created_at.toISOString(),
  updated_at: b.updated_at.toISOString(),
});

const fileJson = (f: FileListRow) => ({
  id: f.file_id,
  bucket_id: f.bucket_id,
  name: f.name,
  blob_id: f.blob_id,
  storage_object_id: f.storage_object_id,
  size: Number(f.size),
  mime_type: f.mime_type,
  status: f.status,
  is_private: f.is_private,
  metadata: f.metadata,
  created_at: f.created_at.toISOString(),
  updated_at: f.updated_at.toISOString(),
  deleted_at: f.deleted_at ? f.deleted_at.toISOString() : null,
});

const spaceJson = (s: SpaceRow) => ({
  id: s.space_id,
  type: s.type,
  name: s.name,
  storage_used: Number(s.storage_used),
  storage_cap: Number(s.storage_cap),
  bucket_count: s.bucket_count,
  role: s.role,
  tier: s.tier,
  created_at: s.created_at.toISOString(),
  ...(s.type === "team" ? { member_count: s.member_count } : {}),
});

function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, "_").replace(/["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase())}`;
}

/** A small per-key token bucket (per replica: a cap on bursts, not a billing meter). */
class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(private readonly perMinute: number) {}
  take(key: string): number {
    if (this.perMinute <= 0) return 0;
    const now = Date.now();
    const b = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
    b.tokens = Math.min(this.perMinute, b.tokens + ((now - b.at) / 60_000) * this.perMinute);
    b.at = now;
    if (this.buckets.size > 100_000) this.buckets.clear();
    this.buckets.set(key, b);
    if (b.tokens < 1) return Math.ceil(((1 - b.tokens) / this.perMinute) * 60);
    b.tokens -= 1;
    return 0;
  }
}

function toReply(err: unknown): Reply | undefined {
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

export async function startConsole(opts: ConsoleOptions): Promise<ConsoleHandle> {
  const logger = (opts.logger ?? createLogger()).child({ service: "console" });
  const { log, db, chain } = opts;
  const roles = { gateway: true, actors: true, projections: true, ...opts.roles };
  const limits = {
    maxUploadBytes: opts.limits?.maxUploadBytes ?? CONSOLE_LIMITS.uploadBytes,
    uploadsPerMinute: opts.limits?.uploadsPerMinute ?? 600,
    retentionMs: opts.limits?.uploadStatusRetentionMs ?? DEFAULT_RETENTION_MS,
    sponsorTtlMs: opts.limits?.sponsorTtlMs ?? DEFAULT_SPONSOR_TTL_MS,
    tiers: opts.limits?.tiers ?? PLAN_TIERS,
  };
  const storage: StoragePort = "put" in opts.storage ? opts.storage : new BlobStoreStorage(opts.storage);
  const ownsStorage = !("put" in opts.storage);
  const clog = new ConsoleLog(log);
  const q = new Queries(db);
  const policies = new PolicyReader(chain);
  const sponsor = keypairFromSecret(opts.sponsorSecretKey);
  const stops: (() => Promise<void> | void)[] = [];
  const runners: { console?: ProjectionRunner; access?: ProjectionRunner } = {};
  const hosts: ConsoleActorHost[] = [];

  await migrateCheckpoints(db);
  // The gateway reads the read models even when another process runs the projections: make sure they exist.
  await consoleProjection.migrate(db);
  await accessIndexProjection.migrate(db);
  if (roles.projections) {
    runners.console = new ProjectionRunner(log, db, consoleProjection, logger.child({ projection: CONSOLE_PROJECTION }));
    runners.access = new ProjectionRunner(log, db, accessIndexProjection, logger.child({ projection: ACCESS_PROJECTION }));
    for (const r of [runners.console, runners.access]) {
      await r.start();
      stops.push(() => r.stop());
    }
  }
  const ports: ConsoleActorPorts = { clog, storage, chain, sponsorKey: opts.sponsorSecretKey, db, logger };
  if (roles.actors) {
    for (const def of [keyActor(ports), bucketActor(ports), uploadActor(ports), fileActor(ports), sponsorActor(ports)]) {
      const host = new ConsoleActorHost(log, def, logger.child({ actor: def.aggregateType }), { concurrency: opts.actorConcurrency ?? 32 });
      await host.start();
      hosts.push(host);
      stops.push(() => host.stop());
    }
  }

  /** Waits until the console read model reflects stream sequence `seq`. */
  const settle = async (seq: number, timeoutMs = 10_000) => {
    if (runners.console) {
      if (!(await runners.console.waitFor(seq, timeoutMs))) logger.warn("console read model is behind; answering anyway", { seq });
      return;
    }
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && (await readCheckpoint(db, CONSOLE_PROJECTION)) < seq) await new Promise((r) => setTimeout(r, 5));
  };
  const caughtUp = async (timeoutMs = 30_000) => {
    const seq = await clog.lastSeq("evt.console.>");
    if (!seq) return true;
    if (runners.console) return (await runners.console.waitFor(seq, timeoutMs)) && (!runners.access || (await runners.access.waitFor(seq, timeoutMs)));
    await settle(seq, timeoutMs);
    return (await readCheckpoint(db, CONSOLE_PROJECTION)) >= seq;
  };

  let port = 0;
  let url = "";
  if (roles.gateway) {
    const auth = new ConsoleAuth(q, clog);
    const metrics = new ServiceMetrics("console");
    registerPipelineGauges(metrics, {
      log,
      db,
      projections: [CONSOLE_PROJECTION, ACCESS_PROJECTION],
      runners: () => [runners.console, runners.access].filter((r): r is ProjectionRunner => !!r),
      consumerPrefix: "actor-console",
    });
    const uploadLimiter = new RateLimiter(limits.uploadsPerMinute);
    const slabs = bodyBuffers();
    const server = new HttpServer({
      corsOrigins: opts.corsOrigins ?? [],
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
      if (b.state === "pending_policy" || b.state === "finalizing") throw new ConsoleHttpError(409, "the bucket has not completed finalize", CODE.bucketNotFinalized);
      if (b.state === "provisioning") throw new ConsoleHttpError(409, "the bucket is still being set up; retry shortly", CODE.bucketNotFinalized, {}, { "retry-after": "1" });
      if (b.state !== "active") throw notFound(`bucket ${b.bucket_id} not found`);
    };
    const quotaError = (cap: number) => new ConsoleHttpError(422, `the space's storage quota of ${cap} bytes would be exceeded`, CODE.quotaExceeded);
    const tierOf = (name: string) => limits.tiers[name] ?? limits.tiers.free ?? PLAN_TIERS.free;

    // ---------------------------------------------------------------- spaces

    server.route("get", `${P}/spaces`, authed("GET /spaces", async (req, p) => {
      const type = parseSpaceType(qs(req).get("type"));
      return json(200, { data: (await q.spacesOf(p.userId, type, p.spaceId)).map(spaceJson) });
    }));

    server.route("get", `${P}/spaces/:id/buckets`, authed("GET /spaces/{id}/buckets", async (req, p) => {
      const spaceId = pathUuid(req.params[0], "space");
      await scopeSpace(p, spaceId);
      const page = await q.buckets(spaceId, parseBucketListQuery(qs(req)));
      return json(200, { buckets: page.rows.map(bucketJson), next_cursor: page.next });
    }));

    server.route("post", `${P}/spaces/:id/buckets`, authed("POST /spaces/{id}/buckets", async (req, p) => {
      requireWrite(p);
      const spaceId = pathUuid(req.params[0], "space");
      await scopeSpace(p, spaceId);
      const body = parseCreateBucket(parseJsonBody(req.body));
      if (!p.serviceAddress) throw badRequest("this API key has no service key to sign the bucket policy with");
      const space = (await q.space(spaceId))!;
      const tier = tierOf(space.tier);
      if ((await q.liveBucketCount(spaceId)) >= tier.buckets) {
        throw new ConsoleHttpError(422, `the ${space.tier} plan allows ${tier.buckets} buckets per space`, CODE.planLimitExceeded, { limit: "buckets", currentTier: space.tier });
      }
      if (space.storage_used >= space.storage_cap) {
        throw new ConsoleHttpError(422, `the space has used its ${space.storage_cap} bytes of storage`, CODE.planLimitExceeded, { limit: "storage", currentTier: space.tier });
      }
      const bucketId = randomUUID();
      const claim = await clog.claim("bucket", spaceId, body.name, bucketId);
      const tx = buildSponsoredTx({ network: chain.network, kind: "bucket_policy_create", args: { bucket_id: bucketId, space_id: spaceId }, sender: p.serviceAddress, sponsorAddress: sponsor.address });
      const data: BucketReserveCommandData = {
        bucket_id: bucketId,
        space_id: spaceId,
        name: body.name,
        visibility: "private",
        storage_bucket_name: storageBucketName(bucketId),
        name_claim: claim,
        created_by: p.userId,
        created_at: new Date().toISOString(),
        tx_bytes: tx.bytes,
        digest: tx.digest,
        sender: p.serviceAddress,
      };
      const r = await clog.dispatch(AGG.bucket, bucketId, command(CMD.bucketReserve, AGG.bucket, bucketId, data), (e) => (e.type === EV.bucketReserved ? true : undefined));
      await settle(r.seq);
      return json(201, { bucket_id: bucketId, bytes: tx.bytes, digest: tx.digest, state: "pending_policy" });
    }), { bodyLimit: CONSOLE_LIMITS.jsonBody });

    // ---------------------------------------------------------------- buckets

    server.route("get", `${P}/buckets/:id`, authed("GET /buckets/{id}", async (req, p) => json(200, { data: bucketJson(await scopeBucket(p, req.params[0])) })));

    server.route("put", `${P}/buckets/:id`, authed("PUT /buckets/{id}", async (req, p) => {
      requireWrite(p);
      const b = await scopeBucket(p, req.params[0]);
      const body = parseUpdateBucket(parseJsonBody(req.body));
      if (body.visibility !== undefined && body.visibility !== b.visibility) {
        throw new ConsoleHttpError(403, "a bucket's visibility cannot be changed", CODE.visibilityImmutable);
      }
      activeBucket(b);
      const renamed = body.name !== b.name;
      const policyChange = body.encryptionPolicyId !== undefined && body.encryptionPolicyId !== b.encryption_policy_id;
      if (body.encryptionPolicyId && policyChange && !(await policies.policy(body.encryptionPolicyId))) {
        throw badRequest(`encryptionPolicyId ${body.encryptionPolicyId} is not a bucket policy on chain`);
      }
      if (!renamed && !policyChange) return json(200, { id: b.bucket_id, name: b.name, visibility: b.visibility, updated_at: b.updated_at.toISOString() });
      const newClaim = renamed ? await clog.claim("bucket", b.space_id, body.name, b.bucket_id) : undefined;
      const now = new Date().toISOString();
      const data: BucketUpdateCommandData = {
        ...(renamed ? { name: body.name, name_claim: newClaim } : {}),
        ...(policyChange ? { encryption_policy_id: body.encryptionPolicyId } : {}),
        updated_at: now,
      };
      const r = await clog.dispatch(AGG.bucket, b.bucket_id, command(CMD.bucketUpdate, AGG.bucket, b.bucket_id, data), (e) => (e.type === EV.bucketUpdated && (e.data as { updated_at: string }).updated_at === now ? true : undefined));
      if (renamed && newClaim) {
        // The old name is free again (a name claim differing only by case is the same claim).
        const oldClaim = claimId("bucket", b.space_id, b.name);
        if (oldClaim !== newClaim) await clog.release(oldClaim, b.bucket_id);
      }
      await settle(r.seq);
      return json(200, { id: b.bucket_id, name: body.name, visibility: b.visibility, updated_at: now });
    }), { bodyLimit: CONSOLE_LIMITS.jsonBody });

    server.route("del", `${P}/buckets/:id`, authed("DELETE /buckets/{id}", async (req, p) => {
      requireWrite(p);
      if (qs(req).get("confirm") !== "true") throw badRequest("deleting a bucket needs ?confirm=true");
      const b = await scopeBucket(p, req.params[0]);
      const headers = { "x-deleted-id": b.bucket_id };
      if (b.state === "deleting") return { status: 204, headers };
      if (b.state === "finalizing" || b.state === "provisioning") throw new ConsoleHttpError(409, "the bucket is being set up; retry shortly", CODE.conflict);
      const contents = await q.bucketContents(b.bucket_id);
      if (contents > 0) throw badRequest(`the bucket is not empty (${contents} files); delete its files first`);
      const data = { requested_by: p.userId, requested_at: new Date().toISOString() };
      const r = await clog.dispatch(AGG.bucket, b.bucket_id, command(CMD.bucketDelete, AGG.bucket, b.bucket_id, data), (e) => (e.type === EV.bucketDeleted ? true : undefined), 15_000, true);
      await settle(r.seq);
      return { status: 204, headers };
    }));

    server.route("post", `${P}/buckets/:id/finalize`, authed("POST /buckets/{id}/finalize", async (req, p) => {
      requireWrite(p);
      const b = await scopeBucket(p, req.params[0]);
      const signature = parseSignatureBody(parseJsonBody(req.body));
      if (b.visibility !== "private") throw badRequest("only private buckets are finalized");
      if (b.state === "active") return json(200, { bucket_id: b.bucket_id, encryption_policy_id: b.encryption_policy_id, state: "active" });
      if (b.state !== "pending_policy") throw new ConsoleHttpError(409, `the bucket is ${b.state}`, CODE.conflict);
      const reserved = await reservationOf(b.bucket_id);
      if (!verifySenderSignature(reserved.tx_bytes, signature, reserved.sender)) {
        throw badRequest(`signature is not a signature of the reserved bytes by the service key ${reserved.sender}`);
      }
      if (txTimestamp(reserved.tx_bytes) + TX_CLOCK_SKEW_MS < Date.now()) {
        throw badRequest("the reservation expired: delete the bucket and reserve it again");
      }
      const r = await clog.dispatch(
        AGG.bucket,
        b.bucket_id,
        command(CMD.bucketFinalize, AGG.bucket, b.bucket_id, { signature, requested_by: p.userId }),
        (e): { ok: true } | { ok: false; failure: BucketFinalizeFailed } | undefined =>
          e.type === EV.bucketActivated ? { ok: true } : e.type === EV.bucketFinalizeFailed ? { ok: false, failure: e.data as BucketFinalizeFailed } : undefined,
        30_000,
      );
      if (!r.value.ok) {
        const f = r.value.failure;
        throw new ConsoleHttpError(f.code === CODE.invalidSignature ? 400 : 422, `finalize failed: ${f.error}`, f.code === CODE.invalidSignature ? CODE.badRequest : f.code);
      }
      await settle(r.seq);
      const after = (await q.bucket(b.bucket_id))!;
      return json(200, { bucket_id: b.bucket_id, encryption_policy_id: after.encryption_policy_id, state: "active" });
    }), { bodyLimit: CONSOLE_LIMITS.jsonBody });

    /** The reservation of a pending private bucket (its first event). */
    const reservationOf = async (bucketId: string): Promise<BucketReserveCommandData> => {
      const { events } = await clog.store.load(`${AGG.bucket}.${bucketId}`);
      const e = events.find((x) => x.event.type === EV.bucketReserved);
      if (!e) throw new ConsoleHttpError(409, "the bucket has no reservation", CODE.conflict);
      return e.event.data as BucketReserveCommandData;
    };

    /**
     * An upload the read model does not have yet, as its job's events (or its command still on the queue) tell it:
     * queued or active (a finished job reads as active until the read model shows it), and a file summary.
     */
    const uploadView = async (fileId: string): Promise<{ state: UploadState; progress: number | null; error: { code: string; message: string } | null; file: FileRow } | null> => {
      // Cheap reads first (this answers polls right after a 202): the job's last commit, the command still queued,
      // the actor's snapshot; the full history only when none of them carries the upload's description.
      const last = await clog.last(AGG.upload, fileId);
      let queued = last?.events.find((e) => e.type === EV.uploadQueued)?.data as UploadQueued | undefined;
      if (!queued && !last) queued = (await clog.pendingCommand<UploadQueued>(AGG.upload, fileId))?.data;
      if (!queued && last) {
        const snap = await log.snapshots.get(`${AGG.upload}.${fileId}`).catch(() => null);
        queued = snap?.value?.length ? (snap.json() as { context?: { upload?: UploadQueued } }).context?.upload : undefined;
      }
      if (!queued && last) {
        const { events: all } = await clog.store.load(`${AGG.upload}.${fileId}`);
        queued = all.find((e) => e.event.type === EV.uploadQueued)?.event.data as UploadQueued | undefined;
      }
      if (!queued) return null;
      const events = (last?.events ?? []).map((event) => ({ event }));
      let state: UploadState = "queued";
      let progress: number | null = 0;
      const error: { code: string; message: string } | null = null;
      const storageObjectId: string | null = null;
      let updated = queued.created_at;
      for (const { event } of events) {
        updated = event.occurred_at;
        if (event.type === EV.uploadQueued) continue;
        // anything after queued is the job at work (its outcome shows once the read model has it)
        state = "active";
      }
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
    const statusJson = (state: UploadState, progress: number | null, error: { code: string; message: string } | null) => ({
      state,
      ...(progress !== null ? { progress } : {}),
      ...(state === "failed" && error ? { error } : {}),
    });

    // ---------------------------------------------------------------- files

    const filePage = async (scope: "space" | "bucket", id: string, req: Request) => {
      const query = parseFileListQuery(qs(req));
      const page = await q.files(scope, id, query);
      return json(200, { data: page.rows.map(fileJson), pagination: { limit: query.limit, hasMore: page.next !== null, nextCursor: page.next } });
    };

    server.route("get", `${P}/spaces/:id/files`, authed("GET /spaces/{id}/files", async (req, p) => {
      const spaceId = pathUuid(req.params[0], "space");
      await scopeSpace(p, spaceId);
      return filePage("space", spaceId, req);
    }));

    server.route("get", `${P}/buckets/:id/files`, authed("GET /buckets/{id}/files", async (req, p) => {
      const b = await scopeBucket(p, req.params[0]);
      return filePage("bucket", b.bucket_id, req);
    }));

    server.route("post", `${P}/buckets/:id/files`, wrap("POST /buckets/{id}/files", async (req) => {
      // The hot path. Once the key is known (a cached hash lookup), the bytes start flowing into storage while the
      // admission checks run (./admission.ts); a refused upload's stored bytes are removed.
      const key = await auth.identify(req);
      const bucketId = pathUuid(req.params[0], "bucket");
      const declared = Number(req.headers["content-length"] ?? NaN);
      const tooLarge = Number.isFinite(declared) && declared > limits.maxUploadBytes + CONSOLE_LIMITS.multipartOverhead;
      const payloadTooLarge = () => new ConsoleHttpError(413, `the upload exceeds the limit of ${limits.maxUploadBytes} bytes`, CODE.payloadTooLarge, { limit: limits.maxUploadBytes });
      const admit = async () => {
        const [p, target] = await Promise.all([auth.check(key), q.uploadTarget(bucketId, key.user_id, key.service_address)]);
        requireWrite(p);
        if (!target || target.state === "deleted") throw notFound(`bucket ${bucketId} not found`);
        if (!target.role || (p.spaceId && p.spaceId !== target.space_id)) throw scopeError();
        const b: BucketRow = target;
        activeBucket(b);
        if (tooLarge) throw payloadTooLarge();
        const retry = uploadLimiter.take(p.keyId);
        if (retry) throw new ConsoleHttpError(429, "too many uploads; slow down", CODE.rateLimited, {}, { "retry-after": String(retry) });
        // "readwrite" > "read": max(scope) is the strongest grant the index holds for the key's service address
        await checkAccess(p, b, "readwrite", p.serviceAddress ? target.access : undefined);
        const quota = { used: target.used, cap: target.cap, inFlight: target.inflight };
        // With a declared length the quota is checked before the upload is accepted (the file is at most that long).
        if (Number.isFinite(declared) && quota.used + quota.inFlight + Math.max(0, declared - CONSOLE_LIMITS.multipartOverhead) > quota.cap) throw quotaError(quota.cap);
        return { p, b, quota };
      };
      const admission = new Admission(admit);
      const boundary = await admission.first(() => {
        if (tooLarge) throw payloadTooLarge();
        const b = boundaryOf(req.headers["content-type"]);
        if (!req.bodyStream) throw badRequest("the upload has no body");
        return b;
      });

      // Every console bucket's objects live in the storage bucket named after it (checked against the row below).
      const storageName = storageBucketName(bucketId);
      const fileId = randomUUID();
      let nameField: string | undefined;
      let metadataField: string | undefined;
      let filename: string | null = null;
      let mime = "application/octet-stream";
      let putting: Promise<StoredObject> | undefined;
      let stored: StoredObject | undefined;
      // The name is claimed while the bytes stream (once admitted) when it is known at the file part (a name field
      // before it, or the part's filename); a name field after the file part is claimed afterwards.
      let early: { name: string; claim: Promise<string> } | undefined;
      const discard = () => {
        putting
          ?.then(() => storage.remove(storageName, fileId), () => undefined)
          .catch((err) => logger.warn("could not remove refused upload bytes", { file_id: fileId, error: (err as Error).message }));
        if (early) early.claim.then((c) => clog.release(c, fileId), () => undefined).catch(() => undefined);
      };
      try {
        const parsing = admission.first(() =>
          parseMultipart(req.bodyStream!, boundary, { fileBytes: limits.maxUploadBytes, fieldBytes: 16 * 1024, fields: 16, headerBytes: 16 * 1024 }, {
            onField: (name, value) => {
              if (name === "name") nameField = validateFileName(value);
              else if (name === "metadata") {
                parseFileMetadata(value);
                metadataField = value;
              }
            },
            onFile: async (info, data) => {
              admission.throwIfRefused();
              filename = info.filename;
              mime = validateMimeType(info.contentType);
              const candidate = nameField ?? filename ?? undefined;
              if (candidate !== undefined && candidate.length > 0 && [...candidate].length <= CONSOLE_LIMITS.fileName) {
                const claim = admission.result.then(() => clog.claim("file", bucketId, candidate, fileId));
                claim.catch(() => undefined);
                early = { name: candidate, claim };
              }
              putting = storage.put(storageName, fileId, admission.gate(data), mime, (chunk) => slabs.release(chunk));
              stored = await putting;
              admission.throwIfRefused();
            },
          }, slabs),
        );
        // A refusal answers without waiting for the rest of the body (the parse then ends with the request).
        parsing.catch(() => undefined);
        await Promise.race([parsing, admission.refusedAfter(() => putting)]);
        const { p, b, quota } = await admission.result;
        if (b.storage_bucket_name !== storageName) throw new Error(`bucket ${bucketId} keeps its files in ${b.storage_bucket_name}`);
        if (!stored) throw badRequest("the multipart form needs a file field");
        const name = validateFileName(nameField ?? filename ?? "");
        const metadata = parseFileMetadata(metadataField);
        if (!Number.isFinite(declared) || quota.used + quota.inFlight + stored.size > quota.cap) {
          const now = (await q.quota(b.space_id))!;
          if (now.used + now.inFlight + stored.size > now.cap) throw quotaError(quota.cap);
        }
        let claim: string;
        if (early && early.name === name) claim = await early.claim;
        else {
          if (early) {
            const stale = early;
            early = undefined;
            await stale.claim.then((c) => clog.release(c, fileId), () => undefined);
          }
          claim = await clog.claim("file", b.bucket_id, name, fileId);
        }
        const data: UploadQueued = {
          file_id: fileId,
          bucket_id: b.bucket_id,
          space_id: b.space_id,
          name,
          size: stored.size,
          mime_type: mime,
          blob_id: stored.blob_id,
          md5: stored.md5,
          is_private: b.visibility === "private",
          metadata,
          storage_bucket_name: b.storage_bucket_name,
          storage_key: fileId,
          uploader_user_id: p.userId,
          uploader_key_id: p.keyId,
          owner_address: p.serviceAddress ?? sponsor.address,
          name_claim: claim,
          created_at: new Date().toISOString(),
        };
        await clog.publish(AGG.upload, fileId, command(CMD.uploadStart, AGG.upload, fileId, data));
        return json(202, {
          data: {
            id: fileId,
            bucket_id: b.bucket_id,
            name,
            blob_id: stored.blob_id,
            storage_object_id: null,
            size: stored.size,
            mime_type: mime,
            status: "uploading",
            is_private: data.is_private,
            metadata,
            created_at: data.created_at,
            updated_at: data.created_at,
            deleted_at: null,
            upload: { state: "queued", progress: 0 },
          },
        });
      } catch (err) {
        discard();
        throw err;
      }
    }), { bodyMode: "stream", bodyLimit: Number.MAX_SAFE_INTEGER, bodyChunk: slabs.copy });

    server.route("get", `${P}/buckets/:id/files/:fileId`, authed("GET /buckets/{id}/files/{fileId}", async (req, p) => {
      const { file } = await scopeFile(p, req.params[0], req.params[1]);
      return json(200, { data: fileJson(file) });
    }));

    server.route("del", `${P}/buckets/:id/files/:fileId`, authed("DELETE /buckets/{id}/files/{fileId}", async (req, p) => {
      requireWrite(p);
      const { bucket, file } = await scopeFile(p, req.params[0], req.params[1]);
      if (file.status === "deleting" || file.status === "deleted") return { status: 204 };
      if (file.status === "uploading") throw new ConsoleHttpError(409, "the file is still uploading; delete it once its upload finished", CODE.conflict);
      const data: FileDeleteCommandData = {
        requested_by: p.userId,
        requested_at: new Date().toISOString(),
        bucket_id: bucket.bucket_id,
        space_id: bucket.space_id,
        storage_bucket_name: file.storage_bucket_name,
        storage_key: file.storage_key,
        name_claim: file.name_claim,
        size: Number(file.size),
        ...(file.status === "failed" ? { upload_failed: true } : {}),
      };
      const r = await clog.dispatch(AGG.file, file.file_id, command(CMD.fileDelete, AGG.file, file.file_id, data), (e) => (e.type === EV.fileDeleteRequested || e.type === EV.fileDeleted ? true : undefined), 15_000, true);
      await settle(r.seq);
      return { status: 204 };
    }));

    server.route("get", `${P}/buckets/:id/files/:fileId/status`, authed("GET /buckets/{id}/files/{fileId}/status", async (req, p) => {
      const bucket = await scopeBucket(p, req.params[0]);
      const fileId = pathUuid(req.params[1], "file");
      const missing = () => notFound(`file ${fileId} not found in bucket ${bucket.bucket_id}`);
      const row = await q.file(fileId);
      if (row && row.bucket_id !== bucket.bucket_id) throw missing();
      // A finished job leaves the queue: after the retention window the status route answers 404 and the file
      // metadata route gives the final status (spec: States, Upload).
      const finished = row && (row.upload_state === "completed" || row.upload_state === "failed");
      if (finished && (!row.upload_finished_at || Date.now() - row.upload_finished_at.getTime() > limits.retentionMs)) {
        throw notFound("the upload job has left the queue; GET the file for its final status");
      }
      if (row) return json(200, { data: statusJson(row.upload_state as UploadState, row.upload_progress, row.upload_error) });
      // Accepted moments ago, before the read model has the file: the job's events (or its queued command) say where
      // it is — capped at active, so a client that sees completed also finds the file in lists and metadata.
      const view = await uploadView(fileId);
      if (!view || view.file.bucket_id !== bucket.bucket_id) throw missing();
      return json(200, { data: statusJson(view.state, view.progress, view.error) });
    }));

    server.route("get", `${P}/buckets/:id/files/:fileId/download`, authed("GET /buckets/{id}/files/{fileId}/download", async (req, p) => {
      const { bucket, file } = await scopeFile(p, req.params[0], req.params[1]);
      if (file.status === "deleting" || file.status === "deleted") throw new ConsoleHttpError(423, `the file is ${file.status}`, CODE.fileLocked);
      if (file.status !== "completed") throw new ConsoleHttpError(409, `the file's upload is ${file.upload_state}`, CODE.uploadNotCompleted);
      await checkAccess(p, bucket, "read");
      let opened;
      try {
        opened = await storage.open(file.storage_bucket_name, file.storage_key);
      } catch (err) {
        logger.error("file bytes cannot be streamed", { file_id: file.file_id, error: (err as Error).message });
        opened = null;
      }
      if (!opened) throw new ConsoleHttpError(500, "the file's bytes cannot be streamed from storage", CODE.blobUnavailable);
      return {
        status: 200,
        headers: { "content-type": file.mime_type, "content-disposition": contentDisposition(file.name), "x-blob-id": file.blob_id, "cache-control": "private, no-store" },
        stream: opened.stream,
        length: opened.size,
      };
    }));

    // ---------------------------------------------------------------- sponsorship

    const groupBucket = async (p: Principal, groupId: string) => {
      const g = await policies.group(groupId);
      if (!g) throw notFound(`access group ${groupId} not found`);
      const b = await scopeBucket(p, g.bucket_id);
      return b.bucket_id;
    };

    server.route("post", "/encryption/sponsor", authed("POST /encryption/sponsor", async (req, p) => {
      requireWrite(p);
      if (!p.serviceAddress) throw badRequest("this API key has no service key to sign with");
      const body = parseSponsor(parseJsonBody(req.body));
      let built: { kind: SponsorReserved["kind"]; bucketIds: string[]; tx: { bytes: string; digest: string } };
      const base = { network: chain.network, sender: p.serviceAddress, sponsorAddress: sponsor.address };
      switch (body.kind) {
        case "bucket_group_create": {
          const b = await scopeBucket(p, body.bucketId);
          if (b.visibility !== "private") throw badRequest("access groups belong to private buckets");
          activeBucket(b);
          if (!b.encryption_policy_id) throw new ConsoleHttpError(409, "the bucket has no encryption policy", CODE.bucketNotFinalized);
          built = { kind: body.kind, bucketIds: [b.bucket_id], tx: buildSponsoredTx({ ...base, kind: "bucket_group_create", args: { policy_id: b.encryption_policy_id, bucket_id: b.bucket_id } }) };
          break;
        }
        case "grant_bucket_access": {
          const ids = [...new Set(await Promise.all(body.groupIds.map((g) => groupBucket(p, g))))];
          built = { kind: body.kind, bucketIds: ids, tx: buildSponsoredTx({ ...base, kind: "grant_bucket_access", args: { group_ids: body.groupIds, recipient: body.recipientAddress, scope: body.scope } }) };
          break;
        }
        case "share_admin":
        case "unshare": {
          const id = await groupBucket(p, body.groupId);
          built = { kind: body.kind, bucketIds: [id], tx: buildSponsoredTx({ ...base, kind: body.kind, args: { group_id: body.groupId, member: body.member } }) };
          break;
        }
        case "unshare_bucket_access": {
          const id = await groupBucket(p, body.groupId);
          built = { kind: body.kind, bucketIds: [id], tx: buildSponsoredTx({ ...base, kind: "unshare_bucket_access", args: { group_id: body.groupId, service_signer: body.serviceSignerAddress } }) };
          break;
        }
      }
      const now = Date.now();
      const data: SponsorReserved = {
        digest: built.tx.digest,
        kind: built.kind,
        tx_bytes: built.tx.bytes,
        sender: p.serviceAddress,
        key_id: p.keyId,
        user_id: p.userId,
        bucket_ids: built.bucketIds,
        reserved_at: new Date(now).toISOString(),
        expires_at: new Date(now + Math.min(limits.sponsorTtlMs, TX_CLOCK_SKEW_MS)).toISOString(),
      };
      await clog.dispatch(AGG.sponsor, built.tx.digest, command(CMD.sponsorReserve, AGG.sponsor, built.tx.digest, data), (e) => (e.type === EV.sponsorReserved ? true : undefined));
      return json(200, { bytes: built.tx.bytes, digest: built.tx.digest });
    }), { bodyLimit: CONSOLE_LIMITS.jsonBody });

    server.route("post", "/encryption/sponsor/:digest/execute", authed("POST /encryption/sponsor/{digest}/execute", async (req, p) => {
      requireWrite(p);
      const digest = decodePathParam(req.params[0]) ?? "";
      const unknown = () => notFound(`no sponsored transaction ${digest} (unknown or expired)`);
      if (!/^[1-9A-HJ-NP-Za-km-z]{32,64}$/.test(digest)) throw unknown();
      const signature = parseSignatureBody(parseJsonBody(req.body));
      const { events } = await clog.store.load(`${AGG.sponsor}.${digest}`);
      const reservation = events.find((e) => e.event.type === EV.sponsorReserved)?.event.data as SponsorReserved | undefined;
      if (!reservation || reservation.user_id !== p.userId) throw unknown();
      const last = events[events.length - 1].event;
      if (last.type === EV.sponsorExecuted) return json(200, executedJson(last.data as SponsorExecuted));
      if (last.type === EV.sponsorExpired) throw unknown();
      if (!verifySenderSignature(reservation.tx_bytes, signature, reservation.sender)) {
        throw badRequest(`signature is not a signature of the sponsored bytes by the service key ${reservation.sender}`);
      }
      const r = await clog.dispatch(
        AGG.sponsor,
        digest,
        command(CMD.sponsorExecute, AGG.sponsor, digest, { signature, requested_at: new Date().toISOString() }),
        (e: EventEnvelope) =>
          e.type === EV.sponsorExecuted || e.type === EV.sponsorFailed || e.type === EV.sponsorExpired ? e : undefined,
        30_000,
      );
      const e = r.value;
      if (e.type === EV.sponsorExpired) throw unknown();
      if (e.type === EV.sponsorFailed) {
        const f = e.data as SponsorFailed & { kind?: string };
        throw new ConsoleHttpError(f.kind === "forbidden" ? 403 : 400, `the transaction was refused: ${f.error}`, f.code === CODE.invalidSignature ? CODE.badRequest : f.code);
      }
      await settle(r.seq);
      return json(200, executedJson(e.data as SponsorExecuted));
    }), { bodyLimit: CONSOLE_LIMITS.jsonBody });

    const executedJson = (x: SponsorExecuted) => ({
      digest: x.chain_digest,
      objectChanges: x.objects.map((o: ChainObject) => ({ objectId: o.object_id, objectType: o.type, version: o.version })),
    });

    // ---------------------------------------------------------------- infrastructure

    server.route("get", "/health", wrap("health", async () => {
      const nats = !log.nc.isClosed();
      const pg = await db.query("SELECT 1").then(() => true, () => false);
      return json(nats && pg ? 200 : 503, { status: nats && pg ? "ok" : "degraded", service: "console", version: CONSOLE_VERSION, checks: { nats, postgres: pg } });
    }));
    server.route("get", "/metrics", () => metrics.reply());
    server.fallback((req) => json(404, { error: `no route for ${req.method} ${req.path}`, code: CODE.notFound }));

    const host = opts.host ?? "127.0.0.1";
    port = await server.listen(host, opts.port ?? 8100);
    url = `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`;
    stops.push(() => server.close());
    logger.info("console listening", { url });
  }
  if (ownsStorage) stops.unshift(() => storage.close());

  let stopped = false;
  return {
    port,
    url,
    sponsorAddress: sponsor.address,
    runners,
    hosts,
    actorPorts: ports,
    caughtUp,
    directory: { clog, settle: (seq) => settle(seq, 30_000), tiers: limits.tiers },
    async stop() {
      if (stopped) return;
      stopped = true;
      for (const s of stops.reverse()) await Promise.resolve(s()).catch(() => undefined);
    },
  };
}
