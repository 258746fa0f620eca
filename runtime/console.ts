// Composes the developer console's process (spec/console.md) on the same backbone as the relayer, each role able
// to run alone or together:
//
//   gateway      the HTTP API (gateway/console/service.ts and the route modules beside it)
//   actors       console.key, console.bucket, console.upload, console.file, console.sponsor (actors/console/)
//   projections  console (spaces, buckets, files, keys) and console_access (the access index) (projections/console/)
//   storage      the blob storage service's data API over HTTP (adapters/file-storage/blobstore-http.ts)
//   chain        the chain port: bucket policies and access groups, sponsored by the console (actors/console/chain.ts)
import type { EventLog } from "../eventlog/connection.ts";
import type { Db } from "../db/pool.ts";
import { createLogger, type Logger } from "../config/logger.ts";
import { namingAddressVariable } from "../config/listen-error.ts";
import { LIVE, ProjectionGroupRunner, migrateCheckpoints, type ProjectionHandle } from "../projections/runtime.ts";
import { waitForProjection } from "../projections/checkpoint-wait.ts";
import type { SponsoredChainPort } from "../adapters/ports.ts";
import { keypairFromSecret } from "../adapters/chain/sui/keys.ts";
import { CONSOLE_EVENTS_FILTER } from "../schemas/console/events.ts";
import { CONSOLE_LIMITS, PLAN_TIERS, type PlanTier } from "../schemas/console/http.ts";
import { ConsoleLog } from "../actors/console/log.ts";
import { BlobStoreStorage, type StoragePort } from "../adapters/file-storage/blobstore-http.ts";
import { Queries } from "../projections/console/queries.ts";
import { CONSOLE_PROJECTION, consoleProjection } from "../projections/console/read-models.ts";
import { accessIndexProjection } from "../projections/console/access-index.ts";
import { PolicyReader } from "../actors/console/chain.ts";
import type { ConsoleActorPorts } from "../actors/console/ports.ts";
import { ConsoleActorHost } from "../actors/console/host.ts";
import type { DirectoryContext } from "../actors/console/directory.ts";
import { keyActor } from "../actors/console/key.actor.ts";
import { bucketActor } from "../actors/console/bucket.actor.ts";
import { uploadActor } from "../actors/console/upload.actor.ts";
import { fileActor } from "../actors/console/file.actor.ts";
import { sponsorActor } from "../actors/console/sponsor.actor.ts";
import { createConsoleServer } from "../gateway/console/service.ts";

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
  readonly runners: { readonly console?: ProjectionHandle; readonly access?: ProjectionHandle };
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
  const runners: { console?: ProjectionHandle; access?: ProjectionHandle } = {};
  const hosts: ConsoleActorHost[] = [];

  await migrateCheckpoints(db);
  // The gateway reads the read models even when another process runs the projections: make sure they exist.
  await consoleProjection.migrate(db);
  await accessIndexProjection.migrate(db);
  if (roles.projections) {
    // Both read models follow every console commit (three per upload): one consumer feeds them, so each commit
    // crosses the connection and is decoded once; each still applies and checkpoints in its own transactions.
    const group = new ProjectionGroupRunner(log, db, [consoleProjection, accessIndexProjection], logger, undefined, LIVE);
    await group.start();
    [runners.console, runners.access] = group.handles();
    stops.push(() => group.stop());
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
    if (!(await waitForProjection(db, CONSOLE_PROJECTION, seq, timeoutMs, runners.console))) logger.warn("console read model is behind; answering anyway", { seq });
  };
  const caughtUp = async (timeoutMs = 30_000) => {
    const seq = await clog.lastSeq(CONSOLE_EVENTS_FILTER);
    if (!seq) return true;
    return (await waitForProjection(db, CONSOLE_PROJECTION, seq, timeoutMs, runners.console)) && (!runners.access || (await runners.access.waitFor(seq, timeoutMs)));
  };

  let port = 0;
  let url = "";
  if (roles.gateway) {
    const server = createConsoleServer({ log, db, clog, q, policies, chain, sponsor, storage, logger, limits, settle, runners, corsOrigins: opts.corsOrigins ?? [] });
    const host = opts.host ?? "127.0.0.1";
    port = await server.listen(host, opts.port ?? 8100).catch(namingAddressVariable("CONSOLE_PORT"));
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
