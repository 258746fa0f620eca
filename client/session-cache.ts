// Creates the x-encryption-session credential from a delegate key and reuses it until shortly before it expires,
// so a client signs one session per TTL rather than one per recall.
import { createDelegateSession } from "../adapters/encryption/session.ts";

/** `grpcUrl` (a node's gRPC API) is used before `rpcUrl` (its JSON-RPC) to read the package. */
export function cachedSessionProvider(opts: { delegateSecretKey: Uint8Array; packageId: string; rpcUrl: string; grpcUrl?: string; ttlMin?: number }): () => Promise<string> {
  let current: { header: string; expiresAtMs: number } | undefined;
  let pending: Promise<string> | undefined;
  return () => {
    if (current && Date.now() < current.expiresAtMs) return Promise.resolve(current.header);
    pending ??= createDelegateSession(opts)
      .then((s) => {
        current = { header: s.header, expiresAtMs: s.expiresAtMs };
        return s.header;
      })
      .finally(() => (pending = undefined));
    return pending;
  };
}
