// Building, signing and verifying local-ledger transactions. Signatures follow Sui: Ed25519 over
// blake2b-256(intent [0,0,0] ‖ tx_bytes), serialized as flag ‖ sig ‖ pk; so `Ed25519Keypair.signTransaction(tx_bytes)`
// from @mysten/sui produces a valid signature too. The digest is base58(blake2b-256("TransactionData::" ‖ tx_bytes)).
import { randomBytes } from "node:crypto";
import { blake2b } from "@noble/hashes/blake2.js";
import { toBase58 } from "@mysten/sui/utils";
import { keypairFromSecret, parseSerializedSignature, suiAddressOf, toSerializedSignature, verifyEd25519, type SecretKeyInput, isAddress } from "./keys.ts";
import type { TxArgs, TxBody, TxKind } from "./model.ts";
import type { SignedTx } from "../../../schemas/chain.ts";
import { CONSOLE_TX_KINDS } from "./console-model.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });
const TX_INTENT = new Uint8Array([0, 0, 0]);
const DIGEST_PREFIX = encoder.encode("TransactionData::");
const TX_KINDS: ReadonlySet<string> = new Set<TxKind>([
  "genesis",
  "create_account",
  "add_delegate_key",
  "remove_delegate_key",
  "deactivate_account",
  "reactivate_account",
  "record_blob",
  "transfer",
  "mint",
  "put_object",
  ...CONSOLE_TX_KINDS,
]);
const MAX_TX_BYTES = 256 * 1024;

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

export function signingDigest(txBytes: Uint8Array): Uint8Array {
  return blake2b(concat(TX_INTENT, txBytes), { dkLen: 32 });
}

export function txDigestBytes(txBytes: Uint8Array): Uint8Array {
  return blake2b(concat(DIGEST_PREFIX, txBytes), { dkLen: 32 });
}

export function txDigest(txBytes: Uint8Array): string {
  return toBase58(txDigestBytes(txBytes));
}

export interface BuildTxInput<K extends TxKind> {
  readonly chain: string;
  readonly kind: K;
  readonly args: TxArgs[K];
  /** The sender's secret key; the sender address is derived from it. */
  readonly sender: SecretKeyInput;
  /** Sponsor paying the gas; co-signs. */
  readonly gasOwner?: SecretKeyInput;
  readonly nonce?: string;
  readonly timestampMs?: number;
}

/** Builds and signs a transaction with the sender (and sponsor) keys. */
export function buildSignedTx<K extends TxKind>(input: BuildTxInput<K>): SignedTx {
  const sender = keypairFromSecret(input.sender);
  const sponsor = input.gasOwner === undefined ? undefined : keypairFromSecret(input.gasOwner);
  const body: TxBody<K> = {
    v: 1,
    chain: input.chain,
    kind: input.kind,
    sender: sender.address,
    ...(sponsor && sponsor.address !== sender.address ? { gas_owner: sponsor.address } : {}),
    nonce: input.nonce ?? randomBytes(16).toString("hex"),
    timestamp_ms: input.timestampMs ?? Date.now(),
    args: input.args,
  };
  const txBytes = encoder.encode(JSON.stringify(body));
  const digest = signingDigest(txBytes);
  const signers = sponsor && sponsor.address !== sender.address ? [sender, sponsor] : [sender];
  return {
    tx_bytes: Buffer.from(txBytes).toString("base64"),
    signatures: signers.map((k) => toSerializedSignature(k.sign(digest), k.publicKey)),
  };
}

export interface VerifiedTx {
  readonly body: TxBody;
  readonly digest: string;
  readonly digestBytes: Uint8Array;
  /** Addresses that signed, with their public keys (hex). */
  readonly signers: ReadonlyMap<string, string>;
  /** Who pays the gas. */
  readonly gasOwner: string;
}

export type VerifyFailure = { readonly kind: "invalid" | "forbidden"; readonly message: string };

/** Decodes the body and checks every signature and that sender and gas owner signed. Pure apart from the clock. */
export function verifySignedTx(tx: SignedTx, chain: string, now: number, maxSkewMs: number): VerifiedTx | VerifyFailure {
  if (!tx || typeof tx.tx_bytes !== "string" || !Array.isArray(tx.signatures)) return { kind: "invalid", message: "malformed transaction" };
  const txBytes = new Uint8Array(Buffer.from(tx.tx_bytes, "base64"));
  if (txBytes.length === 0 || txBytes.length > MAX_TX_BYTES) return { kind: "invalid", message: "transaction bytes empty or too large" };
  let body: TxBody;
  try {
    body = JSON.parse(decoder.decode(txBytes)) as TxBody;
  } catch {
    return { kind: "invalid", message: "transaction bytes are not JSON" };
  }
  if (typeof body !== "object" || body === null || body.v !== 1) return { kind: "invalid", message: "unsupported transaction version" };
  if (body.chain !== chain) return { kind: "invalid", message: `transaction is for chain ${String(body.chain)}, not ${chain}` };
  if (!TX_KINDS.has(body.kind)) return { kind: "invalid", message: "unknown transaction kind" };
  if (!isAddress(body.sender)) return { kind: "invalid", message: "sender is not an address" };
  if (body.gas_owner !== undefined && (!isAddress(body.gas_owner) || body.gas_owner === body.sender)) {
    return { kind: "invalid", message: "gas_owner must be another address" };
  }
  if (typeof body.nonce !== "string" || body.nonce.length === 0 || body.nonce.length > 128) return { kind: "invalid", message: "bad nonce" };
  if (!Number.isSafeInteger(body.timestamp_ms) || Math.abs(now - body.timestamp_ms) > maxSkewMs) {
    return { kind: "invalid", message: "transaction timestamp outside the accepted window" };
  }
  if (typeof body.args !== "object" || body.args === null || Array.isArray(body.args)) return { kind: "invalid", message: "args must be an object" };
  if (tx.signatures.length === 0 || tx.signatures.length > 2) return { kind: "invalid", message: "one or two signatures expected" };
  const digest = signingDigest(txBytes);
  const signers = new Map<string, string>();
  for (const serialized of tx.signatures) {
    const parsed = parseSerializedSignature(serialized);
    if (!parsed) return { kind: "invalid", message: "signature is not a Sui Ed25519 signature" };
    if (!verifyEd25519(parsed.publicKey, digest, parsed.signature)) return { kind: "forbidden", message: "invalid signature" };
    signers.set(suiAddressOf(parsed.publicKey), Buffer.from(parsed.publicKey).toString("hex"));
  }
  if (!signers.has(body.sender)) return { kind: "forbidden", message: "transaction not signed by its sender" };
  const gasOwner = body.gas_owner ?? body.sender;
  if (!signers.has(gasOwner)) return { kind: "forbidden", message: "transaction not signed by its gas owner" };
  if (signers.size !== tx.signatures.length) return { kind: "invalid", message: "duplicate signature" };
  for (const addr of signers.keys()) {
    if (addr !== body.sender && addr !== gasOwner) return { kind: "invalid", message: "unexpected extra signature" };
  }
  const digestBytes = txDigestBytes(txBytes);
  return { body, digest: toBase58(digestBytes), digestBytes, signers, gasOwner };
}

export function isVerifyFailure(v: VerifiedTx | VerifyFailure): v is VerifyFailure {
  return "message" in v && !("body" in v);
}

/** Sui object id derivation: blake2b-256(0xf1 ‖ tx digest ‖ u64 LE creation number). */
export function deriveObjectId(digestBytes: Uint8Array, creationNum: number): string {
  const input = new Uint8Array(1 + 32 + 8);
  input[0] = 0xf1;
  input.set(digestBytes, 1);
  new DataView(input.buffer).setBigUint64(33, BigInt(creationNum), true);
  return "0x" + Buffer.from(blake2b(input, { dkLen: 32 })).toString("hex");
}
