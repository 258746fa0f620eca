// The certificate `certify_blob` checks (Walrus's `bls_aggregate::verify_quorum_in_epoch`): the signers named by the
// bitmap hold a quorum of the shards, the message is a blob certification, and the signers' aggregate BLS12-381
// signature (min-pk: keys in G1, signatures in G2) verifies over it.
import { Effect } from "effect";
import { bls12_381 } from "@noble/curves/bls12-381.js";
import { reject, type StoreUnavailable, type TxRejected } from "./errors.ts";
import type { WalrusCommitteeView } from "./walrus-deployment.ts";
import { BLOB_CERT_INTENT, isQuorumWeight, StorageConfirmationBcs } from "./walrus-layouts.ts";

type Fx<A> = Effect.Effect<A, TxRejected | StoreUnavailable>;
const fail = (message: string, kind: TxRejected["kind"] = "invalid") => Effect.fail(reject(kind, message));

export function verifyCertificate(committee: WalrusCommitteeView, cert: { signature: Uint8Array; bitmap: Uint8Array; message: Uint8Array }): Fx<void> {
  return Effect.gen(function* () {
    const n = committee.members.length;
    if (cert.bitmap.length !== Math.ceil(n / 8)) return yield* fail(`signers_bitmap must be ${Math.ceil(n / 8)} bytes for ${n} committee members`);
    const signers = committee.members.filter((_, i) => (cert.bitmap[i >> 3]! >> (i & 7)) & 1);
    for (let i = n; i < cert.bitmap.length * 8; i++) if ((cert.bitmap[i >> 3]! >> (i & 7)) & 1) return yield* fail("signers_bitmap names a signer outside the committee");
    const weight = signers.reduce((sum, m) => sum + m.weight, 0);
    if (!isQuorumWeight(weight, committee.nShards)) return yield* fail(`the signers hold ${weight} of ${committee.nShards} shards, not a quorum`, "forbidden");
    const parsed = (() => {
      try {
        const msg = StorageConfirmationBcs.parse(cert.message);
        return Buffer.compare(Buffer.from(StorageConfirmationBcs.serialize(msg).toBytes()), Buffer.from(cert.message)) === 0 ? msg : null;
      } catch {
        return null;
      }
    })();
    if (!parsed) return yield* fail("message is not a storage confirmation");
    if (parsed.intent.type !== BLOB_CERT_INTENT.type || parsed.intent.version !== BLOB_CERT_INTENT.version || parsed.intent.appId !== BLOB_CERT_INTENT.appId) {
      return yield* fail("message is not a blob certification (intent 1, version 0, Walrus app 3)");
    }
    const bls = bls12_381.longSignatures;
    let valid = false;
    try {
      valid = bls.verify(cert.signature, bls.hash(cert.message), bls.aggregatePublicKeys(signers.map((m) => m.publicKey)));
    } catch {
      valid = false;
    }
    if (!valid) return yield* fail("the aggregate signature does not verify for the signers", "forbidden");
  });
}
