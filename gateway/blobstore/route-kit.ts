// What the blob store's route modules share (gateway/blobstore/*-routes.ts): the route table with its OpenAPI
// documentation, the credential wrappers, the write side and the read models, and the JSON shapes of the answers.
import { HttpError, type Handler, type Reply, type Request, type RouteOptions } from "../http.ts";
import type { RouteDoc } from "./openapi.ts";
import type { AccountPrincipal, AppPrincipal } from "./auth.ts";
import type { BlobstoreCommands } from "../../actors/blobstore/commands.ts";
import type { Preconditions } from "../../actors/blobstore/deciders.ts";
import type { MasterKey } from "../../actors/blobstore/keys.ts";
import type { BucketState, ObjectState } from "../../schemas/blobstore/events.ts";
import type { BucketRow, KeyRow, ObjectRow, Queries } from "../../projections/blobstore/queries.ts";
import type { PutResult } from "../../adapters/blob-bytes/backend.ts";
import { LIMITS } from "../../schemas/blobstore/validation.ts";
import type { bodyBuffers } from "../recycled-buffers.ts";
import type { ConfirmMiss } from "./miss-check.ts";

export interface BlobstoreRouteKit {
  /** Registers a route and documents it (HEAD too for public reads). */
  readonly route: (doc: RouteDoc, pattern: string, h: Handler, ro?: RouteOptions) => void;
  /** A data route: an API key's account. */
  readonly data: (h: (req: Request, who: AccountPrincipal) => Promise<Reply>) => Handler;
  /** An admin route: an admin key's app. */
  readonly admin: (h: (req: Request, who: AppPrincipal) => Promise<Reply>) => Handler;
  readonly jsonBody: (req: Request, optional?: boolean) => Record<string, unknown>;
  readonly query: (req: Request) => URLSearchParams;
  /** The raw (percent-encoded) object key: everything after `/blobs/` in the path. */
  readonly rawKey: (req: Request) => string;
  /** The write side: routes parse and authorize, then dispatch here (actors/blobstore/commands.ts). */
  readonly commands: BlobstoreCommands;
  readonly q: Queries;
  readonly master: MasterKey;
  readonly maxBlobBytes: number;
  readonly received: ReturnType<typeof bodyBuffers>;
  /** Stores a request body; `orphan` queues bytes that end up unreferenced for the sweeper. */
  readonly storeBody: (req: Request) => Promise<{ put: PutResult; orphan: () => Promise<void> }>;
  /** Serves a blob's bytes: conditional requests, ranges, the content cache. */
  readonly serve: (req: Request, b: ServedBlob) => Promise<Reply>;
  /** Serves a blob by its id (404 when no object references it once the read model has caught up). */
  readonly serveByBlobId: (req: Request, raw: string) => Promise<Reply>;
  /** Size of a blob some object references; null when none does (a miss judged against the log: 503 while behind). */
  readonly referencedSize: (blobId: string) => Promise<number | null>;
  /** Throws 503 while the event log is unreachable (writes need it). */
  readonly needLog: () => void;
  /** A read-model lookup that missed, run again once its read models caught up with the log (else 503). */
  readonly confirmMiss: ConfirmMiss;
  /** The Walrus epoch the service reports as current. */
  readonly walrusEpoch: number;
}

export interface ServedBlob {
  readonly blobId: string;
  readonly size: number;
  readonly contentType: string;
  readonly etag: string;
  readonly lastModified?: Date;
  readonly immutable: boolean;
}

export const MAX_ACCESS_KEYS = 3;

export const P = {
  bucket: { name: "bucket_name", in: "path", description: "bucket name" } as const,
  key: { name: "key", in: "path", description: "object key (may contain /; percent-encode other reserved characters)" } as const,
  account: { name: "account_id", in: "path", description: "account id (uuid)" } as const,
  blobId: { name: "blob_id", in: "path", description: "blob id: 32 bytes as URL-safe base64 without padding" } as const,
  range: { name: "Range", in: "header", description: "bytes=start-end (one range); 206 or 416" } as const,
  limit: { name: "limit", in: "query", description: `page size, 1-${LIMITS.listMax} (default ${LIMITS.listDefault})` } as const,
  cursor: { name: "cursor", in: "query", description: "next_cursor of the previous page" } as const,
};
export const E401 = { description: "missing, malformed, unknown or revoked key" };
export const E404 = { description: "not found" };
/** A read that missed while its read model was behind the event log (or the log is unreachable): retry. */
export const E503 = { description: "the read model is behind the event log, or the log is unreachable (Retry-After)" };
export const E400 = { description: "invalid input" };

export const bucketJson = (b: BucketState | BucketRow) => ({
  name: b.name,
  bucket_id: b.bucket_id,
  account_id: b.account_id,
  description: b.description,
  metadata: b.metadata,
  created_at: b.created_at,
  updated_at: b.updated_at,
  ...("blob_count" in b ? { blob_count: b.blob_count, total_bytes: b.total_bytes } : {}),
});

export const blobJson = (o: ObjectState | ObjectRow) => ({
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

export const apiKeyJson = (k: KeyRow) => ({
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
export function etagList(h: string | undefined): string[] | null {
  if (h === undefined) return null;
  return h
    .split(",")
    .map((s) => s.trim().replace(/^W\//, "").replace(/^"(.*)"$/, "$1"))
    .filter(Boolean);
}

export function preconditions(req: Request): Preconditions {
  const inm = etagList(req.headers["if-none-match"]);
  if (inm && !(inm.length === 1 && inm[0] === "*")) throw new HttpError(400, "If-None-Match on a write supports only *");
  return { ifNoneMatchAny: inm !== null, ifMatch: etagList(req.headers["if-match"]) };
}

