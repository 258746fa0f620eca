// The MCP sidecar (spec/relayer.md, Agent tool transports): serves the memory tools over the legacy SSE transport
// (`/mcp/sse` + `/mcp/messages`) and Streamable HTTP (`/mcp`), behind the relayer, which forwards `/api/mcp*` over
// loopback with the shared SIDECAR_AUTH_TOKEN and the client's address. A bearer credential (delegate private key +
// account id) becomes a session only after the relayer accepts a request signed with it; every tool call is then a
// signed relayer request (memory_recall: the route's recall in process when this process has the relayer's ports,
// with the owner resolved on every call), so a removed delegate is refused on its next call and its session ends.
// An open session is used by whoever holds its id with the credential and from the address that opened it
// (session-binding.ts: a legacy SSE message may come without a credential, as MemWal's package sends them); its tools
// carry the names its client expects (`memory_*`, or `memwal_*` for MemWal's package: bearer.ts, toolFamilyOf).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { hash, randomUUID, timingSafeEqual } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../config/logger.ts";
import { namingAddressVariable } from "../../config/listen-error.ts";
import { MAX_MESSAGE_BYTES, RPC_ERROR, SIDECAR_HEADERS, TOOL_NAMES } from "../../schemas/mcp-tools.ts";
import { RELAYER_VERSION } from "../../gateway/relayer/versioning.ts";
import { SessionLimits } from "./session-limits.ts";
import { BodyTooLarge, NotJson, readJson } from "../node-body.ts";
import type { SidecarSettings } from "./settings.ts";
import { registerMemoryTools } from "../memory-tools.ts";
import { BearerRefused, SessionCredentials, toolFamilyOf, type BearerSession } from "./bearer.ts";
import { bindingOf, checkBinding, type SessionBinding } from "./session-binding.ts";
import { handleSponsorRoute, SPONSOR_PATHS } from "./sponsor-routes.ts";
import type { Sponsorship } from "../../actors/relayer/sponsorship.ts";
import { localRecall, type RecallQueries } from "./local-recall.ts";
import { DirectCallTransport } from "./direct-call-transport.ts";

const SSE_KEEPALIVE_MS = 15_000;

interface Session {
  readonly id: string;
  readonly kind: "sse" | "streamable";
  readonly transport: SSEServerTransport | DirectCallTransport;
  readonly binding: SessionBinding;
  lastSeen: number;
  refused: boolean;
  close(): Promise<void>;
}

export interface Sidecar {
  readonly port: number;
  readonly sessions: () => number;
  close(): Promise<void>;
}

class RpcRefusal extends Error {
  constructor(readonly status: number, readonly code: number, message: string, readonly headers: Record<string, string> = {}) {
    super(message);
  }
}

function rpcError(res: ServerResponse, e: RpcRefusal): void {
  if (res.headersSent) return void res.end();
  res.writeHead(e.status, { "content-type": "application/json", ...e.headers });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: e.code, message: e.message }, id: null }));
}

const sha256 = (s: string) => hash("sha256", s, "buffer");

/** Compares digests (equal lengths, constant time); the expected token's digest is taken once. */
function tokenMatches(given: string | undefined, expectedDigest: Buffer): boolean {
  return !!given && timingSafeEqual(sha256(given), expectedDigest);
}

async function readMessage(req: IncomingMessage): Promise<unknown> {
  return readJson(req, MAX_MESSAGE_BYTES).catch((err) => {
    if (err instanceof BodyTooLarge) throw new RpcRefusal(413, RPC_ERROR.invalidRequest, `message exceeds ${MAX_MESSAGE_BYTES} bytes`);
    throw err instanceof NotJson ? new RpcRefusal(400, RPC_ERROR.parse, "parse error: the body is not JSON") : err;
  });
}

/** The client's address: as the relayer saw it (it forwards it), else the socket's. */
const sourceOf = (req: IncomingMessage) => String(req.headers[SIDECAR_HEADERS.clientIp] ?? req.socket.remoteAddress ?? "unknown");

const isInitialize = (body: unknown) => (Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body));

/** What else the sidecar serves: the relayer's gas station behind /sponsor, when one is configured. */
export interface SidecarExtras {
  readonly sponsorship?: Sponsorship;
  /** The relayer's ports, when this process has them: memory_recall then runs here instead of calling the relayer. */
  readonly recall?: RecallQueries;
}

export async function startSidecar(settings: SidecarSettings, logger: Logger, extras: SidecarExtras = {}): Promise<Sidecar> {
  const sessions = new Map<string, Session>();
  const limits = new SessionLimits(settings.sessions);
  const credentials = new SessionCredentials(settings.relayerUrl);
  const tokenDigest = sha256(settings.authToken);

  /** Admission, then the bearer checked against the relayer; returns what a new session needs. */
  const openSession = async (req: IncomingMessage): Promise<{ bearer: BearerSession; release: () => void }> => {
    const slot = limits.admit(sourceOf(req));
    if (!slot.ok) throw new RpcRefusal(429, RPC_ERROR.rateLimited, `too many sessions: ${slot.reason}`, { "retry-after": String(slot.retryAfterSecs) });
    try {
      return { bearer: await credentials.resolve(req.headers), release: slot.release };
    } catch (err) {
      slot.release();
      if (err instanceof BearerRefused) throw new RpcRefusal(401, RPC_ERROR.unauthorized, err.message, { "www-authenticate": 'Bearer realm="memrelay", error="invalid_token"' });
      logger.warn("mcp session refused: relayer unreachable", { error: err instanceof Error ? err.message : String(err) });
      throw new RpcRefusal(503, RPC_ERROR.internal, "the memory service is unavailable; retry shortly", { "retry-after": "2" });
    }
  };

  /** The tools, under the names the opening request's client expects (bearer.ts, toolFamilyOf). */
  const toolServer = (session: () => Session | undefined, bearer: BearerSession, req: IncomingMessage) => {
    const server = new McpServer({ name: "memrelay", version: RELAYER_VERSION }, { capabilities: { tools: {} } });
    const { client } = bearer;
    registerMemoryTools(server, {
      client,
      recall: extras.recall
        ? localRecall(extras.recall, { publicKeyHex: client.signer.publicKeyHex, accountId: client.signer.accountId }, bearer.encryptionSession)
        : (query, opts) => client.recall(query, opts),
      relayerUrl: settings.relayerUrl,
      rememberTimeoutMs: settings.sessions.rememberTimeoutMs,
      names: TOOL_NAMES[toolFamilyOf(req.headers)],
      onRefused: () => {
        const s = session();
        if (s) s.refused = true;
      },
    });
    return server;
  };

  /** The session a request names, checked: bound to this request's credential and source (session-binding.ts), not refused. */
  const sessionFor = async (id: string | undefined, req: IncomingMessage, kind: Session["kind"]): Promise<Session> => {
    const s = id ? sessions.get(id) : undefined;
    if (!s || s.kind !== kind) throw new RpcRefusal(404, RPC_ERROR.sessionNotFound, "session not found (expired, closed, or the server restarted): reconnect and initialize a new session");
    const verdict = checkBinding(s.binding, kind, req.headers, sourceOf(req));
    if (!verdict.ok) throw new RpcRefusal(verdict.status, RPC_ERROR.unauthorized, verdict.message);
    if (s.refused) {
      await s.close();
      throw new RpcRefusal(401, RPC_ERROR.unauthorized, "the memory service refused this credential: the delegate key is unknown or was removed");
    }
    s.lastSeen = Date.now();
    return s;
  };

  const register = (s: Session) => {
    sessions.set(s.id, s);
    logger.info("mcp session opened", { transport: s.kind, sessions: sessions.size });
  };

  const closer = (id: string, release: () => void, close: () => Promise<void>) => {
    let closed = false;
    return async () => {
      if (closed) return;
      closed = true;
      sessions.delete(id);
      release();
      await close().catch(() => undefined);
    };
  };

  const handleSseOpen = async (req: IncomingMessage, res: ServerResponse) => {
    const { bearer, release } = await openSession(req);
    const transport = new SSEServerTransport("/api/mcp/messages", res);
    let session: Session | undefined;
    const server = toolServer(() => session, bearer, req);
    const keepalive = setInterval(() => !res.writableEnded && res.write(": keepalive\n\n"), SSE_KEEPALIVE_MS);
    keepalive.unref();
    const close = closer(transport.sessionId, release, async () => {
      clearInterval(keepalive);
      await server.close();
    });
    session = { id: transport.sessionId, kind: "sse", transport, binding: bindingOf(req.headers, sourceOf(req)), lastSeen: Date.now(), refused: false, close };
    register(session);
    res.on("close", () => void close());
    await server.connect(transport);
  };

  const handleSseMessage = async (req: IncomingMessage, res: ServerResponse, url: URL) => {
    const s = await sessionFor(url.searchParams.get("sessionId") ?? undefined, req, "sse");
    const body = await readMessage(req);
    await (s.transport as SSEServerTransport).handlePostMessage(req, res, body);
  };

  const handleStreamable = async (req: IncomingMessage, res: ServerResponse) => {
    const id = req.headers["mcp-session-id"];
    const sessionId = typeof id === "string" ? id : undefined;
    if (req.method === "POST") {
      const body = await readMessage(req);
      if (!sessionId) {
        if (!isInitialize(body)) throw new RpcRefusal(400, RPC_ERROR.invalidRequest, "no session: send initialize first (without an mcp-session-id header)");
        const { bearer, release } = await openSession(req);
        let session: Session | undefined;
        const server = toolServer(() => session, bearer, req);
        // Tools send no progress notifications, so a POST is answered with one JSON body (spec-allowed) rather than
        // an event stream: less work per call here and in the relayer that forwards it.
        const transport: DirectCallTransport = new DirectCallTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => {
            const close = closer(sid, release, () => server.close());
            session = { id: sid, kind: "streamable", transport, binding: bindingOf(req.headers, sourceOf(req)), lastSeen: Date.now(), refused: false, close };
            register(session);
          },
          onsessionclosed: (sid) => void sessions.get(sid)?.close(),
        });
        transport.onclose = () => (session ? void session.close() : release());
        await server.connect(transport);
        await transport.handleRequest(req, res, body);
        if (!session) release(); // initialize was refused by the transport itself: no session to keep
        return;
      }
      const s = await sessionFor(sessionId, req, "streamable");
      return (s.transport as DirectCallTransport).handleRequest(req, res, body);
    }
    const s = await sessionFor(sessionId, req, "streamable");
    await (s.transport as DirectCallTransport).handleRequest(req, res);
  };

  const http: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://sidecar");
    const route = async () => {
      if (url.pathname === "/health" && req.method === "GET") {
        res.writeHead(200, { "content-type": "application/json" });
        return void res.end(JSON.stringify({ status: "ok", sessions: sessions.size }));
      }
      if (!tokenMatches(req.headers[SIDECAR_HEADERS.token] as string | undefined, tokenDigest)) {
        throw new RpcRefusal(401, RPC_ERROR.unauthorized, "the sidecar only answers the relayer");
      }
      if (req.method === "POST" && (SPONSOR_PATHS as readonly string[]).includes(url.pathname)) {
        return handleSponsorRoute(req, res, url.pathname, extras.sponsorship, logger);
      }
      if (url.pathname === "/mcp/sse" && req.method === "GET") return handleSseOpen(req, res);
      if (url.pathname === "/mcp/messages" && req.method === "POST") return handleSseMessage(req, res, url);
      if (url.pathname === "/mcp" && (req.method === "GET" || req.method === "POST" || req.method === "DELETE")) return handleStreamable(req, res);
      throw new RpcRefusal(404, RPC_ERROR.invalidRequest, `no MCP route for ${req.method} ${url.pathname}`);
    };
    route().catch((err) => {
      if (err instanceof RpcRefusal) return rpcError(res, err);
      logger.error("mcp request failed", { path: url.pathname, error: err instanceof Error ? err.message : String(err) });
      rpcError(res, new RpcRefusal(500, RPC_ERROR.internal, "internal error"));
    });
  });

  const sweeper = setInterval(() => {
    const cutoff = Date.now() - settings.sessions.idleMs;
    for (const s of sessions.values()) if (s.lastSeen < cutoff) void s.close();
    limits.prune();
  }, Math.min(30_000, Math.max(1_000, settings.sessions.idleMs / 2)));
  sweeper.unref();

  const port = await new Promise<number>((resolve, reject) => {
    http.once("error", reject);
    http.listen(Number(settings.url.port || 80), settings.url.hostname === "localhost" ? "127.0.0.1" : settings.url.hostname, () => resolve((http.address() as { port: number }).port));
  }).catch(namingAddressVariable("SIDECAR_URL", "http://127.0.0.1:0 takes any free port"));
  logger.info("mcp sidecar listening", { url: `http://${settings.url.hostname}:${port}`, relayer: settings.relayerUrl });
  return {
    port,
    sessions: () => sessions.size,
    close: async () => {
      clearInterval(sweeper);
      await Promise.all([...sessions.values()].map((s) => s.close()));
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
