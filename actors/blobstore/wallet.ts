// The account's wallet (oyster's Pearl model, done locally): an Ed25519 key derived on demand from the service
// master key with HKDF-SHA256 and the account id, never stored; its Sui address is BLAKE2b-256(0x00 || public key).
// Balances live on the chain port, not here.
import { ed25519 } from "@noble/curves/ed25519.js";
import { blake2b } from "@noble/hashes/blake2.js";
import type { MasterKey } from "./keys.ts";

export function deriveWalletAddress(master: MasterKey, accountId: string): string {
  const pub = ed25519.getPublicKey(master.derive("memrelay-blobstore-wallet", accountId));
  const flagged = new Uint8Array(33);
  flagged.set(pub, 1);
  return "0x" + Buffer.from(blake2b(flagged, { dkLen: 32 })).toString("hex");
}
