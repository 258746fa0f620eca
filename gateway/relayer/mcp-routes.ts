// The agent transports (spec/relayer.md): `GET /api/mcp/sse` + `POST /api/mcp/messages` (legacy SSE) and
// `GET|POST|DELETE|OPTIONS /api/mcp` (Streamable HTTP), forwarded over loopback to the MCP sidecar with the shared
// token and the client's address (TRUSTED_PROXY_HOPS), over kept-alive connections (sidecar-upstream.ts). JSON answers
// go back whole; event streams stream back as they come and stay open.
// A watchdog checks the sidecar's health; after SIDECAR_WATCHDOG_MAX_FAILURES consecutive failures it gives up.
import type { SidecarLinkConfig } from "../../config/env.ts";
import type { Logger } from "../../config/logger.ts";
import { json, type Handler, type HttpServer, type Reply, type Request } from "../http.ts";
import { clientIp } from "../rate-limit.ts";
import { MAX_MESSAGE_BYTES, RPC_ERROR, SIDECAR_HEADERS } from "../../schemas/mcp-tools.ts";
import { SidecarUpstream } from "./sidecar-upstream.ts";

/** Where the sidecar listens (it may be known only once started) and the token it expects. */
export interface SidecarLink {
  readonly url: () => string;
  readonly token: string | undefined;
}

/** Request headers an MCP client sends that the sidecar needs. */
const FORWARDED = ["authorization", "x-memory-account-id", "x-memwal-account-id", "content-type", "accept", "mcp-session-id", "mcp-protocol-version", "last-event-id"];
/** Response headers the client needs back. */
const RETURNED = ["content-type", "cache-control", "mcp-session-id", "www-authenticate", "retry-after"];
/** CORS: what browsers may send and read on these routes. */
export const MCP_CORS_HEADERS = ["authorization", "x-memory-account-id", "mcp-session-id", "mcp-protocol-version", "last-event-id"];

const rpcReply = (status: number, message: string, headers: Record<string, string> = {}, code: number = RPC_ERROR.internal): Reply =>
  json(status, { jsonrpc: "2.0", error: { code, message }, id: null }, headers);

/** OAuth on the transports: an access token stands for its grant's delegate key (gateway/relayer/oauth-routes.ts). */
export interface McpOAuth {
  resolveAccessToken(token: string): Promise<{ delegateKeyHex: string; accountId: string } | undefined>;
  resourceMetadataUrl(): string;
}

export function registerMcpRoutes(server: HttpServer, link: SidecarLink, opts: { trustedProxyHops: number; logger: Logger; wrap: (name: string, h: Handler) => Handler; oauth?: McpOAuth }): void {
  const upstream = new SidecarUpstream();
  const challenge = (error?: string) => ({
    "www-authenticate": `Bearer realm="memrelay"${error ? `, error="${error}"` : ""}, resource_metadata="${opts.oauth!.resourceMetadataUrl()}"`,
  });
  /** `sessionCapability`: the session id in the query is the capability (legacy SSE messages), a credential optional. */
  const forward = (sidecarPath: string, sessionCapability = false): Handler => async (req: Request) => {
    if (!link.token) return rpcReply(503, "the agent transports are not configured on this relayer (SIDECAR_AUTH_TOKEN)");
    const headers: Record<string, string> = { [SIDECAR_HEADERS.token]: link.token, [SIDECAR_HEADERS.clientIp]: clientIp(req, opts.trustedProxyHops) };
    for (const h of FORWARDED) if (req.headers[h]) headers[h] = req.headers[h];
    if (opts.oauth) {
      // No credential: point the client at the OAuth metadata (RFC 9728), except on a legacy SSE message, whose session
      // id is the capability (the sidecar checks it). An access token: its grant's delegate key.
      const auth = req.headers["authorization"];
      if (!auth && !sessionCapability) return rpcReply(401, "authorization required: sign in with OAuth, or send Authorization: Bearer <delegate key> and x-memory-account-id", challenge(), RPC_ERROR.unauthorized);
      const token = auth && /^Bearer\s+(mra\.\S+)$/i.exec(auth)?.[1];
      if (token) {
        const grant = await opts.oauth.resolveAccessToken(token);
        if (!grant) return rpcReply(401, "the access token is invalid, expired or revoked", challenge("invalid_token"), RPC_ERROR.unauthorized);
        headers["authorization"] = `Bearer ${grant.delegateKeyHex}`;
        headers["x-memory-account-id"] = grant.accountId;
      }
    }
    const target = new URL(sidecarPath + (req.query ? `?${req.query}` : ""), link.url());
    const answer = await upstream.send(target, req.method, headers, req.body).catch((err) => {
      opts.logger.warn("mcp sidecar unreachable", { error: err instanceof Error ? err.message : String(err) });
      return undefined;
    });
    if (!answer) return rpcReply(503, "the agent tool server is unavailable; retry shortly", { "retry-after": "2" });
    const out: Record<string, string> = {};
    for (const h of RETURNED) {
      const v = answer.headers[h];
      if (typeof v === "string") out[h] = v;
    }
    // The sidecar refuses a bad delegate-key bearer without knowing the OAuth metadata; the MCP authorization spec
    // wants the metadata URL on every 401 so the client can start discovery again.
    if (answer.status === 401 && opts.oauth) Object.assign(out, challenge("invalid_token"));
    return answer.stream ? { status: answer.status, headers: out, stream: answer.stream } : { status: answer.status, headers: out, body: answer.body };
  };
  const body = { bodyLimit: MAX_MESSAGE_BYTES * 2 };
  server
    .route("get", "/api/mcp/sse", opts.wrap("mcp_sse", forward("/mcp/sse")))
    .route("post", "/api/mcp/messages", opts.wrap("mcp_messages", forward("/mcp/messages", true)), body)
    .route("get", "/api/mcp", opts.wrap("mcp_stream", forward("/mcp")))
    .route("post", "/api/mcp", opts.wrap("mcp_post", forward("/mcp")), body)
    .route("del", "/api/mcp", opts.wrap("mcp_delete", forward("/mcp")));
}

/**
 * Checks the sidecar's `/health` every interval with a timeout; `onLost` runs once after `maxFailures` consecutive
 * failures (the relayer process exits then, spec: SIDECAR_WATCHDOG_MAX_FAILURES).
 */
export function startSidecarWatchdog(link: SidecarLink, cfg: SidecarLinkConfig, logger: Logger, onLost: () => void): () => void {
  let failures = 0;
  let lost = false;
  const timer = setInterval(async () => {
    const ok = await fetch(new URL("/health", link.url()), { signal: AbortSignal.timeout(cfg.watchdogTimeoutSecs * 1000) }).then((r) => r.ok, () => false);
    if (ok) {
      if (failures) logger.info("mcp sidecar healthy again", { after_failures: failures });
      failures = 0;
      return;
    }
    failures++;
    logger.warn("mcp sidecar health check failed", { failures, max: cfg.watchdogMaxFailures });
    if (failures >= cfg.watchdogMaxFailures && !lost) {
      lost = true;
      logger.error("mcp sidecar lost: giving up", { failures });
      onLost();
    }
  }, cfg.watchdogIntervalSecs * 1000);
  timer.unref();
  return () => clearInterval(timer);
}
