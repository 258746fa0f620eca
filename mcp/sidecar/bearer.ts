// Bearer credentials of the agent transports (spec/relayer.md, Authentication, Agent transports):
// `Authorization: Bearer <delegate private key, 64 hex>` + `x-memory-account-id` (the MemWal package's
// `x-memwal-account-id` too). The owner is resolved exactly as for signed requests, by the relayer itself: a request
// signed with the key must be accepted before a session exists. Decryption uses a Seal session signed by the same key.
import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { MemrelayClient, RelayerError } from "../../client/memrelay-client.ts";
import { cachedSessionProvider } from "../../client/session-cache.ts";
import type { ToolFamily } from "../../schemas/mcp-tools.ts";

export class BearerRefused extends Error {}

export interface BearerSession {
  readonly client: MemrelayClient;
  /** The x-encryption-session the client sends, signed once per TTL. */
  readonly encryptionSession: () => Promise<string>;
}

const KEY = /^(?:0x)?([0-9a-fA-F]{64})$/;
const ACCOUNT = /^0x[0-9a-fA-F]{64}$/;

/** The delegate key and account a request presents, or BearerRefused saying what is wrong. */
export function bearerOf(headers: IncomingHttpHeaders): { key: Uint8Array; accountId: string } {
  const auth = String(headers.authorization ?? "");
  const m = /^Bearer\s+(\S+)$/i.exec(auth);
  if (!m) throw new BearerRefused("missing credential: send Authorization: Bearer <delegate private key> and x-memory-account-id");
  const key = KEY.exec(m[1]);
  if (!key) throw new BearerRefused("the bearer credential must be a delegate private key (64 hexadecimal characters)");
  const accountId = String(headers["x-memory-account-id"] ?? headers["x-memwal-account-id"] ?? "");
  if (!ACCOUNT.test(accountId)) throw new BearerRefused("x-memory-account-id must be the account id (0x followed by 64 hexadecimal characters)");
  return { key: Uint8Array.from(Buffer.from(key[1], "hex")), accountId: accountId.toLowerCase() };
}

/**
 * Which tool names a session serves, from the header that names the account: MemWal's package and MemWal's documented
 * HTTP set-up send only `x-memwal-account-id` and expect `memwal_*`; memrelay's clients send `x-memory-account-id`.
 * (The MCP `initialize` clientInfo cannot tell: MemWal's package forwards its host's, e.g. "Cursor".)
 */
export const toolFamilyOf = (headers: IncomingHttpHeaders): ToolFamily =>
  headers["x-memory-account-id"] === undefined && headers["x-memwal-account-id"] !== undefined ? "memwal" : "memory";

/** Delegate keys whose encryption sessions are kept for reuse (the oldest is dropped beyond this). */
const MAX_SHARED_SESSIONS = 1024;

export class SessionCredentials {
  private chain?: Promise<{ packageId: string; rpcUrl: string }>;
  /**
   * One encryption session per delegate key (by its hash), shared by that key's MCP sessions: the decrypt side caches
   * opened data keys per encryption session, so agents holding several MCP sessions with one key open each key once.
   */
  private readonly sessions = new Map<string, () => Promise<string>>();

  constructor(private readonly relayerUrl: string) {}

  /** What the relayer's /config says decrypt sessions are for (read once). */
  private chainConfig(): Promise<{ packageId: string; rpcUrl: string; grpcUrl?: string }> {
    this.chain ??= fetch(new URL("/config", this.relayerUrl))
      .then(async (r) => {
        if (!r.ok) throw new Error(`relayer /config answered ${r.status}`);
        const c = (await r.json()) as { packageId: string; chainRpcUrl: string; chainGrpcUrl?: string; chainTransport?: string };
        // the node the relayer itself uses: its gRPC API when the relayer speaks gRPC (it may have no JSON-RPC URL)
        return { packageId: c.packageId, rpcUrl: c.chainRpcUrl, ...(c.chainTransport === "grpc" && c.chainGrpcUrl ? { grpcUrl: c.chainGrpcUrl } : {}) };
      })
      .catch((err) => {
        this.chain = undefined;
        throw err;
      });
    return this.chain;
  }

  async resolve(headers: IncomingHttpHeaders): Promise<BearerSession> {
    const { key, accountId } = bearerOf(headers);
    const chain = await this.chainConfig();
    const encryptionSession = this.sharedSession(key, chain);
    const client = new MemrelayClient({ baseUrl: this.relayerUrl, delegatePrivateKey: key, accountId, encryptionSession });
    // A cheap signed read: the relayer verifies the signature and that the key is a delegate of the account.
    try {
      await client.call("POST", "/api/stats", {});
    } catch (err) {
      if (err instanceof RelayerError && (err.status === 401 || err.status === 403)) throw new BearerRefused("the memory service refused this credential: the delegate key is not on this account");
      throw err;
    }
    return { client, encryptionSession };
  }

  private sharedSession(key: Uint8Array, chain: { packageId: string; rpcUrl: string; grpcUrl?: string }): () => Promise<string> {
    const id = createHash("sha256").update(key).digest("hex");
    let provider = this.sessions.get(id);
    if (provider) this.sessions.delete(id); // re-inserted last: the map's order is least recently used first
    provider ??= cachedSessionProvider({ delegateSecretKey: key, ...chain });
    this.sessions.set(id, provider);
    while (this.sessions.size > MAX_SHARED_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    return provider;
  }
}
