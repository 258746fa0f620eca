// memory_recall without a second HTTP round trip: when the sidecar runs with the relayer's ports (NATS, Postgres, key
// servers, blob store), the tool runs the steps of POST /api/recall itself: the owner resolved from the chain's
// delegate index on every call (a removed key is refused at once, as on the route), the body validated by the
// route's parser, recallMemories with the caller's encryption session, failures mapped by the route's toReply. The
// Ed25519 signature and nonce of the route prove possession of the delegate key, which the sidecar holds itself.
import type { ChainPort } from "../../adapters/ports.ts";
import { recallMemories, type RecallPorts } from "../../projections/relayer/recall.ts";
import { parseRecall } from "../../schemas/relayer/http.ts";
import { toReply } from "../../gateway/relayer/routes.ts";
import { RelayerError, type RecallResponse } from "../../client/memrelay-client.ts";

/** What the sidecar needs to answer recalls in its own process. */
export interface RecallQueries {
  readonly chain: ChainPort;
  readonly ports: RecallPorts;
}

export type Recall = (query: string, opts: { limit?: number; namespace?: string }) => Promise<RecallResponse>;

/** Errors as the route would answer them, so the tool reports them exactly as after an HTTP call. */
function asRelayerError(err: unknown): unknown {
  const reply = toReply(err);
  if (!reply) return err;
  const body = typeof reply.body === "string" ? JSON.parse(reply.body) : {};
  return new RelayerError(reply.status, body, { ...reply.headers });
}

export function localRecall(q: RecallQueries, who: { publicKeyHex: string; accountId: string }, encryptionSession: () => Promise<string>): Recall {
  return async (query, opts) => {
    try {
      const account = await q.chain.resolveDelegate(who.publicKeyHex, who.accountId).catch(() => {
        throw new RelayerError(503, { error: "account lookup is unavailable; retry shortly" }, { "retry-after": "1" });
      });
      if (!account) throw new RelayerError(401, { error: "the signing key is not a delegate key of an active account" }, {});
      const body = parseRecall({ query, ...opts });
      return await recallMemories(q.ports, account.owner, body, { kind: "session", exported: await encryptionSession() });
    } catch (err) {
      throw err instanceof RelayerError ? err : asRelayerError(err);
    }
  };
}
