// What the console's route modules share (gateway/console/*-routes.ts): the listener and its wrappers, the scope
// checks every route makes, the write and read sides, limits, and the JSON shapes of the answers.
import type { Handler, HttpServer, Reply, Request } from "../http.ts";
import type { ConsoleAuth, Principal } from "./auth.ts";
import type { ConsoleLog } from "../../actors/console/log.ts";
import type { PolicyReader } from "../../actors/console/chain.ts";
import type { SponsoredChainPort } from "../../adapters/ports.ts";
import type { StoragePort } from "../../adapters/file-storage/blobstore-http.ts";
import type { Logger } from "../../config/logger.ts";
import type { Queries } from "../../projections/console/queries.ts";
import type { BucketRow, FileListRow, FileRow, SpaceRow } from "../../projections/console/query-parts.ts";
import type { ConsoleHttpError, PlanTier } from "../../schemas/console/http.ts";
import type { SpaceRole, UploadState } from "../../schemas/console/events.ts";
import type { AccessScope } from "../../schemas/chain.ts";
import type { keypairFromSecret } from "../../adapters/chain/sui/keys.ts";
import type { bodyBuffers } from "../recycled-buffers.ts";

export interface GatewayLimits {
  readonly maxUploadBytes: number;
  readonly uploadsPerMinute: number;
  readonly retentionMs: number;
  readonly sponsorTtlMs: number;
  readonly tiers: Readonly<Record<string, PlanTier>>;
}

/** An upload the read model does not have yet, as its job's events tell it. */
export interface UploadView {
  readonly state: UploadState;
  readonly progress: number | null;
  readonly error: { code: string; message: string } | null;
  readonly file: FileRow;
}

export interface ConsoleRouteKit {
  readonly server: HttpServer;
  /** Metrics and error mapping around a handler. */
  readonly wrap: (name: string, h: Handler) => Handler;
  /** `wrap` plus API-key authentication. */
  readonly authed: (name: string, h: (req: Request, p: Principal) => Promise<Reply>) => Handler;
  readonly qs: (req: Request) => URLSearchParams;
  /** The path prefix of the versioned API, `/api/v1`. */
  readonly P: string;
  readonly auth: ConsoleAuth;
  readonly clog: ConsoleLog;
  readonly q: Queries;
  readonly policies: PolicyReader;
  readonly chain: SponsoredChainPort;
  readonly sponsor: ReturnType<typeof keypairFromSecret>;
  readonly storage: StoragePort;
  readonly logger: Logger;
  readonly limits: GatewayLimits;
  /** Waits until the console read model has applied `seq` (read-your-writes). */
  readonly settle: (seq: number, timeoutMs?: number) => Promise<void>;
  readonly slabs: ReturnType<typeof bodyBuffers>;
  readonly uploadLimiter: RateLimiter;
  // scope checks
  readonly scopeError: () => ConsoleHttpError;
  readonly scopeSpace: (p: Principal, spaceId: string) => Promise<SpaceRole>;
  readonly scopeBucket: (p: Principal, raw: string) => Promise<BucketRow>;
  readonly scopeFile: (p: Principal, rawBucket: string, rawFile: string) => Promise<{ bucket: BucketRow; file: FileRow }>;
  readonly checkAccess: (p: Principal, b: BucketRow, need: AccessScope, known?: AccessScope | null) => Promise<void>;
  readonly activeBucket: (b: BucketRow) => void;
  readonly tierOf: (name: string) => PlanTier;
  readonly uploadView: (fileId: string) => Promise<UploadView | null>;
}

export const bucketJson = (b: BucketRow) => ({
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

export const fileJson = (f: FileListRow) => ({
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

export const spaceJson = (s: SpaceRow) => ({
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

/** A small per-key token bucket (per replica: a cap on bursts, not a billing meter). */
export class RateLimiter {
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

