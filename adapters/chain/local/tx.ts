// Building, signing and verifying local-ledger transactions. The bytes are Sui `TransactionData` (transaction-data.ts);
// signatures follow Sui: Ed25519 over blake2b-256(intent [0,0,0] ‖ tx_bytes), serialized as flag ‖ sig ‖ pk, so
// `Ed25519Keypair.signTransaction(tx_bytes)` from @mysten/sui produces a valid signature too. The digest is the Sui
// transaction digest, base58(blake2b-256("TransactionData::" ‖ tx_bytes)).
import { createHash, randomBytes } from "node:crypto";
import { blake2b } from "@noble/hashes/blake2.js";
import { toBase58 } from "@mysten/sui/utils";
import { signingDigest, txDigestBytes } from "../sui/digest.ts";
import { keypairFromSecret, parseSerializedSignature, suiAddressOf, toSerializedSignature, verifyEd25519, type SecretKeyInput } from "../sui/keys.ts";
import type { CallKind, TxArgs, TxBody } from "./model.ts";
import { TX_CLOCK_SKEW_MS } from "../sui/transaction-envelope.ts";
import type { SignedTx } from "../../../schemas/chain.ts";
import { decodeTransactionData, encodeTransactionData } from "./transaction-data.ts";
import { TX_EXPIRED, type ChainTarget } from "../../../schemas/chain.ts";

const MAX_TX_BYTES = 256 * 1024;

export interface UnsignedTxInput<K extends CallKind> {
  readonly target: ChainTarget;
  readonly kind: K;
  readonly args: TxArgs[K];
  readonly sender: string;
  /** Pays the gas when it is not the sender. */
  readonly gasOwner?: string;
  /** Build time; the transaction is valid TX_CLOCK_SKEW_MS either side of it. */
  readonly timestampMs?: number;
}

/** The body of one ledger transaction: a fresh nonce, valid TX_CLOCK_SKEW_MS either side of its build time. */
export function txBody<K extends CallKind>(input: UnsignedTxInput<K>): TxBody<K> {
  const at = input.timestampMs ?? Date.now();
  return {
    chain: input.target.network,
    kind: input.kind,
    sender: input.sender,
    ...(input.gasOwner && input.gasOwner !== input.sender ? { gas_owner: input.gasOwner } : {}),
    nonce: randomBytes(4).readUInt32LE(0),
    valid_from_ms: at - TX_CLOCK_SKEW_MS,
    valid_until_ms: at + TX_CLOCK_SKEW_MS,
    args: input.args,
  };
}

/** The `TransactionData` bytes of one ledger transaction, unsigned. Throws when the args cannot be encoded. */
export function buildTransactionBytes<K extends CallKind>(input: UnsignedTxInput<K>): Uint8Array {
  return encodeTransactionData(txBody(input), input.target);
}

export interface BuildTxInput<K extends CallKind> extends Omit<UnsignedTxInput<K>, "sender" | "gasOwner"> {
  /** The sender's secret key; the sender address is derived from it. */
  readonly sender: SecretKeyInput;
  /** Sponsor paying the gas; co-signs. */
  readonly gasOwner?: SecretKeyInput;
}

/** Builds and signs a transaction with the sender (and sponsor) keys. */
export function buildSignedTx<K extends CallKind>(input: BuildTxInput<K>): SignedTx {
  const sender = keypairFromSecret(input.sender);
  const sponsor = input.gasOwner === undefined ? undefined : keypairFromSecret(input.gasOwner);
  const txBytes = buildTransactionBytes({ ...input, sender: sender.address, gasOwner: sponsor?.address });
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

export type VerifyFailure = { readonly kind: "invalid" | "forbidden"; readonly message: string; readonly badSignature?: true };

/**
 * Decodes the `TransactionData` and checks it the way a validator does: inside its validity window, every signature
 * over the intent message, signed by the sender and by the gas owner, nobody else. Pure apart from the clock.
 */
export function verifySignedTx(tx: SignedTx, target: ChainTarget, now: number): VerifiedTx | VerifyFailure {
  if (!tx || typeof tx.tx_bytes !== "string" || !Array.isArray(tx.signatures)) return { kind: "invalid", message: "malformed transaction" };
  const txBytes = new Uint8Array(Buffer.from(tx.tx_bytes, "base64"));
  if (txBytes.length === 0 || txBytes.length > MAX_TX_BYTES) return { kind: "invalid", message: "transaction bytes empty or too large" };
  const decoded = decodeTransactionData(txBytes, target);
  if ("error" in decoded) return { kind: "invalid", message: decoded.error };
  const { body } = decoded;
  if (now < body.valid_from_ms) return { kind: "invalid", message: "transaction is outside its validity window (not valid yet)" };
  // Its own words: a sponsor re-sponsors an expired transaction rather than giving up (adapters/sponsor/).
  if (now > body.valid_until_ms) return { kind: "invalid", message: `${TX_EXPIRED}: past the end of its ValidDuring window` };
  if (tx.signatures.length === 0 || tx.signatures.length > 2) return { kind: "invalid", message: "one or two signatures expected" };
  const digest = signingDigest(txBytes);
  const signers = new Map<string, string>();
  for (const serialized of tx.signatures) {
    const parsed = parseSerializedSignature(serialized);
    if (!parsed) return { kind: "invalid", message: "signature is not a Sui Ed25519 signature" };
    if (!verifyEd25519(parsed.publicKey, digest, parsed.signature)) return { kind: "forbidden", message: "invalid signature", badSignature: true };
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

/**
 * A transaction of the ledger's own process, built from `body`, signed by `sender`, with what verifySignedTx would make
 * of it: the process has just encoded and signed these bytes, so checking its own signature and decoding its own
 * encoding again would only repeat work (about 8 % of the actor host's CPU in the peer bench's profile). `body` must be what
 * decoding the bytes gives back, i.e. canonical arguments (checked for record_blob by the codec's tests).
 */
export function signOwnTransaction(body: TxBody<CallKind>, target: ChainTarget, sender: SecretKeyInput): { tx: SignedTx; vtx: VerifiedTx } {
  const key = keypairFromSecret(sender);
  if (body.sender !== key.address || body.gas_owner !== undefined) throw new Error("an own transaction is sent and paid for by its signer");
  const txBytes = encodeTransactionData(body, target);
  const tx = { tx_bytes: Buffer.from(txBytes).toString("base64"), signatures: [toSerializedSignature(key.sign(signingDigest(txBytes)), key.publicKey)] };
  const digestBytes = txDigestBytes(txBytes);
  return { tx, vtx: { body, digest: toBase58(digestBytes), digestBytes, signers: new Map([[key.address, key.publicKeyHex]]), gasOwner: key.address } };
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

/**
 * Id of the memory blob object an owner records for a blob id, derived from the registry like Sui's derived objects
 * (a hash of the parent and the key), so the ledger finds a recorded blob by (owner, blob id) at its object. Node's
 * native BLAKE2b, truncated to 32 bytes: it runs several times per recorded blob.
 */
export function deriveBlobObjectId(registryId: string, owner: string, blobId: string): string {
  return "0x" + createHash("blake2b512").update(`memrelay::blob\u0000${registryId}\u0000${owner}\u0000${blobId}`).digest("hex").slice(0, 64);
}
