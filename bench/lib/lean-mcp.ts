// A load generator's MCP client: Streamable HTTP spoken directly over an undici pool (initialize, the initialized
// notification, then tools/call POSTs on the session), as lean as the plain route's signed POSTs. The load generator
// shares the 2 cores with the service, so a heavy client would be charged to the transport it measures; the MCP SDK's
// own client stays the judge of compatibility in the tests, and the bench reports its figures beside these.
import type { Pool } from "undici";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

export interface LeanSession {
  readonly id: string;
  callTool(name: string, args: Record<string, unknown>): Promise<{ isError?: boolean }>;
}

const ACCEPT = "application/json, text/event-stream";

/** The JSON-RPC message of a POST answer: a JSON body, or the first `data:` line of an event stream. */
function messageOf(contentType: string, text: string): { result?: { isError?: boolean }; error?: { message: string } } {
  if (contentType.startsWith("text/event-stream")) {
    const line = text.split("\n").find((l) => l.startsWith("data:"));
    if (!line) throw new Error("event stream without a message");
    return JSON.parse(line.slice(5));
  }
  return JSON.parse(text);
}

export async function openLeanSession(pool: Pool, path: string, auth: Record<string, string>): Promise<LeanSession> {
  const post = async (headers: Record<string, string>, body: unknown) => {
    const r = await pool.request({ method: "POST", path, headers: { ...auth, ...headers, accept: ACCEPT, "content-type": "application/json" }, body: JSON.stringify(body) });
    const text = await r.body.text();
    if (r.statusCode >= 400) throw new Error(`MCP ${r.statusCode}: ${text.slice(0, 200)}`);
    return { headers: r.headers, contentType: String(r.headers["content-type"] ?? ""), text };
  };
  const init = await post({}, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "bench-lean", version: "1" } } });
  const id = init.headers["mcp-session-id"];
  if (typeof id !== "string") throw new Error("initialize answered no mcp-session-id");
  const negotiated = (messageOf(init.contentType, init.text).result as { protocolVersion?: string } | undefined)?.protocolVersion ?? LATEST_PROTOCOL_VERSION;
  const session = { "mcp-session-id": id, "mcp-protocol-version": negotiated };
  await post(session, { jsonrpc: "2.0", method: "notifications/initialized" });
  let next = 1;
  return {
    id,
    async callTool(name, args) {
      const r = await post(session, { jsonrpc: "2.0", id: next++, method: "tools/call", params: { name, arguments: args } });
      const m = messageOf(r.contentType, r.text);
      if (m.error) throw new Error(`tools/call: ${m.error.message}`);
      return m.result ?? {};
    },
  };
}
