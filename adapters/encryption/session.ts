// Client side of relayer-managed decryption: create a Seal SessionKey signed by a delegate key and export it as the
// `x-encryption-session` header value (base64 of the JSON export {address, packageId, mvrName, creationTimeMs,
// ttlMin, personalMessageSignature, sessionKey}), and the inverse used by the relayer.

import { SessionKey, type ExportedSessionKey, type SealCompatibleClient } from "@mysten/seal";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { isValidSuiAddress, normalizeSuiAddress } from "@mysten/sui/utils";
import { suiNodeClient, transportOf } from "../chain/sui-rpc/node-client.ts";

/** Default lifetime of an exported session (minutes), as MemWal's clients use. */
export const DEFAULT_SESSION_TTL_MIN = 5;

/** Accepts a 32-byte Ed25519 seed as bytes, hex (optionally 0x-prefixed) or a `suiprivkey1…` string. */
export function delegateKeypair(secret: Uint8Array | string): Ed25519Keypair {
  if (typeof secret !== "string") {
    if (secret.length !== 32) throw new Error("delegate secret key must be 32 bytes");
    return Ed25519Keypair.fromSecretKey(secret);
  }
  const s = secret.trim();
  if (s.startsWith("suiprivkey")) return Ed25519Keypair.fromSecretKey(s);
  const hex = s.startsWith("0x") || s.startsWith("0X") ? s.slice(2) : s;
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new Error("delegate secret key must be 32 bytes of hex or a suiprivkey string");
  return Ed25519Keypair.fromSecretKey(new Uint8Array(Buffer.from(hex, "hex")));
}

/** A JSON-RPC Sui client for a chain URL (the local chain's CHAIN_RPC_URL, or a full node). */
export function suiClientFor(rpcUrl: string, network = "localnet"): SuiJsonRpcClient {
  return new SuiJsonRpcClient({ url: rpcUrl, network });
}

/** Serializes a session for the `x-encryption-session` header. The session must already carry its signature. */
export function encodeSessionHeader(session: SessionKey): string {
  // export() returns an object whose toJSON throws (to stop accidental logging); copy its enumerable fields.
  const e = { ...session.export() };
  if (!e.personalMessageSignature) throw new Error("session has no personal message signature yet");
  return Buffer.from(JSON.stringify(e), "utf8").toString("base64");
}

/** Parses an `x-encryption-session` header value; throws on anything that is not a well-formed export. */
export function decodeSessionHeader(header: string): ExportedSessionKey {
  if (typeof header !== "string" || header.length === 0 || header.length > 8192) throw new Error("malformed session");
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
  } catch {
    throw new Error("malformed session");
  }
  const o = v as Record<string, unknown>;
  if (
    !o ||
    typeof o !== "object" ||
    typeof o.address !== "string" ||
    !isValidSuiAddress(normalizeSuiAddress(o.address)) ||
    typeof o.packageId !== "string" ||
    !isValidSuiAddress(normalizeSuiAddress(o.packageId)) ||
    (o.mvrName !== undefined && o.mvrName !== null && typeof o.mvrName !== "string") ||
    typeof o.creationTimeMs !== "number" ||
    !Number.isSafeInteger(o.creationTimeMs) ||
    typeof o.ttlMin !== "number" ||
    !Number.isInteger(o.ttlMin) ||
    typeof o.personalMessageSignature !== "string" ||
    typeof o.sessionKey !== "string"
  ) {
    throw new Error("malformed session");
  }
  return {
    address: o.address,
    packageId: o.packageId,
    mvrName: (o.mvrName as string | undefined) ?? undefined,
    creationTimeMs: o.creationTimeMs,
    ttlMin: o.ttlMin,
    personalMessageSignature: o.personalMessageSignature,
    sessionKey: o.sessionKey,
  };
}

export interface CreatedSession {
  readonly session: SessionKey;
  /** Value for the `x-encryption-session` header. */
  readonly header: string;
  /** The delegate's Sui address (the session's user). */
  readonly address: string;
  /** When the SDK starts treating the session as expired (creation + ttl − 10 s). */
  readonly expiresAtMs: number;
}

/**
 * Creates a SessionKey for `packageId` signed by the delegate key, and its header export. Reads the package object
 * through the Sui client (SessionKey.create requires version 1), so `grpcUrl` (the node's gRPC API, preferred),
 * `rpcUrl` (its JSON-RPC) or `suiClient` must reach the chain.
 */
export async function createDelegateSession(opts: {
  delegateSecretKey: Uint8Array | string;
  packageId: string;
  rpcUrl?: string;
  grpcUrl?: string;
  suiClient?: SealCompatibleClient;
  ttlMin?: number;
}): Promise<CreatedSession> {
  const keypair = delegateKeypair(opts.delegateSecretKey);
  const suiClient = opts.suiClient ?? (transportOf(opts) ? suiNodeClient({ grpcUrl: opts.grpcUrl, rpcUrl: opts.rpcUrl, network: "localnet" }).client : undefined);
  if (!suiClient) throw new Error("grpcUrl, rpcUrl or suiClient required");
  const address = keypair.toSuiAddress();
  const ttlMin = opts.ttlMin ?? DEFAULT_SESSION_TTL_MIN;
  const session = await SessionKey.create({ address, packageId: normalizeSuiAddress(opts.packageId), ttlMin, signer: keypair, suiClient });
  await session.getCertificate(); // signs the personal message now, so the export carries the signature
  const exported = session.export();
  return { session, header: encodeSessionHeader(session), address, expiresAtMs: exported.creationTimeMs + exported.ttlMin * 60_000 - 10_000 };
}
