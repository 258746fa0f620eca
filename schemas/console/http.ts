// The console's HTTP contract (spec/console.md): limits, error codes, and the validation of paths, queries and
// bodies. Pure: every failure is a ConsoleHttpError that the gateway turns into `{error, code?}`.
import type { SponsorKind, Visibility } from "./events.ts";
import { findUnsafeText } from "../text.ts";

export const CONSOLE_API_PREFIX = "/api/v1";

export const CONSOLE_LIMITS = {
  /** spec Limits: upload size */
  uploadBytes: 100 * 1024 * 1024,
  /** multipart framing and the small fields a request may carry besides the file */
  multipartOverhead: 64 * 1024,
  fileName: 255,
  metadataBytes: 8 * 1024,
  bucketName: { min: 1, max: 100 },
  bucketList: { min: 1, max: 1000, def: 100 },
  fileList: { min: 1, max: 100, def: 20 },
  jsonBody: 64 * 1024,
  query: 200,
} as const;

/** Machine-readable error codes of the spec (plus the wallet challenge ones, whose routes are not shown). */
export const CODE = {
  unauthorized: "unauthorized",
  readOnlyApiKey: "read_only_api_key",
  apiKeyRegistering: "api_key_registering",
  apiKeyRevoking: "api_key_revoking",
  apiKeyRevoked: "api_key_revoked",
  bucketNotInScope: "bucket_not_in_scope",
  bucketNotFinalized: "bucket_not_finalized",
  mirrorMissingGrant: "mirror_missing_grant",
  quotaExceeded: "quota_exceeded",
  payloadTooLarge: "payload_too_large",
  badRequest: "bad_request",
  planLimitExceeded: "PLAN_LIMIT_EXCEEDED",
  notFound: "not_found",
  conflict: "conflict",
  rateLimited: "rate_limited",
  visibilityImmutable: "visibility_immutable",
  fileLocked: "file_locked",
  blobUnavailable: "blob_unavailable",
  uploadNotCompleted: "upload_not_completed",
  invalidSignature: "invalid_signature",
  chainRejected: "chain_rejected",
} as const;

export class ConsoleHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
  body(): Record<string, unknown> {
    return { error: this.message, ...(this.code ? { code: this.code } : {}), ...this.extra };
  }
}

export const badRequest = (message: string) => new ConsoleHttpError(400, message, CODE.badRequest);
export const notFound = (message: string) => new ConsoleHttpError(404, message, CODE.notFound);

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ADDRESS_RE = /^0x[0-9a-f]{64}$/;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export const isUuid = (s: string) => UUID_RE.test(s);

/** A path id: a UUID (lower-cased), else 404 (an id that cannot exist is simply not found). */
export function pathUuid(raw: string, what: string): string {
  const id = decodeSafe(raw).toLowerCase();
  if (!UUID_RE.test(id)) throw notFound(`${what} ${raw} not found`);
  return id;
}

function decodeSafe(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

export function parseAddress(raw: unknown, field: string): string {
  const a = typeof raw === "string" ? raw.toLowerCase() : "";
  if (!ADDRESS_RE.test(a)) throw badRequest(`${field} must be 0x followed by 64 hex characters`);
  return a;
}

export function validateBucketName(raw: unknown): string {
  if (typeof raw !== "string") throw badRequest("name is required (a string of 1 to 100 characters)");
  const len = [...raw].length;
  if (len < CONSOLE_LIMITS.bucketName.min || len > CONSOLE_LIMITS.bucketName.max) {
    throw badRequest(`bucket name must be ${CONSOLE_LIMITS.bucketName.min} to ${CONSOLE_LIMITS.bucketName.max} characters, got ${len}`);
  }
  if (CONTROL.test(raw)) throw badRequest("bucket name must not contain control characters");
  if (raw.trim() !== raw || !raw.trim()) throw badRequest("bucket name must not start or end with whitespace");
  return raw;
}

export function validateFileName(raw: string): string {
  const len = [...raw].length;
  if (len === 0) throw badRequest("file name must not be empty");
  if (len > CONSOLE_LIMITS.fileName) throw badRequest(`file name must be at most ${CONSOLE_LIMITS.fileName} characters, got ${len}`);
  if (CONTROL.test(raw)) throw badRequest("file name must not contain control characters");
  if (raw.includes("\ufffd")) throw badRequest("file name must be valid UTF-8");
  return raw;
}

/** `metadata`: a JSON object string of at most 8 KiB. */
export function parseFileMetadata(raw: string | undefined): Record<string, unknown> {
  if (raw === undefined || raw === "") return {};
  if (Buffer.byteLength(raw, "utf8") > CONSOLE_LIMITS.metadataBytes) throw badRequest(`metadata must be at most ${CONSOLE_LIMITS.metadataBytes} bytes of JSON`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw badRequest("metadata must be a JSON object");
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw badRequest("metadata must be a JSON object");
  const unsafe = findUnsafeText(parsed, "metadata");
  if (unsafe) throw badRequest(unsafe);
  return parsed as Record<string, unknown>;
}

export function validateMimeType(raw: string | undefined): string {
  const v = (raw ?? "").trim();
  if (!v) return "application/octet-stream";
  if (v.length > 255 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;.*)?$/.test(v) || CONTROL.test(v)) return "application/octet-stream";
  return v;
}

// ------------------------------------------------------------------ JSON bodies


export interface CreateBucketBody {
  readonly name: string;
  readonly scope: "private";
}

export function parseCreateBucket(body: Record<string, unknown>): CreateBucketBody {
  const name = validateBucketName(body.name);
  if (body.scope !== "private") throw badRequest('scope must be "private" (the only scope accepted currently)');
  return { name, scope: "private" };
}

export interface UpdateBucketBody {
  readonly name: string;
  /** undefined: unchanged; null: clear */
  readonly encryptionPolicyId?: string | null;
  readonly visibility?: Visibility;
}

export function parseUpdateBucket(body: Record<string, unknown>): UpdateBucketBody {
  const name = validateBucketName(body.name);
  const out: { name: string; encryptionPolicyId?: string | null; visibility?: Visibility } = { name };
  for (const field of ["encryptionPolicyId", "sealPolicyId"] as const) {
    if (!(field in body)) continue;
    const v = body[field];
    if (v === null) out.encryptionPolicyId = null;
    else if (typeof v === "string" && ADDRESS_RE.test(v.toLowerCase())) out.encryptionPolicyId = v.toLowerCase();
    else throw badRequest(`${field} must be an object id (0x followed by 64 hex characters) or null`);
  }
  if ("visibility" in body) {
    if (body.visibility !== "public" && body.visibility !== "private") throw badRequest("visibility must be public or private");
    out.visibility = body.visibility;
  }
  return out;
}

export function parseSignatureBody(body: Record<string, unknown>): string {
  const s = body.signature;
  if (typeof s !== "string" || !s.length || s.length > 200 || !/^[A-Za-z0-9+/]+={0,2}$/.test(s)) throw badRequest("signature must be a base64 string");
  return s;
}

export type SponsorBody =
  | { readonly kind: "bucket_group_create"; readonly bucketId: string }
  | { readonly kind: "grant_bucket_access"; readonly groupIds: string[]; readonly recipientAddress: string; readonly scope: "read" | "readwrite" }
  | { readonly kind: "share_admin"; readonly groupId: string; readonly member: string }
  | { readonly kind: "unshare"; readonly groupId: string; readonly member: string }
  | { readonly kind: "unshare_bucket_access"; readonly groupId: string; readonly serviceSignerAddress: string };

export const SPONSOR_KINDS: readonly SponsorKind[] = ["bucket_group_create", "grant_bucket_access", "share_admin", "unshare", "unshare_bucket_access"];

export function parseSponsor(body: Record<string, unknown>): SponsorBody {
  switch (body.kind) {
    case "bucket_group_create": {
      const id = typeof body.bucketId === "string" ? body.bucketId.toLowerCase() : "";
      if (!UUID_RE.test(id)) throw badRequest("bucketId must be a bucket UUID");
      return { kind: "bucket_group_create", bucketId: id };
    }
    case "grant_bucket_access": {
      if (!Array.isArray(body.groupIds) || body.groupIds.length === 0 || body.groupIds.length > 16) throw badRequest("groupIds must list 1 to 16 group ids");
      const groupIds = body.groupIds.map((g, i) => parseAddress(g, `groupIds[${i}]`));
      if (new Set(groupIds).size !== groupIds.length) throw badRequest("groupIds lists a group twice");
      if (body.scope !== "read" && body.scope !== "readwrite") throw badRequest("scope must be read or readwrite");
      return { kind: "grant_bucket_access", groupIds, recipientAddress: parseAddress(body.recipientAddress, "recipientAddress"), scope: body.scope };
    }
    case "share_admin":
    case "unshare":
      return { kind: body.kind, groupId: parseAddress(body.groupId, "groupId"), member: parseAddress(body.member, "member") };
    case "unshare_bucket_access":
      return { kind: "unshare_bucket_access", groupId: parseAddress(body.groupId, "groupId"), serviceSignerAddress: parseAddress(body.serviceSignerAddress, "serviceSignerAddress") };
    default:
      throw badRequest(`kind must be one of ${SPONSOR_KINDS.join(", ")}`);
  }
}

// ------------------------------------------------------------------ list queries

export type SortOrder = "asc" | "desc";
export type BucketSort = "name" | "date" | "storage";
export type FileSort = "name" | "date" | "size" | "type";

export interface Cursor {
  /** sort field the cursor was made for */
  readonly s: string;
  readonly o: SortOrder;
  /** sort value of the last row (string or number) */
  readonly v: string | number;
  /** id of the last row (tie-breaker) */
  readonly id: string;
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify(c)).toString("base64url");
}

export function decodeCursor(raw: string | null, sort: string, order: SortOrder): Cursor | null {
  if (raw === null || raw === "") return null;
  let c: Cursor;
  try {
    c = JSON.parse(Buffer.from(raw, "base64url").toString("utf8")) as Cursor;
  } catch {
    throw badRequest("cursor is not one this API returned");
  }
  if (!c || typeof c !== "object" || typeof c.id !== "string" || !UUID_RE.test(c.id) || (typeof c.v !== "string" && typeof c.v !== "number")) {
    throw badRequest("cursor is not one this API returned");
  }
  if (c.s !== sort || c.o !== order) throw badRequest("cursor was made for another sortField or sortOrder");
  return c;
}

function parseLimit(raw: string | null, bounds: { min: number; max: number; def: number }): number {
  if (raw === null || raw === "") return bounds.def;
  if (!/^\d{1,7}$/.test(raw)) throw badRequest(`limit must be an integer from ${bounds.min} to ${bounds.max}`);
  const n = Number(raw);
  if (n < bounds.min || n > bounds.max) throw badRequest(`limit must be an integer from ${bounds.min} to ${bounds.max}`);
  return n;
}

function parseOrder(raw: string | null): SortOrder {
  if (raw === null || raw === "") return "desc";
  const v = raw.toLowerCase();
  if (v !== "asc" && v !== "desc") throw badRequest("sortOrder must be asc or desc");
  return v;
}

function parseQ(raw: string | null): string | null {
  if (raw === null || raw === "") return null;
  if (raw.length > CONSOLE_LIMITS.query) throw badRequest(`q must be at most ${CONSOLE_LIMITS.query} characters`);
  return raw;
}

export interface BucketListQuery {
  readonly limit: number;
  readonly cursor: Cursor | null;
  readonly q: string | null;
  readonly visibility: Visibility | null;
  readonly sortField: BucketSort;
  readonly sortOrder: SortOrder;
}

export function parseBucketListQuery(qs: URLSearchParams): BucketListQuery {
  const limit = parseLimit(qs.get("limit"), CONSOLE_LIMITS.bucketList);
  const sortField = (qs.get("sortField") || "date") as BucketSort;
  if (!["name", "date", "storage"].includes(sortField)) throw badRequest("sortField must be name, date or storage");
  const sortOrder = parseOrder(qs.get("sortOrder"));
  const visibility = qs.get("visibility") || null;
  if (visibility !== null && visibility !== "public" && visibility !== "private") throw badRequest("visibility must be public or private");
  return { limit, cursor: decodeCursor(qs.get("cursor"), sortField, sortOrder), q: parseQ(qs.get("q")), visibility, sortField, sortOrder };
}

export interface FileListQuery {
  readonly limit: number;
  readonly cursor: Cursor | null;
  readonly q: string | null;
  readonly sortField: FileSort;
  readonly sortOrder: SortOrder;
}

export function parseFileListQuery(qs: URLSearchParams): FileListQuery {
  const limit = parseLimit(qs.get("limit"), CONSOLE_LIMITS.fileList);
  const sortField = (qs.get("sortField") || "date") as FileSort;
  if (!["name", "date", "size", "type"].includes(sortField)) throw badRequest("sortField must be name, date, size or type");
  const sortOrder = parseOrder(qs.get("sortOrder"));
  return { limit, cursor: decodeCursor(qs.get("cursor"), sortField, sortOrder), q: parseQ(qs.get("q")), sortField, sortOrder };
}

export function parseSpaceType(raw: string | null): "personal" | "team" | null {
  if (raw === null || raw === "") return null;
  if (raw !== "personal" && raw !== "team") throw badRequest("type must be personal or team");
  return raw;
}

// ------------------------------------------------------------------ plans

export interface PlanTier {
  readonly buckets: number;
  readonly users: number;
  /** default storage cap of a space on this tier, in bytes */
  readonly storage: number;
}

export const PLAN_TIERS: Readonly<Record<string, PlanTier>> = {
  free: { buckets: 10, users: 3, storage: 5 * 1024 ** 3 },
  pro: { buckets: 100, users: 25, storage: 1024 ** 4 },
  enterprise: { buckets: 10_000, users: 1_000, storage: 100 * 1024 ** 4 },
};
