// Creates the x-encryption-session credential from a delegate key and reuses it until a margin before it expires,
// so a client signs one session per TTL rather than one per recall. The margin is what a request needs to reach the
// key servers: a session handed out in its last seconds expired on the way when calls were slow, and the relayer
// answered 403 (issue 32's chaos run, the standby fault about five minutes in, when every owner's first session ran out).
import { createDelegateSession, type CreatedSession } from "../adapters/encryption/session.ts";

/** A session is renewed once less than this much of its usable life is left (a slow call with retries takes seconds). */
const RENEW_MARGIN_MS = 60_000;

export interface SessionProviderOptions {
  readonly delegateSecretKey: Uint8Array;
  readonly packageId: string;
  readonly rpcUrl: string;
  /** A node's gRPC API, used before `rpcUrl` (its JSON-RPC) to read the package. */
  readonly grpcUrl?: string;
  readonly ttlMin?: number;
}

/** `create` and `now`: how a session is made and the clock (tests replace them). */
export function cachedSessionProvider(opts: SessionProviderOptions, create: (o: SessionProviderOptions) => Promise<Pick<CreatedSession, "header" | "expiresAtMs">> = createDelegateSession, now: () => number = Date.now): () => Promise<string> {
  let current: { header: string; renewAtMs: number } | undefined;
  let pending: Promise<string> | undefined;
  return () => {
    if (current && now() < current.renewAtMs) return Promise.resolve(current.header);
    pending ??= create(opts)
      .then((s) => {
        // Within a short TTL the margin is half the life, so a session is still reused.
        const created = now();
        current = { header: s.header, renewAtMs: s.expiresAtMs - Math.min(RENEW_MARGIN_MS, (s.expiresAtMs - created) / 2) };
        return s.header;
      })
      .finally(() => (pending = undefined));
    return pending;
  };
}
