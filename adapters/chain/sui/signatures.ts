// Sui transaction signatures the real adapters and the local ledger both check or add: a sender's signature over
// exactly the given bytes, and a sponsor's beside it.
import { keypairFromSecret, parseSerializedSignature, suiAddressOf, toSerializedSignature, verifyEd25519, type SecretKeyInput } from "./keys.ts";
import { signingDigest } from "./digest.ts";
import type { SignedTx } from "../../../schemas/chain.ts";

/** true when `signature` is a Sui Ed25519 signature of exactly `bytes` by `address`. */
export function verifySenderSignature(bytes: string, signature: string, address: string): boolean {
  const parsed = parseSerializedSignature(signature);
  if (!parsed) return false;
  if (suiAddressOf(parsed.publicKey) !== address) return false;
  return verifyEd25519(parsed.publicKey, signingDigest(Buffer.from(bytes, "base64")), parsed.signature);
}

/** The sender's signature plus the sponsor's, ready to submit. */
export function cosign(bytes: string, senderSignature: string, sponsorKey: SecretKeyInput): SignedTx {
  const sponsor = keypairFromSecret(sponsorKey);
  const sig = toSerializedSignature(sponsor.sign(signingDigest(Buffer.from(bytes, "base64"))), sponsor.publicKey);
  return { tx_bytes: bytes, signatures: [senderSignature, sig] };
}
