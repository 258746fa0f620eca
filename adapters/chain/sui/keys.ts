// Sui Ed25519 keys, shared by the real chain adapters and the local ledger: native node:crypto signing/verification,
// Sui-exact addresses and signatures.
// A Sui serialized signature is base64(flag 0x00 ‖ signature(64) ‖ public key(32)); an address is
// blake2b-256(0x00 ‖ public key) as 0x + 64 hex (Ed25519PublicKey.toSuiAddress()).
import { createPrivateKey, createPublicKey, sign as nodeSign, verify as nodeVerify, randomBytes, type KeyObject } from "node:crypto";
import { Ed25519PublicKey } from "@mysten/sui/keypairs/ed25519";
import { decodeSuiPrivateKey } from "@mysten/sui/cryptography";
import { blake2b } from "@noble/hashes/blake2.js";

const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
/** DER prefix of an Ed25519 public key in SPKI form (the 32 raw bytes follow). */
export const SPKI_ED25519_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const ED25519_FLAG = 0x00;

/** A secret key as 32 raw seed bytes, 64 bytes (seed ‖ public key), 64 hex characters, or a `suiprivkey1…` string. */
export type SecretKeyInput = Uint8Array | string;

export interface ChainKeypair {
  readonly publicKey: Uint8Array;
  readonly publicKeyHex: string;
  readonly address: string;
  /** Pure Ed25519 signature over `message`. */
  sign(message: Uint8Array): Uint8Array;
}

export const ADDRESS_RE = /^0x[0-9a-f]{64}$/;
export const PUBLIC_KEY_HEX_RE = /^[0-9a-f]{64}$/;

export function isAddress(s: unknown): s is string {
  return typeof s === "string" && ADDRESS_RE.test(s);
}

/** Lower-cases an address or object id; returns null if it is not `0x` + 64 hex. */
export function normalizeAddress(s: string): string | null {
  const lower = s.toLowerCase();
  return ADDRESS_RE.test(lower) ? lower : null;
}

export function seedOf(secret: SecretKeyInput): Uint8Array {
  if (typeof secret === "string") {
    if (secret.startsWith("suiprivkey")) {
      const parsed = decodeSuiPrivateKey(secret);
      if (parsed.scheme !== "ED25519") throw new Error("only ED25519 keys are supported");
      return parsed.secretKey;
    }
    if (/^(0x)?[0-9a-fA-F]{64}$/.test(secret)) return Buffer.from(secret.replace(/^0x/, ""), "hex");
    throw new Error("secret key must be 32 bytes as hex or a suiprivkey string");
  }
  if (secret.length === 32) return secret;
  if (secret.length === 64) return secret.subarray(0, 32);
  throw new Error(`secret key must be 32 or 64 bytes, got ${secret.length}`);
}

export function suiAddressOf(publicKey: Uint8Array): string {
  return new Ed25519PublicKey(publicKey).toSuiAddress();
}

/** Derived keypairs by a hash of their seed: deriving one from DER costs about a millisecond. */
const keypairCache = new Map<string, ChainKeypair>();
const KEYPAIR_CACHE_MAX = 256;

export function keypairFromSecret(secret: SecretKeyInput): ChainKeypair {
  const seed = seedOf(secret);
  const id = Buffer.from(blake2b(seed, { dkLen: 16 })).toString("hex");
  const hit = keypairCache.get(id);
  if (hit) return hit;
  const kp = deriveKeypair(seed);
  if (keypairCache.size >= KEYPAIR_CACHE_MAX) keypairCache.delete(keypairCache.keys().next().value as string);
  keypairCache.set(id, kp);
  return kp;
}

function deriveKeypair(seed: Uint8Array): ChainKeypair {
  const priv = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: "der", type: "pkcs8" });
  const publicKey = new Uint8Array(createPublicKey(priv).export({ format: "der", type: "spki" }).subarray(12));
  return {
    publicKey,
    publicKeyHex: Buffer.from(publicKey).toString("hex"),
    address: suiAddressOf(publicKey),
    sign: (message) => new Uint8Array(nodeSign(null, message, priv)),
  };
}

/** A fresh random keypair and its 32-byte seed. */
export function generateKeypair(): { secretKey: Uint8Array; keypair: ChainKeypair } {
  const secretKey = new Uint8Array(randomBytes(32));
  return { secretKey, keypair: keypairFromSecret(secretKey) };
}

const publicKeyObjects = new Map<string, KeyObject>();

function publicKeyObject(publicKey: Uint8Array): KeyObject {
  const hex = Buffer.from(publicKey).toString("hex");
  let key = publicKeyObjects.get(hex);
  if (!key) {
    key = createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, publicKey]), format: "der", type: "spki" });
    if (publicKeyObjects.size > 10_000) publicKeyObjects.clear();
    publicKeyObjects.set(hex, key);
  }
  return key;
}

export function verifyEd25519(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  try {
    return nodeVerify(null, message, publicKeyObject(publicKey), signature);
  } catch {
    return false;
  }
}

export function toSerializedSignature(signature: Uint8Array, publicKey: Uint8Array): string {
  const out = new Uint8Array(97);
  out[0] = ED25519_FLAG;
  out.set(signature, 1);
  out.set(publicKey, 65);
  return Buffer.from(out).toString("base64");
}

export function parseSerializedSignature(serialized: string): { signature: Uint8Array; publicKey: Uint8Array } | null {
  if (typeof serialized !== "string" || serialized.length > 200) return null;
  const raw = Buffer.from(serialized, "base64");
  if (raw.length !== 97 || raw[0] !== ED25519_FLAG) return null;
  return { signature: new Uint8Array(raw.subarray(1, 65)), publicKey: new Uint8Array(raw.subarray(65)) };
}
