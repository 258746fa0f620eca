// Storing a client-encrypted memory (POST /api/remember/manual): the ciphertext goes to the blob store and its
// object is recorded on chain for the owner, trying successive upload wallets as the remember job does. The route
// then registers it in the index. Failures are typed so the route can answer with the right status.
import type { BlobObject, BlobPort, ChainPort } from "../../adapters/ports.ts";
import { callOnLease, type WalletPool } from "../../adapters/chain/wallet-pool.ts";
import { MAX_WALLET_ATTEMPTS } from "../../schemas/relayer/remember-job.ts";

export type ManualStoreFailure =
  | { readonly kind: "no_wallet" }
  | { readonly kind: "blob_store"; readonly error: string }
  | { readonly kind: "chain"; readonly error: string }
  /** The same ciphertext is already recorded in another namespace (recording is idempotent per owner and blob). */
  | { readonly kind: "other_namespace" };

export class ManualStoreError extends Error {
  constructor(readonly failure: ManualStoreFailure) {
    super(failure.kind);
  }
}

export interface ManualMemoryPorts {
  readonly blobs: BlobPort;
  readonly chain: ChainPort;
  /** Undefined when no upload wallet is configured. */
  readonly wallets: () => WalletPool | undefined;
}

export async function storeManualMemory(ports: ManualMemoryPorts, input: { owner: string; namespace: string; bytes: Uint8Array }): Promise<{ blobId: string; size: number; object: BlobObject }> {
  const wallets = ports.wallets();
  if (!wallets) throw new ManualStoreError({ kind: "no_wallet" });
  const stored = await ports.blobs.store(input.bytes, { sendObjectTo: input.owner }).catch((err) => {
    throw new ManualStoreError({ kind: "blob_store", error: err instanceof Error ? err.message : String(err) });
  });
  let lastError = "";
  for (let attempt = 1; attempt <= MAX_WALLET_ATTEMPTS; attempt++) {
    try {
      // A wallet with no transaction in flight: its gas coin may serve only one at a time (adapters/chain/wallet-pool.ts).
      const lease = await wallets.acquire("manual_record");
      // A call the pool judges stalled moves to the next wallet (callOnLease), as the record batcher's do.
      const object = await callOnLease(lease, (key) => ports.chain.recordBlob({ owner: input.owner, namespace: input.namespace, blobId: stored.blobId, size: stored.size, walletSecretKey: key }));
      if (object.namespace !== input.namespace) throw new ManualStoreError({ kind: "other_namespace" });
      return { blobId: stored.blobId, size: stored.size, object };
    } catch (err) {
      if (err instanceof ManualStoreError) throw err;
      lastError = err instanceof Error ? err.message : String(err);
      if (attempt < MAX_WALLET_ATTEMPTS) await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
  throw new ManualStoreError({ kind: "chain", error: lastError });
}
