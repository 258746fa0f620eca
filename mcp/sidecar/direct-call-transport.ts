// The sidecar's Streamable HTTP transport: the MCP SDK's own (JSON answers, enableJsonResponse), with a direct path
// for the one request agents repeat, a POST of a single JSON-RPC request on an open session. That path answers on the
// node:http response itself instead of going through the SDK's conversion to web Request/Response objects and back,
// which cost the sidecar more per tool call than anything but the recall. Whatever is not exactly that request
// (initialize, notifications, batches, GET streams, DELETE, wrong headers, unknown versions, a closed session) goes
// to the SDK's transport, which answers it as before, errors included.
import type { IncomingMessage, ServerResponse } from "node:http";
import { StreamableHTTPServerTransport, type StreamableHTTPServerTransportOptions } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import { JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage, type JSONRPCRequest, type MessageExtraInfo, type RequestId } from "@modelcontextprotocol/sdk/types.js";

const JSON_TYPE = /^application\/json\s*(;|$)/i;

const isResponse = (m: JSONRPCMessage): m is JSONRPCMessage & { id: RequestId } => "id" in m && ("result" in m || "error" in m);

export class DirectCallTransport implements Transport {
  private readonly sdk: StreamableHTTPServerTransport;
  /** Requests taken by the direct path, by id, waiting for their answer. */
  private readonly waiting = new Map<RequestId, ServerResponse>();
  private closed = false;

  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;

  constructor(options: StreamableHTTPServerTransportOptions) {
    this.sdk = new StreamableHTTPServerTransport({ ...options, enableJsonResponse: true });
    this.sdk.onmessage = (message, extra) => this.onmessage?.(message, extra);
    this.sdk.onerror = (error) => this.onerror?.(error);
    this.sdk.onclose = () => {
      this.closed = true;
      // Calls still running when the session ends are answered as the SDK answers calls on a closed session.
      for (const res of this.waiting.values()) answer(res, 404, { jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
      this.waiting.clear();
      this.onclose?.();
    };
  }

  get sessionId(): string | undefined {
    return this.sdk.sessionId;
  }

  start(): Promise<void> {
    return this.sdk.start();
  }

  close(): Promise<void> {
    return this.sdk.close();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const id = isResponse(message) ? message.id : options?.relatedRequestId;
    const res = id === undefined ? undefined : this.waiting.get(id);
    if (!res) return this.sdk.send(message, options);
    // A JSON answer carries the response only: notifications about the call are dropped, as in the SDK's JSON mode.
    if (!isResponse(message)) return;
    this.waiting.delete(message.id);
    answer(res, 200, message, { "mcp-session-id": this.sdk.sessionId! });
  }

  /** Handles a request of this session; `body` is the parsed POST body. */
  async handleRequest(req: IncomingMessage, res: ServerResponse, body?: unknown): Promise<void> {
    const call = this.directCall(req, body);
    if (!call) return this.sdk.handleRequest(req, res, body);
    this.waiting.set(call.id, res);
    this.onmessage?.(call, { requestInfo: { headers: req.headers } });
  }

  /** The request when this POST is exactly what the SDK would hand on as one call on this session, else undefined. */
  private directCall(req: IncomingMessage, body: unknown): JSONRPCRequest | undefined {
    if (this.closed || req.method !== "POST" || !body || typeof body !== "object" || Array.isArray(body)) return undefined;
    const h = req.headers;
    const accept = h.accept ?? "";
    if (!accept.includes("application/json") || !accept.includes("text/event-stream") || !JSON_TYPE.test(h["content-type"] ?? "")) return undefined;
    if (this.sdk.sessionId === undefined || h["mcp-session-id"] !== this.sdk.sessionId) return undefined;
    const version = h["mcp-protocol-version"];
    if (version !== undefined && (typeof version !== "string" || !SUPPORTED_PROTOCOL_VERSIONS.includes(version))) return undefined;
    const parsed = JSONRPCMessageSchema.safeParse(body);
    if (!parsed.success) return undefined;
    const m = parsed.data;
    if (!("method" in m) || !("id" in m) || m.method === "initialize" || this.waiting.has(m.id)) return undefined;
    return m as JSONRPCRequest;
  }
}

function answer(res: ServerResponse, status: number, message: unknown, headers: Record<string, string> = {}): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(message));
}
