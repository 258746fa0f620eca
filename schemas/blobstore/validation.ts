// Input rules of the blob storage service: bucket names, object keys, ids, ranges, Walrus query parameters.
// Every failure is an HttpError(400) with a message that says what is wrong; nothing here does I/O.
import { HttpError } from "../http-error.ts";

export const LIMITS = {
  bucketName: { min: 3, max: 63 },
  /** object keys, in UTF-8 bytes (S3's limit) */
  keyBytes: 1024,
  contentType: 255,
  description: 1024,
  metadataEntries: 32,
  metadataKey: 128,
  metadataValue: 1024,
  accountName: 128,
  label: 128,
  appId: 64,
  jsonBody: 64 * 1024,
  listDefault: 100,
  listMax: 1000,
  /** Walrus mainnet's limit on epochs ahead */
  maxEpochsAhead: 53,
} as const;

const bad = (msg: string) => new HttpError(400, msg);
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** S3-style bucket names (as oyster): 3-63 chars of a-z 0-9 and single hyphens, starting and ending alphanumeric. */
export function validateBucketName(raw: string): string {
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    throw bad("bucket name is not valid percent-encoding");
  }
  if (!name) throw bad("bucket name must not be empty");
  if (CONTROL.test(name)) throw bad("bucket name must not contain control characters");
  if (name.includes("..")) throw bad("bucket name must not contain '..'");
  if (name.length < LIMITS.bucketName.min || name.length > LIMITS.bucketName.max) {
    throw bad(`bucket name must be between ${LIMITS.bucketName.min} and ${LIMITS.bucketName.max} characters, got ${name.length}`);
  }
  if (!/^[a-z0-9-]+$/.test(name)) throw bad("bucket name can only contain lowercase letters, digits and hyphens");
  if (!/^[a-z0-9]/.test(name) || !/[a-z0-9]$/.test(name)) throw bad("bucket name must start and end with a lowercase letter or digit");
  if (name.includes("--")) throw bad("bucket name must not contain consecutive hyphens");
  return name;
}

/**
 * Object keys: 1-1024 bytes of UTF-8, no control characters, no `.` or `..` path segment (keys look like paths to
 * the tools that mirror buckets to disks). `raw` is the percent-encoded form from the request target.
 */
export function validateObjectKey(raw: string): string {
  let key: string;
  try {
    key = decodeURIComponent(raw);
  } catch {
    throw bad("object key is not valid percent-encoding or UTF-8");
  }
  if (!key) throw bad("object key must not be empty");
  if (key.includes("\ufffd")) throw bad("object key must be valid UTF-8");
  const bytes = Buffer.byteLength(key, "utf8");
  if (bytes > LIMITS.keyBytes) throw bad(`object key must be at most ${LIMITS.keyBytes} bytes of UTF-8, got ${bytes}`);
  if (CONTROL.test(key)) throw bad("object key must not contain control characters");
  for (const seg of key.split("/")) if (seg === ".." || seg === ".") throw bad("object key must not contain '.' or '..' path segments");
  return key;
}

export function validateContentType(v: string | undefined): string {
  if (v === undefined || v === "") return "application/octet-stream";
  if (v.length > LIMITS.contentType || !/^[\x20-\x7e]+$/.test(v) || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+/.test(v)) {
    throw bad(`content-type must be a media type of at most ${LIMITS.contentType} printable characters`);
  }
  return v;
}

export function validateAppId(v: unknown): string {
  if (typeof v !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(v)) throw bad(`app id must be 1-${LIMITS.appId} characters of A-Z a-z 0-9 _ -`);
  return v;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const isUuid = (v: string) => UUID.test(v);

/** Content-addressed blob ids: 32 bytes as URL-safe base64 without padding (Walrus format). */
export const isBlobId = (v: string) => /^[A-Za-z0-9_-]{43}$/.test(v) && /[AEIMQUYcgkosw048]$/.test(v);

export const isObjectId = (v: string) => /^0x[0-9a-f]{64}$/.test(v);

export const isAccessKeyId = (v: string) => /^MRAK[A-Z0-9]{16}$/.test(v);

export function optionalString(body: Record<string, unknown>, field: string, max: number): string | null {
  const v = body[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") throw bad(`${field} must be a string`);
  if (v.length > max) throw bad(`${field} must be at most ${max} characters`);
  if (CONTROL.test(v)) throw bad(`${field} must not contain control characters`);
  return v;
}

export function validateMetadata(v: unknown): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (typeof v !== "object" || Array.isArray(v)) throw bad("metadata must be an object of string values");
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > LIMITS.metadataEntries) throw bad(`metadata may hold at most ${LIMITS.metadataEntries} entries`);
  const out: Record<string, string> = {};
  for (const [k, val] of entries) {
    if (!k || k.length > LIMITS.metadataKey || CONTROL.test(k)) throw bad(`metadata keys must be 1-${LIMITS.metadataKey} characters without control characters`);
    if (typeof val !== "string" || val.length > LIMITS.metadataValue) throw bad(`metadata values must be strings of at most ${LIMITS.metadataValue} characters`);
    out[k] = val;
  }
  return out;
}

export function parseLimit(v: string | null): number {
  if (v === null || v === "") return LIMITS.listDefault;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > LIMITS.listMax) throw bad(`limit must be an integer from 1 to ${LIMITS.listMax}`);
  return n;
}

// ------------------------------------------------------------------ Range

export interface ByteRange {
  readonly start: number;
  /** inclusive */
  readonly end: number;
}

/**
 * One `bytes=` range against a blob of `size` bytes. Returns undefined when the header is absent, malformed or asks
 * for several ranges (the full body is served then, as RFC 9110 allows), "unsatisfiable" for a range past the end.
 */
export function parseRange(header: string | undefined, size: number): ByteRange | "unsatisfiable" | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return undefined;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (!Number.isSafeInteger(suffix)) return undefined;
    if (suffix === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end)) return undefined;
  if (m[2] !== "" && Number(m[2]) < start) return undefined;
  if (start >= size) return "unsatisfiable";
  return { start, end };
}

// ------------------------------------------------------------------ Walrus publisher parameters

export interface WalrusStoreParams {
  readonly epochs: number;
  readonly deletable: boolean;
  readonly sendObjectTo: string | null;
}

const bool = (q: URLSearchParams, name: string): boolean | undefined => {
  const v = q.get(name);
  if (v === null) return undefined;
  if (v === "" || v === "true") return true;
  if (v === "false") return false;
  throw bad(`${name} must be true or false`);
};

export function parseWalrusStore(query: string): WalrusStoreParams {
  const q = new URLSearchParams(query);
  const rawEpochs = q.get("epochs");
  let epochs = 1;
  if (rawEpochs === "max") epochs = LIMITS.maxEpochsAhead;
  else if (rawEpochs !== null) {
    epochs = Number(rawEpochs);
    if (!Number.isInteger(epochs) || epochs < 1 || epochs > LIMITS.maxEpochsAhead) throw bad(`epochs must be an integer from 1 to ${LIMITS.maxEpochsAhead} or "max"`);
  }
  const deletable = bool(q, "deletable");
  const permanent = bool(q, "permanent");
  if (deletable && permanent) throw bad("deletable and permanent are mutually exclusive");
  const to = q.get("send_object_to");
  let sendObjectTo: string | null = null;
  if (to !== null) {
    if (!/^0x[0-9a-fA-F]{1,64}$/.test(to)) throw bad("send_object_to must be a Sui address (0x followed by up to 64 hex digits)");
    sendObjectTo = "0x" + to.slice(2).toLowerCase().padStart(64, "0");
  }
  return { epochs, deletable: deletable === true, sendObjectTo };
}
