// Sui transaction digests, shared by the real chain adapters and the local ledger: what a signature signs, and the
// digest a transaction is known by.
import { blake2b } from "@noble/hashes/blake2.js";
import { toBase58 } from "@mysten/sui/utils";

const encoder = new TextEncoder();
const TX_INTENT = new Uint8Array([0, 0, 0]);
const DIGEST_PREFIX = encoder.encode("TransactionData::");

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** What a Sui transaction signature signs: blake2b-256(intent [0,0,0] ‖ tx_bytes). */
export function signingDigest(txBytes: Uint8Array): Uint8Array {
  return blake2b(concat(TX_INTENT, txBytes), { dkLen: 32 });
}

/** The Sui transaction digest: blake2b-256("TransactionData::" ‖ tx_bytes), base58 in `txDigest`. */
export function txDigestBytes(txBytes: Uint8Array): Uint8Array {
  return blake2b(concat(DIGEST_PREFIX, txBytes), { dkLen: 32 });
}

export function txDigest(txBytes: Uint8Array): string {
  return toBase58(txDigestBytes(txBytes));
}
