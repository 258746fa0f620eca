// The sidecar's Streamable HTTP transport (mcp/sidecar/direct-call-transport.ts) answers every request exactly as the
// MCP SDK's transport in JSON mode does: the same requests, raw over HTTP, against both, give the same status,
// content type, session header and body — tool calls (its direct path), and everything it hands to the SDK.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { randomUUID } from "node:crypto";
import { request } from "undici";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { DirectCallTransport } from "../mcp/sidecar/direct-call-transport.ts";

type AnyTransport = StreamableHTTPServerTransport | DirectCallTransport;

/** One MCP session per initialize, served by the given transport kind, with a tool that echoes and one that waits. */
async function serve(make: () => AnyTransport): Promise<{ url: string; server: Server; release: () => void; transports: AnyTransport[] }> {
  const sessions = new Map<string, AnyTransport>();
  const transports: AnyTransport[] = [];
  let release = () => undefined as void;
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString();
    const body = text ? JSON.parse(text) : undefined;
    const id = req.headers["mcp-session-id"] as string | undefined;
    let t = id ? sessions.get(id) : undefined;
    if (!t) {
      t = make();
      transports.push(t);
      const mcp = new McpServer({ name: "t", version: "1" }, { capabilities: { tools: {} } });
      mcp.registerTool("echo", { inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: "text", text }] }));
      const gate = new Promise<void>((r) => (release = r));
      mcp.registerTool("wait", { inputSchema: {} }, async () => (await gate, { content: [{ type: "text", text: "done" }] }));
      await mcp.connect(t);
    }
    await t.handleRequest(req, res, body);
    if (t.sessionId) sessions.set(t.sessionId, t);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server, release: () => release(), transports };
}

const JSON_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const sdkKind = () => new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), enableJsonResponse: true });
const directKind = () => new DirectCallTransport({ sessionIdGenerator: () => randomUUID() });

let sdk: Awaited<ReturnType<typeof serve>>, direct: Awaited<ReturnType<typeof serve>>;
beforeAll(async () => {
  [sdk, direct] = await Promise.all([serve(sdkKind), serve(directKind)]);
});
afterAll(() => {
  sdk?.server.close();
  direct?.server.close();
});

async function send(base: string, method: string, body: unknown, headers: Record<string, string>) {
  const r = await request(base + "/mcp", { method: method as "POST", headers, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) });
  const text = await r.body.text();
  return { status: r.statusCode, type: r.headers["content-type"], session: r.headers["mcp-session-id"] !== undefined, body: text ? JSON.parse(text) : null };
}

const initialize = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "t", version: "1" } } };

async function open(base: string): Promise<string> {
  const r = await request(base + "/mcp", { method: "POST", headers: JSON_HEADERS, body: JSON.stringify(initialize) });
  await r.body.text();
  return r.headers["mcp-session-id"] as string;
}

/** Opens a session on both servers; returns a function sending the same request to both (with each one's session id). */
async function twins() {
  const ids = await Promise.all([open(sdk.url), open(direct.url)]);
  const both = (method: string, body: unknown, headers: Record<string, string> = {}) => {
    const h = (i: number) => ({ ...JSON_HEADERS, "mcp-session-id": ids[i], "mcp-protocol-version": LATEST_PROTOCOL_VERSION, ...headers });
    return Promise.all([send(sdk.url, method, body, h(0)), send(direct.url, method, body, h(1))]);
  };
  await both("POST", { jsonrpc: "2.0", method: "notifications/initialized" });
  return both;
}

describe("the sidecar's Streamable HTTP transport", () => {
  it("answers tool calls, errors and everything else as the SDK's transport does", async () => {
    const both = await twins();
    const call = (id: number, name: string, args: unknown) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
    const cases: [string, unknown, Record<string, string>?][] = [
      ["POST", call(1, "echo", { text: "hello" })],
      ["POST", call(2, "echo", { text: 42 })],
      ["POST", call(3, "no_such_tool", {})],
      ["POST", { jsonrpc: "2.0", id: 4, method: "tools/list" }],
      ["POST", { jsonrpc: "2.0", id: 5, method: "no/such/method" }],
      ["POST", [call(6, "echo", { text: "a" }), call(7, "echo", { text: "b" })]],
      ["POST", { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 99 } }],
      ["POST", { jsonrpc: "1.0", id: 8, method: "tools/list" }],
      ["POST", call(9, "echo", { text: "x" }), { "mcp-protocol-version": "1999-01-01" }],
      ["POST", call(10, "echo", { text: "x" }), { accept: "application/json" }],
      ["POST", call(11, "echo", { text: "x" }), { "content-type": "text/plain" }],
      ["GET", undefined, { accept: "application/json" }],
      ["PUT", call(13, "echo", { text: "x" })],
    ];
    for (const [method, body, headers] of cases) {
      const [a, b] = await both(method, body, headers);
      expect(b, `${method} ${JSON.stringify(body)} ${JSON.stringify(headers ?? {})}`).toEqual(a);
    }
    expect((await both("DELETE", undefined)).map((r) => r.status)).toEqual([200, 200]);
    const [a, b] = await both("POST", call(14, "echo", { text: "after" }));
    expect(b).toEqual(a);
    expect(b.status).toBe(404);
  });

  it("answers a call still running when its session ends with the SDK's 'Session not found'", async () => {
    const session = await open(direct.url);
    const call = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "wait", arguments: {} } };
    const pending = send(direct.url, "POST", call, { ...JSON_HEADERS, "mcp-session-id": session });
    await new Promise((r) => setTimeout(r, 50));
    await direct.transports.at(-1)!.close();
    expect(await pending).toMatchObject({ status: 404, body: { error: { code: -32001, message: "Session not found" } } });
    direct.release();
  });
});
