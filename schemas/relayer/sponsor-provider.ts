// The sponsorship provider protocol (Mysten's Enoki, which the relayer uses when SPONSOR_API_KEY is set, and which the
// local stack serves on its ledger's RPC listener): `POST {base}/v1/transaction-blocks/sponsor` with a Bearer API key
// and {network, transactionBlockKindBytes, sender, allowedMoveCallTargets?, allowedAddresses?} → {data: {bytes, digest}};
// then `POST {base}/v1/transaction-blocks/sponsor/{digest}` with {signature} → {data: {digest}}. Refusals are
// {errors: [{code, message}]}; a sponsored transaction that expired before execution is code `expired`.
import { HttpError } from "../http-error.ts";
import { SPONSOR_LIMITS } from "./sponsor.ts";

/** Enoki's public API (its client appends /v1/…): SPONSOR_API_URL's default. */
export const ENOKI_API_URL = "https://api.enoki.mystenlabs.com";

export const PROVIDER_PATHS = {
  sponsor: "/v1/transaction-blocks/sponsor",
  /** `${sponsor}/{digest}` executes. */
  executePrefix: "/v1/transaction-blocks/sponsor/",
} as const;

/** Error codes of the protocol's `{errors: [{code, message}]}` bodies. */
export const PROVIDER_ERRORS = {
  expired: "expired",
  invalidApiKey: "invalid_api_key",
  invalidRequest: "invalid_request",
  forbiddenTarget: "move_call_target_not_allowed",
  notFound: "not_found",
  alreadyExecuted: "already_executed",
  invalidSignature: "invalid_signature",
  transactionFailed: "transaction_failed",
  unavailable: "unavailable",
} as const;

export type ProviderErrorCode = (typeof PROVIDER_ERRORS)[keyof typeof PROVIDER_ERRORS];

export interface ProviderSponsorBody {
  readonly network: string;
  /** base64 BCS TransactionKind */
  readonly transactionBlockKindBytes: string;
  readonly sender: string;
  /** `package::module::function` targets every MoveCall must be one of, when given. */
  readonly allowedMoveCallTargets?: readonly string[];
  readonly allowedAddresses?: readonly string[];
}

const ADDRESS_RE = /^0x[0-9a-fA-F]{64}$/;
const TARGET_RE = /^0x[0-9a-fA-F]{1,64}::[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*$/;
const BASE64_RE = /^[A-Za-z0-9+/]+={0,2}$/;
export const PROVIDER_DIGEST_RE = /^[1-9A-HJ-NP-Za-km-z]{43,44}$/;

export const providerRefusal = (status: number, code: ProviderErrorCode, message: string) => new HttpError(status, message, { code });

function stringList(body: Record<string, unknown>, name: string, re: RegExp, what: string): readonly string[] | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length > 64 || v.some((x) => typeof x !== "string" || !re.test(x))) {
    throw providerRefusal(400, PROVIDER_ERRORS.invalidRequest, `${name} must be a list of at most 64 ${what}`);
  }
  return v as string[];
}

/** Validates a sponsor request body; 400 `invalid_request` naming the field at fault. */
export function parseProviderSponsorBody(body: Record<string, unknown>): ProviderSponsorBody {
  const bad = (m: string) => providerRefusal(400, PROVIDER_ERRORS.invalidRequest, m);
  if (typeof body.network !== "string" || !/^[a-z0-9-]{1,32}$/.test(body.network)) throw bad("network must be a network name");
  if (typeof body.sender !== "string" || !ADDRESS_RE.test(body.sender)) throw bad("sender must be 0x followed by 64 hex characters");
  const kind = body.transactionBlockKindBytes;
  if (typeof kind !== "string" || !BASE64_RE.test(kind) || kind.length > Math.ceil(SPONSOR_LIMITS.kindBytesMax / 3) * 4 + 4) {
    throw bad("transactionBlockKindBytes must be base64 TransactionKind bytes");
  }
  return {
    network: body.network,
    transactionBlockKindBytes: kind,
    sender: body.sender.toLowerCase(),
    allowedMoveCallTargets: stringList(body, "allowedMoveCallTargets", TARGET_RE, "package::module::function targets"),
    allowedAddresses: stringList(body, "allowedAddresses", ADDRESS_RE, "addresses"),
  };
}
