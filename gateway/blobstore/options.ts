// The blob storage service's options and handle (runtime/blobstore.ts composes the service), and the options from the
// operator environment.
import type { EventLog } from "../../eventlog/connection.ts";
import type { Db } from "../../db/pool.ts";
import type { Logger } from "../../config/logger.ts";
import { intVar, loadConfig } from "../../config/env.ts";
import type { ProjectionRunner } from "../../projections/runtime.ts";
import type { BlobBackend } from "../../adapters/blob-bytes/backend.ts";
import { defaultHashThreads } from "../../adapters/blob-bytes/hasher.ts";
import type { SweepResult } from "../../actors/blobstore/gc.ts";
import type { Kind } from "../../schemas/blobstore/events.ts";
import type { NetworkProfile } from "../../config/network-profile.ts";

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
  /** MEMRELAY_NETWORK_PROFILE: the Walrus publisher and aggregator routes answer with the network's latency. Default `local`. */
  readonly networkProfile?: NetworkProfile;
  /** Shards of the committee whose layout quilts take (PUT /v1/quilts). Default WALRUS_N_SHARDS (1000, mainnet's). */
  readonly quiltShards?: number;
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
