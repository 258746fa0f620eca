// HTTP request bodies of the relayer (spec/relayer.md, Endpoints) and their validation. Pure: a validation
// failure is a ValidationError that gateways turn into 400 `{error}`.
import { unsafeTextReason } from "../text.ts";

export class ValidationError extends Error {}

export const LIMITS = {
  namespaceBytes: 255,
  textBytes: 1_048_576,
  bulkItems: 20,
  bulkBodyBytes: 2_000_000,
  bodyBytes: 1_100_000,
  recallDefault: 10,
  recallMax: 100,
  /** Restore: default and upper bound of `limit` (blobs downloaded, decrypted and re-embedded per call); larger values are clamped. */
  restoreDefault: 10,
  restoreMax: 500,
  /** Manual remember: largest decoded `encrypted_data` (1 MiB of memory plus 64 KiB of encryption overhead). */
  manualBytes: 1_114_112,
  manualBodyBytes: 2_000_000,
  /** Longest long poll of GET /api/remember/{id}?wait=<seconds>. */
  jobWaitSecsMax: 30,
  /** Largest magnitude a halfvec component holds. */
  vectorMaxAbs: 65_504,
} as const;

export interface ScoringWeights {
  readonly semantic: number;
  readonly recency: number;
  readonly recency_half_life_days: number;
  readonly importance: number;
}

export const DEFAULT_WEIGHTS: ScoringWeights = { semantic: 1, recency: 0, recency_half_life_days: 30, importance: 0 };

export interface RememberBody { readonly text: string; readonly namespace: string }
export interface BulkBody { readonly items: readonly RememberBody[] }
export interface BulkStatusBody { readonly job_ids: readonly string[] }
export interface RecallBody {
  readonly query: string;
  readonly limit: number;
  readonly namespace: string;
  readonly weights: ScoringWeights;
  /** True when recency or importance is non-zero: composite ranking and `score` in results. */
  readonly composite: boolean;
}

const utf8Bytes = (s: string) => Buffer.byteLength(s, "utf8");

export function namespaceOf(v: unknown): string {
  if (v === undefined || v === null) return "default";
  if (typeof v !== "string") throw new ValidationError("namespace must be a string");
  if (v === "") return "default";
  const unsafe = unsafeTextReason(v);
  if (unsafe) throw new ValidationError(`namespace ${unsafe}`);
  if (utf8Bytes(v) > LIMITS.namespaceBytes) throw new ValidationError(`namespace must be at most ${LIMITS.namespaceBytes} UTF-8 bytes`);
  return v;
}

/**
 * MemWal's words for an over-long `text` (services/server/src/routes/remember.rs, analyze.rs): its server tests and
 * clients match on "exceeds maximum length", so the `text` fields answer exactly as MemWal does.
 */
export const textTooLong = (maxBytes: number) => `Text exceeds maximum length of ${maxBytes} bytes`;

export function requiredText(v: unknown, field: string, maxBytes: number): string {
  if (typeof v !== "string") throw new ValidationError(`${field} must be a string`);
  if (v.trim() === "") throw new ValidationError(`${field} must not be empty`);
  if (utf8Bytes(v) > maxBytes) throw new ValidationError(field === "text" ? textTooLong(maxBytes) : `${field} must be at most ${maxBytes} bytes`);
  return v;
}

export function limitOf(v: unknown, def: number, max: number): number {
  if (v === undefined || v === null) return def;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1) throw new ValidationError("limit must be a positive integer");
  return Math.min(v, max);
}

export function weightsOf(v: unknown): { weights: ScoringWeights; composite: boolean } {
  if (v === undefined || v === null) return { weights: DEFAULT_WEIGHTS, composite: false };
  if (typeof v !== "object" || Array.isArray(v)) throw new ValidationError("scoring_weights must be an object");
  const o = v as Record<string, unknown>;
  const num = (k: keyof ScoringWeights, def: number) => {
    const x = o[k];
    if (x === undefined || x === null) return def;
    if (typeof x !== "number" || !Number.isFinite(x)) throw new ValidationError(`scoring_weights.${k} must be a finite number`);
    return x;
  };
  const w: ScoringWeights = {
    semantic: num("semantic", 1),
    recency: num("recency", 0),
    recency_half_life_days: num("recency_half_life_days", 30),
    importance: num("importance", 0),
  };
  for (const k of ["semantic", "recency", "importance"] as const) {
    if (w[k] < 0 || w[k] > 100) throw new ValidationError(`scoring_weights.${k} must be within [0, 100]`);
  }
  if (w.recency_half_life_days <= 0) throw new ValidationError("scoring_weights.recency_half_life_days must be greater than 0");
  return { weights: w, composite: w.recency !== 0 || w.importance !== 0 };
}

export function parseRemember(o: Record<string, unknown>): RememberBody {
  return { text: requiredText(o.text, "text", LIMITS.textBytes), namespace: namespaceOf(o.namespace) };
}

export function parseBulk(o: Record<string, unknown>): BulkBody {
  if (!Array.isArray(o.items)) throw new ValidationError("items must be an array");
  if (o.items.length < 1 || o.items.length > LIMITS.bulkItems) throw new ValidationError(`items must hold 1 to ${LIMITS.bulkItems} entries`);
  return {
    items: o.items.map((it, i) => {
      if (!it || typeof it !== "object" || Array.isArray(it)) throw new ValidationError(`items[${i}] must be an object`);
      // MemWal's words for an over-long bulk item (services/server/src/routes/remember.rs), as for a single text.
      const text = (it as Record<string, unknown>).text;
      if (typeof text === "string" && utf8Bytes(text) > LIMITS.textBytes) throw new ValidationError(`items[${i}].text exceeds ${LIMITS.textBytes} bytes`);
      try {
        return parseRemember(it as Record<string, unknown>);
      } catch (e) {
        throw new ValidationError(`items[${i}]: ${(e as Error).message}`);
      }
    }),
  };
}

export function parseBulkStatus(o: Record<string, unknown>): BulkStatusBody {
  if (!Array.isArray(o.job_ids) || o.job_ids.some((x) => typeof x !== "string")) throw new ValidationError("job_ids must be an array of strings");
  if (o.job_ids.length > 1000) throw new ValidationError("job_ids must hold at most 1000 entries");
  return { job_ids: o.job_ids as string[] };
}

export interface AnalyzeBody { readonly text: string; readonly namespace: string; readonly occurredAt: Date }
export interface AskBody extends Omit<RecallBody, "query"> { readonly question: string }

/** Largest text analyze extracts facts from. */
export const ANALYZE_TEXT_BYTES = 65_536;
export const ASK_DEFAULT_LIMIT = 5;

/** `POST /api/analyze`: `{text, namespace?, occurred_at?}` (RFC 3339; default now). */
export function parseAnalyze(o: Record<string, unknown>, now = new Date()): AnalyzeBody {
  let occurredAt = now;
  if (o.occurred_at !== undefined && o.occurred_at !== null) {
    const ms = typeof o.occurred_at === "string" && /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2}))?$/.test(o.occurred_at) ? Date.parse(o.occurred_at) : NaN;
    if (!Number.isFinite(ms)) throw new ValidationError("occurred_at must be an RFC 3339 date-time (e.g. 2026-11-24T10:00:00Z)");
    occurredAt = new Date(ms);
  }
  return { text: requiredText(o.text, "text", ANALYZE_TEXT_BYTES), namespace: namespaceOf(o.namespace), occurredAt };
}

/** `POST /api/ask`: `{question, limit? (default 5, capped at 100), namespace?, scoring_weights?}`. */
export function parseAsk(o: Record<string, unknown>): AskBody {
  const { weights, composite } = weightsOf(o.scoring_weights);
  return { question: requiredText(o.question, "question", 65_536), limit: limitOf(o.limit, ASK_DEFAULT_LIMIT, LIMITS.recallMax), namespace: namespaceOf(o.namespace), weights, composite };
}

/** `POST /api/embed`: the text whose vector the configured embedder gives (MemWal SDK `embed(text)`). */
export function parseEmbed(o: Record<string, unknown>): { readonly text: string } {
  return { text: requiredText(o.text, "text", LIMITS.textBytes) };
}

export function parseRecall(o: Record<string, unknown>): RecallBody {
  const { weights, composite } = weightsOf(o.scoring_weights);
  return {
    query: requiredText(o.query, "query", 65_536),
    limit: limitOf(o.limit, LIMITS.recallDefault, LIMITS.recallMax),
    namespace: namespaceOf(o.namespace),
    weights,
    composite,
  };
}

export interface ManualRememberBody { readonly bytes: Uint8Array; readonly vector: readonly number[]; readonly namespace: string }
export interface ManualRecallBody {
  readonly vector: readonly number[];
  readonly limit: number;
  readonly namespace: string;
  readonly weights: ScoringWeights;
  readonly composite: boolean;
}
export interface NamespaceBody { readonly namespace: string }
export interface RestoreBody {
  readonly namespace: string;
  readonly limit: number;
  /** Also re-index blobs created before the namespace's last forget (default false: forgotten stays forgotten). */
  readonly include_forgotten: boolean;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** Standard base64 (padded or not) or base64url without padding; anything else is a ValidationError. */
export function base64Bytes(v: unknown, field: string, maxBytes: number): Uint8Array {
  if (typeof v !== "string") throw new ValidationError(`${field} must be a base64 string`);
  if (v === "") throw new ValidationError(`${field} must not be empty`);
  const unpadded = v.replace(/=+$/, "");
  const padded = v.length !== unpadded.length;
  const ok = (BASE64.test(v) || BASE64URL.test(v)) && unpadded.length % 4 !== 1 && (!padded || v.length % 4 === 0);
  if (!ok) throw new ValidationError(`${field} is not valid base64`);
  if (Math.floor((unpadded.length * 3) / 4) > maxBytes) throw new ValidationError(`${field} must decode to at most ${maxBytes} bytes`);
  const bytes = Buffer.from(unpadded, BASE64URL.test(unpadded) && /[-_]/.test(unpadded) ? "base64url" : "base64");
  if (!bytes.length) throw new ValidationError(`${field} must not be empty`);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
}

/** A vector of exactly `dims` finite numbers that a halfvec column holds, not all zero (cosine needs a direction). */
export function vectorOf(v: unknown, dims: number): number[] {
  if (!Array.isArray(v)) throw new ValidationError("vector must be an array of numbers");
  if (v.length !== dims) throw new ValidationError(`vector must have ${dims} dimensions (the index's), not ${v.length}`);
  let nonZero = false;
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (typeof x !== "number" || !Number.isFinite(x)) throw new ValidationError(`vector[${i}] must be a finite number`);
    if (Math.abs(x) > LIMITS.vectorMaxAbs) throw new ValidationError(`vector[${i}] must be within ±${LIMITS.vectorMaxAbs}`);
    if (x !== 0) nonZero = true;
  }
  if (!nonZero) throw new ValidationError("vector must not be all zeros");
  return v as number[];
}

export function parseManualRemember(o: Record<string, unknown>, dims: number): ManualRememberBody {
  return { bytes: base64Bytes(o.encrypted_data, "encrypted_data", LIMITS.manualBytes), vector: vectorOf(o.vector, dims), namespace: namespaceOf(o.namespace) };
}

export function parseManualRecall(o: Record<string, unknown>, dims: number): ManualRecallBody {
  const { weights, composite } = weightsOf(o.scoring_weights);
  return { vector: vectorOf(o.vector, dims), limit: limitOf(o.limit, LIMITS.recallDefault, LIMITS.recallMax), namespace: namespaceOf(o.namespace), weights, composite };
}

/** Bodies of forget and stats: only `namespace`, optional. */
export function parseNamespaceBody(o: Record<string, unknown>): NamespaceBody {
  return { namespace: namespaceOf(o.namespace) };
}

export function parseRestore(o: Record<string, unknown>): RestoreBody {
  const inc = o.include_forgotten;
  if (inc !== undefined && inc !== null && typeof inc !== "boolean") throw new ValidationError("include_forgotten must be a boolean");
  return { namespace: namespaceOf(o.namespace), limit: limitOf(o.limit, LIMITS.restoreDefault, LIMITS.restoreMax), include_forgotten: inc === true };
}

const OWNER_ADDRESS = /^0[xX][0-9a-fA-F]{64}$/;

/** A chain address (`0x` + 64 hex, case-insensitive), lowercased; anything else is a ValidationError. */
export function ownerAddressOf(v: string): string {
  if (!OWNER_ADDRESS.test(v)) throw new ValidationError("owner must be 0x followed by 64 hexadecimal characters");
  return v.toLowerCase();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID.test(s);
