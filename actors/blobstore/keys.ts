// Credentials of the blob storage service: admin keys and data API keys (32 random bytes, 64 lowercase hex,
// stored only as BLAKE2s-256 of the hex string as oyster does, first 8 characters as the prefix), S3-style access
// keys (an id and a 40-hex secret, the secret stored as a hash plus sealed under the master key for SigV4), the
// bearer parser and the constant-time comparison.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, randomInt, timingSafeEqual } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

export const KEY_HEX_LENGTH = 64;
export const PREFIX_LENGTH = 8;

export interface NewSecret {
  readonly secret: string;
  readonly hash: string;
  readonly prefix: string;
}

export function hashSecret(secret: string): string {
  return createHash("blake2s256").update(secret, "utf8").digest("hex");
}

export function newKeySecret(): NewSecret {
  const secret = randomBytes(32).toString("hex");
  return { secret, hash: hashSecret(secret), prefix: secret.slice(0, PREFIX_LENGTH) };
}

export type BearerResult = { ok: true; secret: string } | { ok: false; reason: "missing" | "malformed" };

/** `Authorization: Bearer <64 hex>`; hex is case-normalised so that one key has one hash. */
export function parseBearer(header: string | undefined): BearerResult {
  if (!header) return { ok: false, reason: "missing" };
  const m = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (!m) return { ok: false, reason: "malformed" };
  const token = m[1];
  if (token.length !== KEY_HEX_LENGTH || !/^[0-9a-fA-F]+$/.test(token)) return { ok: false, reason: "malformed" };
  return { ok: true, secret: token.toLowerCase() };
}

/** Compares two lowercase hex hashes in constant time. */
export function hashesEqual(a: string, b: string): boolean {
  const ba = Buffer.from(a, "hex");
  const bb = Buffer.from(b, "hex");
  return ba.length === bb.length && ba.length > 0 && timingSafeEqual(ba, bb);
}

// ------------------------------------------------------------------ S3-style access keys

const ACCESS_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

export function newAccessKeyId(): string {
  let s = "MRAK";
  for (let i = 0; i < 16; i++) s += ACCESS_ALPHABET[randomInt(ACCESS_ALPHABET.length)];
  return s;
}

export function newAccessSecret(): string {
  return randomBytes(20).toString("hex");
}

/** The master key seals S3 secrets (a SigV4 verifier needs the secret itself, not a hash). */
export class MasterKey {
  private constructor(private readonly key: Buffer) {}

  static fromHex(hex: string): MasterKey {
    if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new Error("the blobstore master key must be 64 hex characters");
    return new MasterKey(Buffer.from(hex, "hex"));
  }

  /** Reads the key file, creating it (mode 0600) with a random key on first use. */
  static fromFile(path: string): MasterKey {
    if (!existsSync(path)) {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      writeFileSync(path, randomBytes(32).toString("hex") + "\n", { mode: 0o600, flag: "wx" });
    }
    return MasterKey.fromHex(readFileSync(path, "utf8").trim());
  }

  /** A 32-byte key for one purpose (HKDF-SHA256), e.g. an account's wallet seed. */
  derive(purpose: string, info: string): Uint8Array {
    return new Uint8Array(hkdfSync("sha256", this.key, purpose, info, 32));
  }

  seal(plaintext: string, aad: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv("aes-256-gcm", this.key, iv);
    c.setAAD(Buffer.from(aad));
    const ct = Buffer.concat([c.update(plaintext, "utf8"), c.final()]);
    return "v1." + Buffer.concat([iv, ct, c.getAuthTag()]).toString("base64url");
  }

  open(sealed: string, aad: string): string {
    if (!sealed.startsWith("v1.")) throw new Error("unknown sealed secret version");
    const raw = Buffer.from(sealed.slice(3), "base64url");
    const d = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, 12));
    d.setAAD(Buffer.from(aad));
    d.setAuthTag(raw.subarray(raw.length - 16));
    return Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]).toString("utf8");
  }
}
