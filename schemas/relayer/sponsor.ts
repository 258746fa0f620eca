// Sponsorship (spec/relayer.md, POST /sponsor and /sponsor/execute): a wallet without gas gets one allowlisted
// account call paid by the relayer's sponsor. The request shapes, their validation at the edge, and the personal
// message a sender signs to ask. The relayer validates and forwards; the sidecar decides (actors/relayer/sponsor-rules.ts).
import { blake2b } from "@noble/hashes/blake2.js";
import { HttpError } from "../http-error.ts";

export interface SponsorRequest {
  readonly sender: string;
  /** base64 BCS `TransactionKind` (what `Transaction.build({ onlyTransactionKind: true })` returns). */
  readonly transactionBlockKindBytes: string;
  /** Unix seconds; inside the relayer's clock window (AUTH_MAX_CLOCK_DRIFT_SECS). */
  readonly authTimestamp: number;
  /** UUID v4, single use. */
  readonly authNonce: string;
  /** Sui personal-message signature by `sender` over sponsorAuthMessage(…). */
  readonly authSignature: string;
}

export interface SponsorExecuteRequest {
  readonly digest: string;
  /** The sender's Sui signature over the sponsored bytes. */
  readonly signature: string;
  /** Must equal the sender bound by the /sponsor call that returned `digest`. */
  readonly sender: string;
}

/** Retries with exponential backoff: attempt n (from 1) waits min(maxDelayMs, baseDelayMs · 2^(n-1)) before n+1. */
export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

/** What /sponsor answers: the sponsored TransactionData to sign, and its digest. */
export interface SponsoredTransaction {
  readonly bytes: string;
  readonly digest: string;
}

export const SPONSOR_LIMITS = {
  kindBytesMin: 10,
  kindBytesMax: 7000,
  /** Native Sui signatures are 65 or 97 bytes; larger schemes stay under this. */
  signatureMaxBytes: 2048,
  /** How long a sponsored transaction (and its sender binding) stays executable. */
  bindingTtlMs: 120_000,
  /** The socket's cap: a larger body is refused before it is read, at no cost, and not counted. */
  bodyBytes: 16 * 1024,
  /**
   * MemWal's body limits (services/server/src/main.rs, DefaultBodyLimit): a larger body answers 413 before its JSON is
   * parsed (after the per-IP limit counted it). A /sponsor body with the largest transaction kind (7,000 bytes, 9,336
   * base64 characters) and a native 97-byte signature fits in 10 KiB.
   */
  sponsorBodyBytes: 10 * 1024,
  executeBodyBytes: 4 * 1024,
} as const;

/** The account functions a sponsored transaction may call — exactly one call per transaction. */
export const SPONSORED_ACCOUNT_CALLS = ["create_account", "add_delegate_key", "remove_delegate_key"] as const;

const ADDRESS_RE = /^0x[0-9a-fA-F]{64}$/;
const UUID_V4_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const DIGEST_RE = /^[1-9A-HJ-NP-Za-km-z]{43,44}$/;
const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

/** Hex blake2b-256 of the transaction-kind bytes: what the sender's authorisation names. */
export function transactionKindHash(kindBytes: Uint8Array): string {
  return Buffer.from(blake2b(kindBytes, { dkLen: 32 })).toString("hex");
}

/** The personal message a sender signs to ask for sponsorship (UTF-8; each field on its own line). */
export function sponsorAuthMessage(sender: string, kindHash: string, timestamp: number, nonce: string): string {
  return `memrelay sponsor request\nsender: ${sender.toLowerCase()}\ntransaction kind: ${kindHash}\ntimestamp: ${timestamp}\nnonce: ${nonce.toLowerCase()}`;
}

const bad = (message: string) => new HttpError(400, message);

function base64Field(body: Record<string, unknown>, name: string, min: number, max: number): Uint8Array {
  const v = body[name];
  if (typeof v !== "string" || v.length === 0 || v.length > Math.ceil(max / 3) * 4 + 4 || !BASE64_RE.test(v)) throw bad(`${name} must be base64`);
  const bytes = Buffer.from(v, "base64");
  if (bytes.length < min || bytes.length > max) throw bad(`${name} must decode to ${min}..${max} bytes`);
  return new Uint8Array(bytes);
}

function sender(body: Record<string, unknown>): string {
  if (typeof body.sender !== "string" || !ADDRESS_RE.test(body.sender)) throw bad("sender must be 0x followed by 64 hex characters");
  return body.sender.toLowerCase();
}

/** Validates a /sponsor body; 400 with the field at fault. */
export function parseSponsorRequest(body: Record<string, unknown>): SponsorRequest {
  const who = sender(body);
  base64Field(body, "transactionBlockKindBytes", SPONSOR_LIMITS.kindBytesMin, SPONSOR_LIMITS.kindBytesMax);
  base64Field(body, "authSignature", 65, SPONSOR_LIMITS.signatureMaxBytes);
  const ts = body.authTimestamp;
  if (typeof ts !== "number" || !Number.isSafeInteger(ts) || ts <= 0) throw bad("authTimestamp must be Unix seconds (an integer)");
  if (typeof body.authNonce !== "string" || !UUID_V4_RE.test(body.authNonce)) throw bad("authNonce must be a UUID v4");
  return {
    sender: who,
    transactionBlockKindBytes: body.transactionBlockKindBytes as string,
    authTimestamp: ts,
    authNonce: body.authNonce.toLowerCase(),
    authSignature: body.authSignature as string,
  };
}

/** Validates a /sponsor/execute body; 400 with the field at fault. */
export function parseSponsorExecuteRequest(body: Record<string, unknown>): SponsorExecuteRequest {
  const who = sender(body);
  if (typeof body.digest !== "string" || !DIGEST_RE.test(body.digest)) throw bad("digest must be a transaction digest (base58)");
  base64Field(body, "signature", 65, SPONSOR_LIMITS.signatureMaxBytes);
  return { digest: body.digest, signature: body.signature as string, sender: who };
}
