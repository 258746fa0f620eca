// After an embedder change the memory index is rebuilt from the log (projections/relayer/memory-index.ts), without the
// vectors the old embedder made. `memrelay start` re-embeds the dev account's memories through the relayer's own
// restore route (download, decrypt with the dev credentials, embed with the new embedder), namespace by namespace,
// with a progress bar. Other owners' memories need their own credential: they restore with POST /api/restore.
import type { LocalStack } from "../runtime/local-stack.ts";
import { MemrelayClient } from "../client/memrelay-client.ts";
import { cachedSessionProvider } from "../client/session-cache.ts";
import type { Credentials } from "./credentials.ts";
import { ProgressBar } from "./progress.ts";

const PER_CALL = 500;

export async function reembedDevMemories(stack: LocalStack, creds: Credentials, from: string | null): Promise<string> {
  const owner = creds.walletAddress;
  const blobs = await stack.chain.listBlobs(owner, { limit: 10_000 });
  const namespaces = [...new Set(blobs.map((b) => b.namespace))];
  const others = Number((await stack.db.query<{ n: string }>("SELECT count(DISTINCT owner) AS n FROM remember_jobs WHERE owner <> $1", [owner])).rows[0]?.n ?? 0);
  const client = new MemrelayClient({
    baseUrl: stack.relayerUrl,
    delegatePrivateKey: Uint8Array.from(Buffer.from(creds.delegatePrivateKey, "hex")),
    accountId: creds.accountId,
    encryptionSession: cachedSessionProvider({ delegateSecretKey: Uint8Array.from(Buffer.from(creds.delegatePrivateKey, "hex")), packageId: stack.encryptionStack.packageId, rpcUrl: stack.encryptionStack.rpcUrl }),
  });
  const bar = new ProgressBar(`re-embedding (${from ?? "old embedder"} → ${stack.embedder.name})`);
  let done = 0;
  let restored = 0;
  let failed = 0;
  for (const namespace of namespaces) {
    for (;;) {
      const r = await client.restore(namespace, PER_CALL);
      restored += r.restored;
      failed += r.failed;
      done = Math.min(blobs.length, done + r.restored + r.failed);
      bar.update(done, blobs.length, "memories");
      if (!r.truncated || r.restored + r.failed === 0) break;
    }
  }
  bar.update(blobs.length, blobs.length, "memories");
  const note = others ? `; ${others} other owner(s) re-embed theirs with POST /api/restore (their credential is needed to decrypt)` : "";
  return `re-embedded ${restored} memories of the dev account in ${namespaces.length} namespace(s) (${failed} could not be opened)${note}`;
}
