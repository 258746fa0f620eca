// The memory blob format of the envelope encryption (adapters/encryption/envelope.ts): each blob is self-contained,
// carrying the Seal-encrypted data key it was encrypted under.
//
// Blob layout (version 1):
//   0      2  magic "MR"
//   2      1  version = 1
//   3      1  flags = 0
//   4     32  owner address
//   36    16  key id
//   52     2  length L of the sealed data key (u16 BE)
//   54     L  Seal EncryptedObject (BCS) of the data key, identity owner ‖ key id
//   54+L  12  AES-GCM nonce
//   66+L   …  AES-256-GCM ciphertext ‖ 16-byte tag; AAD = bytes [0, 54+L)

import { normalizeSuiAddress } from "@mysten/sui/utils";

export const ENVELOPE_VERSION = 1;
const MAGIC0 = 0x4d; // "M"
const MAGIC1 = 0x52; // "R"
export const KEY_ID_LEN = 16;
export const NONCE_LEN = 12;
export const TAG_LEN = 16;
const FIXED = 54;

export interface EnvelopeHeader {
  readonly version: number;
  /** Normalized owner address. */
  readonly owner: string;
  readonly keyId: Uint8Array;
  /** Hex of the Seal inner identity owner ‖ key id (without the package prefix). */
  readonly identity: string;
  readonly sealedKey: Uint8Array;
  readonly nonce: Uint8Array;
  /** Ciphertext followed by the GCM tag. */
  readonly ciphertext: Uint8Array;
  /** The authenticated header bytes [0, 54+L). */
  readonly aad: Uint8Array;
}

/** Splits a memory blob into its parts; throws on anything malformed. */
export function parseEnvelope(bytes: Uint8Array): EnvelopeHeader {
  if (bytes.length < FIXED + NONCE_LEN + TAG_LEN) throw new Error("envelope too short");
  if (bytes[0] !== MAGIC0 || bytes[1] !== MAGIC1) throw new Error("not a memrelay envelope");
  if (bytes[2] !== ENVELOPE_VERSION) throw new Error(`unsupported envelope version ${bytes[2]}`);
  if (bytes[3] !== 0) throw new Error("unsupported envelope flags");
  const ownerBytes = bytes.subarray(4, 36);
  const keyId = bytes.subarray(36, 36 + KEY_ID_LEN);
  const len = (bytes[52]! << 8) | bytes[53]!;
  const headerEnd = FIXED + len;
  if (len === 0 || bytes.length < headerEnd + NONCE_LEN + TAG_LEN) throw new Error("envelope truncated");
  return {
    version: bytes[2]!,
    owner: normalizeSuiAddress(Buffer.from(ownerBytes).toString("hex")),
    keyId,
    identity: Buffer.from(bytes.subarray(4, 36 + KEY_ID_LEN)).toString("hex"),
    sealedKey: bytes.subarray(FIXED, headerEnd),
    nonce: bytes.subarray(headerEnd, headerEnd + NONCE_LEN),
    ciphertext: bytes.subarray(headerEnd + NONCE_LEN),
    aad: bytes.subarray(0, headerEnd),
  };
}

export function buildHeader(owner: string, keyId: Uint8Array, sealed: Uint8Array): Uint8Array {
  if (sealed.length > 0xffff) throw new Error("sealed data key too large");
  const h = new Uint8Array(FIXED + sealed.length);
  h[0] = MAGIC0;
  h[1] = MAGIC1;
  h[2] = ENVELOPE_VERSION;
  h[3] = 0;
  h.set(Buffer.from(owner.slice(2), "hex"), 4);
  h.set(keyId, 36);
  h[52] = sealed.length >> 8;
  h[53] = sealed.length & 0xff;
  h.set(sealed, FIXED);
  return h;
}
