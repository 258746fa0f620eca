// Operator configuration from environment variables. The names are a public contract (spec/relayer.md,
// Operator configuration): read them here only, with their documented defaults.
import { availableParallelism } from "node:os";
import { parseOperatorKey, type OAuthSettings } from "../schemas/relayer/oauth.ts";
import type { RetryPolicy } from "../schemas/relayer/sponsor.ts";
import { networkProfileFromEnv, type NetworkProfile } from "./network-profile.ts";

export interface RelayerConfig {
  readonly port: number;
  readonly consolePort: number;
  readonly blobstorePort: number;
  /** BLOBSTORE_BACKEND: where the blob store keeps bytes, `jetstream` or `fs`; unset: the blob store's default. */
  readonly blobstoreBackend: "jetstream" | "fs" | undefined;
  /** BLOBSTORE_CACHE_BYTES: bytes of the blob store's in-memory cache of small blobs (default 64 MiB; 0 disables). */
  readonly blobstoreCacheBytes: number;
  readonly host: string;
  readonly natsUrl: string;
  /**
   * NATS_REPLICAS: copies of every stream and KV bucket (3 on a three-node cluster). Unset: new ones get one copy and
   * existing ones keep theirs, so a process started without it never scales a cluster's streams down.
   */
  readonly natsReplicas: number | undefined;
  readonly databaseUrl: string | undefined;
  /** DATABASE_READ_URLS and how reads use those streaming replicas (databaseReadFromEnv; db/read-pool.ts). */
  readonly databaseRead: DatabaseReadSettings;
  readonly logFormat: string;
  readonly authMaxClockDriftSecs: number;
  /** GATEWAY_VERIFY_THREADS: workers verifying request signatures (default every core but one; 0: on the event loop). */
  readonly gatewayVerifyThreads: number;
  readonly corsAllowedOrigins: readonly string[];
  readonly packageId: string;
  readonly registryId: string;
  readonly network: string;
  readonly chainRpcUrl: string;
  readonly chainGrpcUrl: string;
  readonly blobstorePublisherUrl: string;
  readonly blobstoreAggregatorUrl: string;
  /** BLOBSTORE_AGGREGATOR_URLS: further aggregators for cold reads (comma-separated). */
  readonly blobstoreAggregatorUrls: readonly string[];
  /** BLOBSTORE_AGGREGATOR_RACE_AFTER_MS: delay before racing the next aggregator (150; 0 races all). */
  readonly blobstoreAggregatorRaceAfterMs: number;
  /** BLOBSTORE_STORE_TIMEOUT_MS (600000): how long a store may wait for the publisher's answer, its queue included. */
  readonly blobstoreStoreTimeoutMs: number;
  readonly blobCacheTtlSecs: number;
  readonly blobCacheMaxBytes: number;
  /** BLOBSTORE_SKIP_CONSISTENCY_CHECK (false): trust the aggregators' bytes instead of checking them against the blob id. */
  readonly blobstoreSkipConsistencyCheck: boolean;
  /** WALRUS_N_SHARDS (1000): shards of the Walrus committee, for the consistency check on mainnet and testnet. */
  readonly walrusShards: number;
  /** WALRUS_LOCAL_NODES (4): storage nodes of the local stack's Walrus committee. */
  readonly walrusLocalNodes: number;
  /** WALRUS_LOCAL_SHARDS (10, at least one per node): its shards; the largest blob is (n − 2f)(n − f) × 65,534 bytes (1.8 MB at 10, 7.3 MB at 20). */
  readonly walrusLocalShards: number;
  readonly serverChainPrivateKeys: readonly string[];
  /** MEMRELAY_NETWORK_PROFILE (local): the latencies and owned-object rule the local chain and Walrus take on (config/network-profile.ts). */
  readonly networkProfile: NetworkProfile;
  /**
   * MEMRELAY_STORE_MODE (quilt): how the remember job stores a ciphertext, as a patch of a quilt gathered across jobs
   * in flight (bounded by QUILT_MAX_PATCHES, QUILT_MAX_BYTES, paced by QUILT_MAX_IN_FLIGHT and QUILT_MAX_WAIT_MS) or as its own Walrus blob.
   */
  readonly storeMode: StoreMode;
  readonly encryptionThreshold: number | undefined;
  readonly embedder: "hashing" | "use-lite" | "openai";
  readonly embeddingDims: number | undefined;
  readonly embeddingApiBase: string | undefined;
  readonly embeddingApiKey: string | undefined;
  readonly embeddingModel: string | undefined;
  /** Long texts and fair scheduling of embedding work (EMBEDDING_*; see embeddingFromEnv and docs/long-memories.md). */
  readonly embedding: EmbeddingSettings;
  /** READY_MAX_WAIT_SECS (30): `/ready` answers 503 once the oldest remember job or embedding has waited longer. */
  readonly readyMaxWaitSecs: number;
  /**
   * Language-model features (analyze, ask): an OpenAI-compatible chat endpoint when a key or a base URL is given
   * (MEMRELAY_LLM_API_KEY / MEMRELAY_LLM_API_BASE, else EMBEDDING_API_KEY / EMBEDDING_API_BASE, the spec's shared
   * provider), model MEMRELAY_LLM_MODEL; otherwise the local extractor and answerer.
   */
  readonly llm: { readonly apiBase?: string; readonly apiKey?: string; readonly model: string; readonly timeoutMs: number } | undefined;
  readonly rateLimitDisabled: boolean;
  readonly alertWebhookUrl: string | undefined;
  /** ALERT_WEBHOOK_TIMEOUT_MS / _MAX_ATTEMPTS / _RETRY_BASE_MS: per-POST timeout, deliveries per alert, first backoff. */
  readonly alertWebhookTimeoutMs: number;
  readonly alertWebhookMaxAttempts: number;
  readonly alertWebhookRetryBaseMs: number;
  /** BALANCE_MONITOR_INTERVAL_SECS (900; 0 disables the monitor). */
  readonly balanceMonitorIntervalSecs: number;
  /** Low-balance thresholds in the token's smallest unit (spec: Operator configuration). */
  readonly walletBalanceLowThresholdWal: bigint;
  readonly walletBalanceLowThresholdSui: bigint;
  readonly sponsorBalanceLowThresholdSui: bigint;
  /** WALLET_BALANCE_LOW_ALERT_DEDUP_SECS (43200): one low-balance alert per (network, wallet type, token, address) per window. */
  readonly walletBalanceLowAlertDedupSecs: number;
  /** SPONSOR_WALLET_ADDRESS: the wallet that pays sponsored gas, watched by the balance monitor when set. */
  readonly sponsorWalletAddress: string | undefined;
  /** SPONSOR_PRIVATE_KEY: the gas station's key behind /sponsor (hex or suiprivkey); the local stack makes one. */
  readonly sponsorPrivateKey: string | undefined;
  /** SPONSOR_RATE_LIMIT_PER_MINUTE / _PER_HOUR (10 / 30, MemWal's names and defaults): requests per client address to /sponsor and /sponsor/execute together; 0 disables a window. */
  readonly sponsorRateLimit: { readonly perMinute: number; readonly perHour: number };
  /** SPONSOR_TRANSIENT_MAX_ATTEMPTS / _BASE_DELAY_MS / _MAX_DELAY_MS (2 / 5000 / 30000): retries of transient failures. */
  readonly sponsorTransientRetry: RetryPolicy;
  /** The sponsorship provider and durable-registration sponsorship (SPONSOR_API_KEY and friends; see sponsorFromEnv). */
  readonly sponsor: SponsorConfig;
  readonly trustedProxyHops: number;
  readonly dataDir: string;
  /** MEMRELAY_LEXICAL_KEY: server secret of the keyed lexical index (hex or base64, ≥ 32 bytes); unset: the data dir's lexical.key. */
  readonly lexicalKey: string | undefined;
  /** MEMRELAY_RECALL_RANKING: `hybrid` (default: keyed BM25 with context, fused with the vector) or `cosine` (spec order). */
  readonly recallRanking: "hybrid" | "cosine";
  /** MEMRELAY_HYBRID_DENSE_WEIGHT: weight of the cosine rank in the hybrid rank fusion, 0..1; unset: by embedder (projections/relayer/hybrid-rank.ts). */
  readonly hybridDenseWeight: number | undefined;
  /** MEMRELAY_HYBRID_KEEP_DENSE_TOP: query-term coverage below which the cosine top hit keeps rank 1 (0 turns it off). */
  readonly hybridKeepDenseTop: number | undefined;
  /** MEMRELAY_HYBRID_CONTEXT: weights of neighbours 1, 2, … places away in submission order ("0.5,0.3,0.15"; "none" disables); unset: default. */
  readonly hybridContext: readonly number[] | undefined;
  /** The developer console's limits (CONSOLE_*; see consoleLimitsFromEnv); unset fields: the console's defaults. */
  readonly consoleLimits: ConsoleEnvLimits;
  /** The MCP sidecar (spec: SIDECAR_URL, SIDECAR_AUTH_TOKEN, SIDECAR_WATCHDOG_*): where the agent transports go. */
  readonly sidecar: SidecarLinkConfig;
  readonly mcpSessions: McpSessionConfig;
  /** OAuth 2.1 for the agent transports; undefined: the OAuth routes are absent. */
  readonly oauth: OAuthSettings | undefined;
}

/** A malformed operator variable: the message names it and says what it accepts. */
export type StoreMode = { readonly mode: "blob" } | { readonly mode: "quilt"; readonly limits: QuiltLimits };

/** MEMRELAY_STORE_MODE: `quilt` (default) or `blob`; anything else stops the start rather than quietly taking one. */
export function storeModeFromEnv(env: Env): StoreMode {
  const raw = env.MEMRELAY_STORE_MODE?.trim().toLowerCase() || "quilt";
  if (raw === "blob") return { mode: "blob" };
  if (raw !== "quilt") throw new ConfigError(`MEMRELAY_STORE_MODE must be blob or quilt; got ${JSON.stringify(env.MEMRELAY_STORE_MODE)}`);
  return { mode: "quilt", limits: quiltLimitsFromEnv(env) };
}

/** How the quilt writer (adapters/blobs/quilt-writer.ts) bounds a quilt it gathers. */
export interface QuiltLimits {
  readonly maxPatches: number;
  readonly maxBytes: number;
  /** The wait of a quilt gathered while none is in flight, and the least time between two quilts (adapters/blobs/quilt-pacing.ts). */
  readonly maxWaitMs: number;
  /** Quilts sealed or being stored at once, at most. */
  readonly maxInFlight: number;
}

/** 4 quilts in flight: half of the 8 sub-wallets a Walrus publisher has by default (`--n-clients`), each quilt's register and certify holding one. */
export const DEFAULT_QUILT_LIMITS: QuiltLimits = { maxPatches: 256, maxBytes: 8 * 1024 * 1024, maxWaitMs: 50, maxInFlight: 4 };

/**
 * QUILT_MAX_PATCHES (256; a quilt of a 1000-shard committee holds at most 666), QUILT_MAX_BYTES (8 MiB of blob
 * bytes), QUILT_MAX_WAIT_MS (50), QUILT_MAX_IN_FLIGHT (4). An invalid value stops the process rather than quietly
 * taking the default.
 */
export function quiltLimitsFromEnv(env: Env): QuiltLimits {
  return {
    maxPatches: strictIntVar(env, "QUILT_MAX_PATCHES", 1, 666, "the most patches in one quilt") ?? DEFAULT_QUILT_LIMITS.maxPatches,
    maxBytes: strictIntVar(env, "QUILT_MAX_BYTES", 1, 1024 * 1024 * 1024, "the most blob bytes in one quilt") ?? DEFAULT_QUILT_LIMITS.maxBytes,
    maxWaitMs: strictIntVar(env, "QUILT_MAX_WAIT_MS", 1, 60_000, "the milliseconds a quilt waits for more blobs") ?? DEFAULT_QUILT_LIMITS.maxWaitMs,
    maxInFlight: strictIntVar(env, "QUILT_MAX_IN_FLIGHT", 1, 64, "the most quilts being stored at once") ?? DEFAULT_QUILT_LIMITS.maxInFlight,
  };
}

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** The developer console's operator limits (the fields of startConsole's `limits`); undefined: its default. */
export interface ConsoleEnvLimits {
  /** CONSOLE_MAX_UPLOAD_BYTES: largest file per upload (default 104857600, the spec's 100 MiB). */
  readonly maxUploadBytes?: number;
  /** CONSOLE_UPLOADS_PER_MINUTE: uploads per API key per minute before 429 (default 600; 0 disables). */
  readonly uploadsPerMinute?: number;
  /** CONSOLE_UPLOAD_STATUS_RETENTION_SECS: how long the status route answers for a finished upload (default 60). */
  readonly uploadStatusRetentionMs?: number;
  /** CONSOLE_SPONSOR_TTL_SECS: lifetime of a sponsored transaction before it must be executed (default 300, at most 600). */
  readonly sponsorTtlMs?: number;
}

type Env = Record<string, string | undefined>;

/** Streaming replicas that recall, ask, stats and job lookups may read from (db/read-pool.ts). */
export interface DatabaseReadSettings {
  /** DATABASE_READ_URLS: PostgreSQL hot standbys of DATABASE_URL (comma-separated); empty: every read on the primary. */
  readonly urls: readonly string[];
  /** DATABASE_READ_WAIT_MS (100): longest wait for a replica to replay what a read must see, then the primary. */
  readonly waitMs: number;
  /** DATABASE_READ_MAX_LAG_MS (1000): a replica trailing the primary by more is skipped. */
  readonly maxLagMs: number;
}

/** DATABASE_READ_URLS, DATABASE_READ_WAIT_MS, DATABASE_READ_MAX_LAG_MS; throws ConfigError on a malformed value. */
export function databaseReadFromEnv(env: Env): DatabaseReadSettings {
  const urls = list(env.DATABASE_READ_URLS);
  for (const raw of urls) {
    let ok = false;
    try {
      const u = new URL(raw);
      ok = (u.protocol === "postgres:" || u.protocol === "postgresql:") && u.hostname !== "";
    } catch {
      ok = false;
    }
    // the value may hold a password: the message names the entry's position, not its text
    if (!ok) throw new ConfigError(`DATABASE_READ_URLS must be comma-separated postgres:// URLs; entry ${urls.indexOf(raw) + 1} is not one`);
  }
  return {
    urls,
    waitMs: strictIntVar(env, "DATABASE_READ_WAIT_MS", 0, 60_000, "the milliseconds a read waits for a replica to catch up") ?? 100,
    maxLagMs: strictIntVar(env, "DATABASE_READ_MAX_LAG_MS", 0, 3_600_000, "the replica lag in milliseconds beyond which reads skip it") ?? 1_000,
  };
}

/** The data directory when MEMRELAY_DATA_DIR is not set. */
export const defaultDataDir = (env: Env) => `${env.HOME ?? "."}/.memrelay`;
/** MEMRELAY_DATA_DIR, else ~/.memrelay. */
export const dataDirOf = (env: Env) => env.MEMRELAY_DATA_DIR ?? defaultDataDir(env);

function llmFromEnv(env: Env): RelayerConfig["llm"] {
  const apiKey = env.MEMRELAY_LLM_API_KEY?.trim() || env.EMBEDDING_API_KEY?.trim() || undefined;
  const apiBase = env.MEMRELAY_LLM_API_BASE?.trim() || (apiKey ? env.EMBEDDING_API_BASE?.trim() : undefined) || undefined;
  if (!apiKey && !apiBase) return undefined;
  return { apiBase, apiKey, model: env.MEMRELAY_LLM_MODEL?.trim() || "gpt-4o-mini", timeoutMs: intVar(env, "MEMRELAY_LLM_TIMEOUT_MS", 30_000, 100, 600_000) };
}

export function intVar(env: Env, name: string, def: number, min = -Infinity, max = Infinity): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return def;
  const n = Number(raw);
  return Number.isInteger(n) && n >= min && n <= max ? n : def;
}

/** A non-negative integer amount (token smallest unit); anything else falls back to the default. */
export function amountVar(env: Env, name: string, def: bigint): bigint {
  const raw = env[name]?.trim();
  return raw && /^[0-9]{1,30}$/.test(raw) ? BigInt(raw) : def;
}

/** A number in [0, 1], or undefined when unset or out of range. */
export function unitVar(env: Env, name: string): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 && n <= 1 ? n : undefined;
}

/** Up to 8 comma-separated weights in [0, 1]; "none" or "0" is an empty list; anything malformed is undefined. */
function contextVar(raw: string | undefined): readonly number[] | undefined {
  const s = raw?.trim().toLowerCase();
  if (!s) return undefined;
  if (s === "none" || s === "0") return [];
  const w = s.split(",").map((x) => Number(x.trim()));
  return w.length <= 8 && w.every((x) => Number.isFinite(x) && x >= 0 && x <= 1) ? w : undefined;
}

/**
 * An integer variable that must be well-formed when set: undefined when unset or empty, else an integer in
 * [min, max]; anything else is a ConfigError naming the variable (for project variables whose bad value should stop
 * a start, where the spec's relayer variables fall back to their defaults).
 */
export function strictIntVar(env: Env, name: string, min: number, max: number, what: string): number | undefined {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === "") return undefined;
  const n = /^[+-]?\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be ${what}: an integer from ${min.toLocaleString("en-US")} to ${max.toLocaleString("en-US")}; got ${JSON.stringify(env[name])}`);
  }
  return n;
}

/** The largest sponsorship lifetime: the ledger refuses transactions built more than 10 minutes ago. */
export const CONSOLE_SPONSOR_TTL_MAX_SECS = 600;

/** CONSOLE_MAX_UPLOAD_BYTES, CONSOLE_UPLOADS_PER_MINUTE, CONSOLE_UPLOAD_STATUS_RETENTION_SECS, CONSOLE_SPONSOR_TTL_SECS; throws ConfigError on a malformed value. */
export function consoleLimitsFromEnv(env: Env): ConsoleEnvLimits {
  const secs = (v: number | undefined) => (v === undefined ? undefined : v * 1000);
  const limits: ConsoleEnvLimits = {
    maxUploadBytes: strictIntVar(env, "CONSOLE_MAX_UPLOAD_BYTES", 1, 2 ** 40, "the largest upload in bytes"),
    uploadsPerMinute: strictIntVar(env, "CONSOLE_UPLOADS_PER_MINUTE", 0, 1_000_000, "the uploads per API key per minute (0 disables the limit)"),
    uploadStatusRetentionMs: secs(strictIntVar(env, "CONSOLE_UPLOAD_STATUS_RETENTION_SECS", 0, 7 * 86_400, "the seconds a finished upload's status stays readable")),
    sponsorTtlMs: secs(strictIntVar(env, "CONSOLE_SPONSOR_TTL_SECS", 1, CONSOLE_SPONSOR_TTL_MAX_SECS, "the seconds a sponsored transaction may wait for execution")),
  };
  return Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)) as ConsoleEnvLimits;
}

/** AUTH_MAX_CLOCK_DRIFT_SECS: default 300, range 0..900 (0 = exact second), anything else falls back to 300. */
export function clockDriftSecs(env: Env): number {
  return intVar(env, "AUTH_MAX_CLOCK_DRIFT_SECS", 300, 0, 900);
}

const list = (raw: string | undefined) =>
  (raw ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

export function loadConfig(env: Env = process.env): RelayerConfig {
  const port = intVar(env, "PORT", 8000, 0, 65535);
  const blobstorePort = intVar(env, "BLOBSTORE_PORT", 8200, 0, 65535);
  // Without a key, the shipped sentence encoder (weights in node_modules, works offline): it finds paraphrases the
  // hashing embedder cannot (bench/RESULTS.md). Hashing stays selectable for benchmarks and tests.
  const embedder = (env.MEMRELAY_EMBEDDER ?? (env.EMBEDDING_API_KEY ? "openai" : "use-lite")) as RelayerConfig["embedder"];
  return {
    port,
    consolePort: intVar(env, "CONSOLE_PORT", 8100, 0, 65535),
    blobstorePort,
    blobstoreBackend: env.BLOBSTORE_BACKEND === "jetstream" || env.BLOBSTORE_BACKEND === "fs" ? env.BLOBSTORE_BACKEND : undefined,
    blobstoreCacheBytes: intVar(env, "BLOBSTORE_CACHE_BYTES", 64 * 1024 * 1024, 0),
    host: env.HOST ?? "127.0.0.1",
    natsUrl: env.NATS_URL ?? "nats://127.0.0.1:4222",
    // Strict: a mistyped value must not quietly put a cluster's streams at R1.
    natsReplicas: strictIntVar(env, "NATS_REPLICAS", 1, 5, "the copies of each stream (3 on a three-node cluster)"),
    databaseUrl: env.DATABASE_URL,
    databaseRead: databaseReadFromEnv(env),
    logFormat: env.LOG_FORMAT ?? "pretty",
    authMaxClockDriftSecs: clockDriftSecs(env),
    gatewayVerifyThreads: intVar(env, "GATEWAY_VERIFY_THREADS", Math.max(0, availableParallelism() - 1), 0, 64),
    corsAllowedOrigins: list(env.CORS_ALLOWED_ORIGINS),
    packageId: env.MEMORY_PACKAGE_ID ?? "0x" + "a1".repeat(32),
    registryId: env.MEMORY_REGISTRY_ID ?? "0x" + "b2".repeat(32),
    network: env.CHAIN_NETWORK ?? "localnet",
    chainRpcUrl: env.CHAIN_RPC_URL ?? "",
    chainGrpcUrl: env.CHAIN_GRPC_URL ?? "",
    blobstorePublisherUrl: env.BLOBSTORE_PUBLISHER_URL ?? `http://127.0.0.1:${blobstorePort}`,
    blobstoreAggregatorUrl: env.BLOBSTORE_AGGREGATOR_URL ?? `http://127.0.0.1:${blobstorePort}`,
    blobstoreAggregatorUrls: list(env.BLOBSTORE_AGGREGATOR_URLS),
    blobstoreAggregatorRaceAfterMs: intVar(env, "BLOBSTORE_AGGREGATOR_RACE_AFTER_MS", 150, 0, 60_000),
    blobstoreStoreTimeoutMs: intVar(env, "BLOBSTORE_STORE_TIMEOUT_MS", 600_000, 1_000, 3_600_000),
    blobCacheTtlSecs: intVar(env, "BLOB_CACHE_TTL_SECS", 1_209_600, 0),
    blobCacheMaxBytes: intVar(env, "BLOB_CACHE_MAX_BYTES", 524_288, 0),
    blobstoreSkipConsistencyCheck: ["true", "1"].includes(env.BLOBSTORE_SKIP_CONSISTENCY_CHECK?.trim().toLowerCase() ?? ""),
    walrusShards: intVar(env, "WALRUS_N_SHARDS", 1000, 1, 65_535),
    walrusLocalNodes: intVar(env, "WALRUS_LOCAL_NODES", 4, 1, 100),
    walrusLocalShards: Math.max(intVar(env, "WALRUS_LOCAL_SHARDS", 10, 1, 1000), intVar(env, "WALRUS_LOCAL_NODES", 4, 1, 100)),
    serverChainPrivateKeys: list(env.SERVER_CHAIN_PRIVATE_KEYS ?? env.SERVER_CHAIN_PRIVATE_KEY),
    networkProfile: networkProfileFromEnv(env),
    storeMode: storeModeFromEnv(env),
    encryptionThreshold: env.ENCRYPTION_THRESHOLD ? intVar(env, "ENCRYPTION_THRESHOLD", 2, 1) : undefined,
    embedder: ["hashing", "use-lite", "openai"].includes(embedder) ? embedder : "hashing",
    embeddingDims: env.MEMRELAY_EMBEDDING_DIMS ? intVar(env, "MEMRELAY_EMBEDDING_DIMS", 1024, 8, 2000) : undefined,
    embeddingApiBase: env.EMBEDDING_API_BASE,
    embeddingApiKey: env.EMBEDDING_API_KEY,
    embeddingModel: env.EMBEDDING_MODEL,
    embedding: embeddingFromEnv(env),
    readyMaxWaitSecs: intVar(env, "READY_MAX_WAIT_SECS", 30, 1, 86_400),
    llm: llmFromEnv(env),
    rateLimitDisabled: env.RATE_LIMIT_DISABLED === "true" || env.RATE_LIMIT_DISABLED === "1",
    alertWebhookUrl: env.ALERT_WEBHOOK_URL?.trim() || undefined,
    alertWebhookTimeoutMs: intVar(env, "ALERT_WEBHOOK_TIMEOUT_MS", 5_000, 100, 120_000),
    alertWebhookMaxAttempts: intVar(env, "ALERT_WEBHOOK_MAX_ATTEMPTS", 20, 1, 1_000),
    alertWebhookRetryBaseMs: intVar(env, "ALERT_WEBHOOK_RETRY_BASE_MS", 1_000, 10, 3_600_000),
    balanceMonitorIntervalSecs: intVar(env, "BALANCE_MONITOR_INTERVAL_SECS", 900, 0),
    walletBalanceLowThresholdWal: amountVar(env, "WALLET_BALANCE_LOW_THRESHOLD_WAL", 50_000_000_000n),
    walletBalanceLowThresholdSui: amountVar(env, "WALLET_BALANCE_LOW_THRESHOLD_SUI", 5_000_000_000n),
    sponsorBalanceLowThresholdSui: amountVar(env, "SPONSOR_BALANCE_LOW_THRESHOLD_SUI", 5_000_000_000n),
    walletBalanceLowAlertDedupSecs: intVar(env, "WALLET_BALANCE_LOW_ALERT_DEDUP_SECS", 43_200, 0),
    sponsorWalletAddress: env.SPONSOR_WALLET_ADDRESS?.trim().toLowerCase() || undefined,
    sponsorPrivateKey: env.SPONSOR_PRIVATE_KEY?.trim() || undefined,
    sponsorRateLimit: {
      perMinute: intVar(env, "SPONSOR_RATE_LIMIT_PER_MINUTE", 10, 0),
      perHour: intVar(env, "SPONSOR_RATE_LIMIT_PER_HOUR", 30, 0),
    },
    sponsorTransientRetry: {
      maxAttempts: intVar(env, "SPONSOR_TRANSIENT_MAX_ATTEMPTS", 2, 1, 20),
      baseDelayMs: intVar(env, "SPONSOR_TRANSIENT_BASE_DELAY_MS", 5_000, 0, 600_000),
      maxDelayMs: intVar(env, "SPONSOR_TRANSIENT_MAX_DELAY_MS", 30_000, 0, 3_600_000),
    },
    sponsor: sponsorFromEnv(env),
    trustedProxyHops: intVar(env, "TRUSTED_PROXY_HOPS", 0, 0, 16),
    dataDir: dataDirOf(env),
    lexicalKey: env.MEMRELAY_LEXICAL_KEY?.trim() || undefined,
    recallRanking: env.MEMRELAY_RECALL_RANKING?.trim().toLowerCase() === "cosine" ? "cosine" : "hybrid",
    hybridDenseWeight: unitVar(env, "MEMRELAY_HYBRID_DENSE_WEIGHT"),
    hybridKeepDenseTop: unitVar(env, "MEMRELAY_HYBRID_KEEP_DENSE_TOP"),
    hybridContext: contextVar(env.MEMRELAY_HYBRID_CONTEXT),
    consoleLimits: consoleLimitsFromEnv(env),
    sidecar: {
      url: env.SIDECAR_URL?.trim() || "http://localhost:9000",
      authToken: env.SIDECAR_AUTH_TOKEN?.trim() || undefined,
      watchdogIntervalSecs: intVar(env, "SIDECAR_WATCHDOG_INTERVAL_SECS", 30, 1),
      watchdogTimeoutSecs: intVar(env, "SIDECAR_WATCHDOG_TIMEOUT_SECS", 2, 1),
      watchdogMaxFailures: intVar(env, "SIDECAR_WATCHDOG_MAX_FAILURES", 6, 1),
    },
    mcpSessions: mcpSessionsFromEnv(env),
    oauth: oauthFromEnv(env),
  };
}

export interface EmbeddingSettings {
  /** EMBEDDING_WORKERS: model threads of the local USE-lite embedder per process (default: one per core). */
  readonly workers: number;
  /** EMBEDDING_MAX_WINDOWS (64): windows embedded per text; a longer text is represented by this many spread over it. */
  readonly maxWindows: number;
  /** EMBEDDING_DEADLINE_BASE_SECS (30) and EMBEDDING_DEADLINE_MS_PER_WINDOW (2000): a text's deadline is base + per window × windows. */
  readonly deadlineBaseMs: number;
  readonly deadlineMsPerWindow: number;
}

export function embeddingFromEnv(env: Env): EmbeddingSettings {
  return {
    workers: intVar(env, "EMBEDDING_WORKERS", availableParallelism(), 1, 64),
    maxWindows: intVar(env, "EMBEDDING_MAX_WINDOWS", 64, 1, 100_000),
    deadlineBaseMs: intVar(env, "EMBEDDING_DEADLINE_BASE_SECS", 30, 0, 86_400) * 1000,
    deadlineMsPerWindow: intVar(env, "EMBEDDING_DEADLINE_MS_PER_WINDOW", 2_000, 0, 3_600_000),
  };
}

/** SPONSOR_NETWORK's default (the spec's). */
export const DEFAULT_SPONSOR_NETWORK = "mainnet";

export interface SponsorConfig {
  /** SPONSOR_API_KEY: when set, sponsorship goes through the provider instead of the gas station. Never logged. */
  readonly apiKey: string | undefined;
  /** SPONSOR_API_URL (this project's): the provider's base URL; unset: Enoki's public API (the local stack: its own provider). */
  readonly apiUrl: string | undefined;
  /** SPONSOR_NETWORK: the network named in sponsor requests; unset: mainnet (the local stack: its ledger's network). */
  readonly network: string | undefined;
  /** SPONSOR_FALLBACK_TO_DIRECT_SIGN (false): the server wallet pays the gas of a write whose sponsorship failed. */
  readonly fallbackToDirectSign: boolean;
  /** SPONSOR_DURABLE_REGISTER_ENABLED (false): blob registrations are sponsored. */
  readonly durableRegister: boolean;
  /** SPONSOR_INVALIDATED_MAX_ATTEMPTS / _BASE_DELAY_MS / _MAX_DELAY_MS (4 / 1000 / 8000): re-sponsoring invalidated transactions. */
  readonly invalidatedRetry: RetryPolicy;
}

/** `true`/`false` (or 1/0) when set; anything else is a ConfigError naming the variable. */
function strictBoolVar(env: Env, name: string, def: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === "") return def;
  if (raw === "true" || raw === "1") return true;
  if (raw === "false" || raw === "0") return false;
  throw new ConfigError(`${name} must be true or false; got ${JSON.stringify(env[name])}`);
}

/**
 * The sponsorship variables. Unlike the spec's older relayer variables they do not fall back on a malformed value: a
 * sponsorship misconfigured silently would make the server wallets pay or the writes fail, so a bad value stops the start.
 */
export function sponsorFromEnv(env: Env): SponsorConfig {
  const apiKey = env.SPONSOR_API_KEY?.trim() || undefined;
  if (apiKey !== undefined && !/^[\x21-\x7e]{8,512}$/.test(apiKey)) throw new ConfigError("SPONSOR_API_KEY must be 8 to 512 printable characters without spaces");
  const apiUrl = env.SPONSOR_API_URL?.trim() || undefined;
  if (apiUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(apiUrl)) throw new ConfigError(`SPONSOR_API_URL must be an http(s) URL; got ${JSON.stringify(apiUrl)}`);
  const network = env.SPONSOR_NETWORK?.trim() || undefined;
  if (network !== undefined && !/^[a-z0-9-]{1,32}$/.test(network)) throw new ConfigError(`SPONSOR_NETWORK must be a network name such as mainnet or testnet; got ${JSON.stringify(network)}`);
  const int = (name: string, def: number, min: number, max: number, what: string) => strictIntVar(env, name, min, max, what) ?? def;
  const invalidatedRetry = {
    maxAttempts: int("SPONSOR_INVALIDATED_MAX_ATTEMPTS", 4, 1, 20, "how many times an invalidated sponsored transaction is sponsored"),
    baseDelayMs: int("SPONSOR_INVALIDATED_BASE_DELAY_MS", 1_000, 0, 600_000, "the first pause (ms) before sponsoring again"),
    maxDelayMs: int("SPONSOR_INVALIDATED_MAX_DELAY_MS", 8_000, 0, 3_600_000, "the longest pause (ms) before sponsoring again"),
  };
  if (invalidatedRetry.maxDelayMs < invalidatedRetry.baseDelayMs) {
    throw new ConfigError(`SPONSOR_INVALIDATED_MAX_DELAY_MS (${invalidatedRetry.maxDelayMs}) must not be below SPONSOR_INVALIDATED_BASE_DELAY_MS (${invalidatedRetry.baseDelayMs})`);
  }
  return {
    apiKey,
    apiUrl,
    network,
    fallbackToDirectSign: strictBoolVar(env, "SPONSOR_FALLBACK_TO_DIRECT_SIGN", false),
    durableRegister: strictBoolVar(env, "SPONSOR_DURABLE_REGISTER_ENABLED", false),
    invalidatedRetry,
  };
}

/** OAuth is on when MCP_OAUTH_DELEGATE_ENCRYPTION_KEY is set (a malformed key is a configuration error). */
export function oauthFromEnv(env: Env): OAuthSettings | undefined {
  const raw = env.MCP_OAUTH_DELEGATE_ENCRYPTION_KEY?.trim();
  if (!raw) return undefined;
  let key: Uint8Array;
  try {
    key = parseOperatorKey(raw);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  return {
    key,
    accessTtlSecs: intVar(env, "MCP_OAUTH_ACCESS_TTL_SECS", 3600, 1),
    refreshTtlSecs: intVar(env, "MCP_OAUTH_REFRESH_TTL_SECS", 2_592_000, 1),
    codeTtlSecs: intVar(env, "MCP_OAUTH_CODE_TTL_SECS", 300, 1),
    sessionTtlSecs: intVar(env, "MCP_OAUTH_SESSION_TTL_SECS", 900, 1),
    allowedRegistrationHosts: list(env.MCP_OAUTH_ALLOWED_REGISTRATION_HOSTS ?? "claude.ai").map((h) => h.toLowerCase()),
    registrationPerHourPerIp: intVar(env, "MCP_OAUTH_REGISTRATION_PER_HOUR_PER_IP", 20, 0),
    registrationTrustedCidrs: list(env.MCP_OAUTH_REGISTRATION_TRUSTED_CIDRS ?? "160.79.104.0/21"),
    consentUrl: env.MCP_OAUTH_CONSENT_URL?.trim() || undefined,
    issuer: env.MEMORY_RELAYER_URL?.trim().replace(/\/+$/, "") || undefined,
  };
}

/** The agent sessions' limits (spec: MCP_MAX_*); MCP_SESSION_IDLE_SECS and MCP_REMEMBER_TIMEOUT_SECS are this project's. */
export interface McpSessionConfig {
  readonly maxTotal: number;
  readonly maxPerIp: number;
  readonly newPerIpPerMinute: number;
  /** A session without a request for this long is closed (its client must initialize again). */
  readonly idleMs: number;
  /** Longest a memory_remember waits for its job. */
  readonly rememberTimeoutMs: number;
}

export function mcpSessionsFromEnv(env: Env): McpSessionConfig {
  return {
    maxTotal: intVar(env, "MCP_MAX_TOTAL_SESSIONS", 1000, 1),
    maxPerIp: intVar(env, "MCP_MAX_SESSIONS_PER_IP", 16, 1),
    newPerIpPerMinute: intVar(env, "MCP_MAX_NEW_SESSIONS_PER_IP_PER_MIN", 30, 1),
    idleMs: intVar(env, "MCP_SESSION_IDLE_SECS", 1800, 5) * 1000,
    rememberTimeoutMs: intVar(env, "MCP_REMEMBER_TIMEOUT_SECS", 120, 1) * 1000,
  };
}

export interface SidecarLinkConfig {
  readonly url: string;
  /** Shared secret of the relayer and the sidecar; unset: the agent transports answer 503 (and no sidecar starts). */
  readonly authToken: string | undefined;
  readonly watchdogIntervalSecs: number;
  readonly watchdogTimeoutSecs: number;
  readonly watchdogMaxFailures: number;
}
