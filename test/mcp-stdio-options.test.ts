// The stdio package's command line (spec table): flags over variables, presets, explicit URLs over presets, modes,
// the tool-side variables' lower bounds; and the sidecar watchdog giving up after its consecutive failures.
import { describe, expect, it } from "vitest";
import { createServer } from "node:http";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { PRESETS, UsageError, parseOptions } from "../mcp/stdio/options.ts";
import { startSidecarWatchdog } from "../gateway/relayer/mcp-routes.ts";
import { silentLogger } from "../config/logger.ts";

describe("memrelay-mcp options", () => {
  it("flags win over variables; explicit URLs win over presets", () => {
    const env = { MEMORY_SERVER_URL: "http://env-relayer:1", MEMORY_WEB_URL: "http://env-web:2", MEMORY_NAMESPACE: "env-ns", MEMORY_CLIENT_LABEL: "env label" };
    expect(parseOptions([], env)).toMatchObject({ mode: "serve", relayerUrl: "http://env-relayer:1", webUrl: "http://env-web:2", namespace: "env-ns", label: "env label" });
    expect(parseOptions(["--relayer", "http://flag:3", "--ns", "flag-ns", "--label=Cursor"], env)).toMatchObject({ relayerUrl: "http://flag:3", namespace: "flag-ns", label: "Cursor" });
    expect(parseOptions(["--local"], {})).toMatchObject({ relayerUrl: PRESETS.local.relayer, webUrl: PRESETS.local.web });
    expect(parseOptions(["--local", "--relayer", "http://other:9"], {})).toMatchObject({ relayerUrl: "http://other:9", webUrl: PRESETS.local.web });
    expect(parseOptions(["--prod"], {}).relayerUrl).toBe(PRESETS.prod.relayer);
    expect(parseOptions([], {})).toMatchObject({ relayerUrl: undefined, namespace: undefined, label: "memrelay MCP" });
  });

  it("modes and tool-side variables", () => {
    expect(parseOptions(["login"], {}).mode).toBe("login");
    expect(parseOptions(["--login"], {}).mode).toBe("login");
    expect(parseOptions(["--logout"], {}).mode).toBe("logout");
    expect(parseOptions(["-h"], {}).mode).toBe("help");
    expect(parseOptions([], { MEMORY_MCP_DEBUG: "1", MEMORY_MCP_SSE_IDLE_MS: "499", MEMORY_MCP_CALL_TIMEOUT_MS: "999" })).toMatchObject({ debug: true, idleMs: 30_000, callTimeoutMs: 240_000 });
    expect(parseOptions([], { MEMORY_MCP_SSE_IDLE_MS: "500", MEMORY_MCP_CALL_TIMEOUT_MS: "1000" })).toMatchObject({ idleMs: 500, callTimeoutMs: 1000 });
  });

  it("refuses unknown arguments, missing values and bad URLs", () => {
    expect(() => parseOptions(["--bogus"], {})).toThrow(UsageError);
    expect(() => parseOptions(["--relayer"], {})).toThrow(/needs a value/);
    expect(() => parseOptions(["--relayer", "not a url"], {})).toThrow(/not a URL/);
  });
});

describe("memrelay-mcp over stdio", () => {
  it("answers every request a host sent before closing stdin (a scripted host pipes requests, then EOF)", async () => {
    const home = mkdtempSync(join(tmpdir(), "memrelay-mcp-eof-"));
    // A relayer that takes its time, so the calls are still running when stdin ends.
    const slow = createServer((_req, res) => setTimeout(() => res.writeHead(503, { "content-type": "application/json" }).end('{"error":"busy"}'), 400)).listen(0, "127.0.0.1");
    await new Promise((r) => slow.once("listening", r));
    const relayer = `http://127.0.0.1:${(slow.address() as { port: number }).port}`;
    const credentials = join(home, "credentials.json");
    writeFileSync(credentials, JSON.stringify({ delegatePrivateKey: "ab".repeat(32), delegatePublicKeyHex: "", delegateAddress: "", walletAddress: "", accountId: "0x" + "cd".repeat(32), packageId: "", relayerUrl: relayer, label: "t", createdAt: "", version: 1 }));
    try {
      const requests = [
        { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "script", version: "1" } } },
        { jsonrpc: "2.0", method: "notifications/initialized" },
        { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "memory_recall", arguments: { query: "anything" } } },
        { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "memory_health", arguments: {} } },
      ];
      const child = spawn(process.execPath, ["bin/memrelay-mcp.mjs"], { env: { ...process.env, HOME: home, MEMORY_CREDENTIALS_FILE: credentials }, stdio: ["pipe", "pipe", "ignore"] });
      let out = "";
      child.stdout!.on("data", (d) => (out += d));
      child.stdin!.end(requests.map((m) => JSON.stringify(m)).join("\n") + "\n");
      await new Promise((r) => child.once("exit", r));
      const answers = out.trim().split("\n").map((l) => JSON.parse(l) as { id: number; result?: { isError?: boolean } });
      expect(answers.map((a) => a.id).sort()).toEqual([1, 2, 3]);
      expect(answers.find((a) => a.id === 2)?.result?.isError).toBe(true);
    } finally {
      slow.close();
      rmSync(home, { recursive: true, force: true });
    }
  }, 40_000);
});

/**
 * A relayer's agent transport as the stdio package sees it (Streamable HTTP at /api/mcp), whose memory_recall takes as
 * long as its query says (`wait:<ms>`): what it takes to have calls of different lengths in flight at once.
 */
async function slowToolRelayer(): Promise<{ url: string; close(): void }> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer(async (req, res) => {
    const id = req.headers["mcp-session-id"];
    let transport = typeof id === "string" ? transports.get(id) : undefined;
    if (!transport) {
      const server = new McpServer({ name: "slow", version: "1" });
      server.registerTool("memory_recall", { inputSchema: { query: z.string() } }, async ({ query }) => {
        await new Promise((r) => setTimeout(r, Number(query.slice("wait:".length))));
        return { content: [{ type: "text", text: `answered ${query}` }] };
      });
      const created = new StreamableHTTPServerTransport({ sessionIdGenerator: randomUUID, enableJsonResponse: true, onsessioninitialized: (sid) => void transports.set(sid, created) });
      transport = created;
      await server.connect(transport);
    }
    await transport.handleRequest(req, res);
  }).listen(0, "127.0.0.1");
  await new Promise((r) => http.once("listening", r));
  return { url: `http://127.0.0.1:${(http.address() as { port: number }).port}`, close: () => {
    http.closeAllConnections();
    http.close();
  } };
}

describe("memrelay-mcp's connection to the relayer", () => {
  it("stays open while a call runs: the idle time counts from the last call to finish, with none in flight", async () => {
    const relayer = await slowToolRelayer();
    const home = mkdtempSync(join(tmpdir(), "memrelay-mcp-idle-"));
    const credentials = join(home, "credentials.json");
    writeFileSync(credentials, JSON.stringify({ delegatePrivateKey: "ab".repeat(32), delegatePublicKeyHex: "", delegateAddress: "", walletAddress: "", accountId: "0x" + "cd".repeat(32), packageId: "", relayerUrl: relayer.url, label: "t", createdAt: "", version: 1 }));
    const client = new Client({ name: "host", version: "1.0.0" });
    await client.connect(new StdioClientTransport({
      command: process.execPath,
      args: ["bin/memrelay-mcp.mjs"],
      env: { ...(process.env as Record<string, string>), HOME: home, MEMORY_CREDENTIALS_FILE: credentials, MEMORY_MCP_SSE_IDLE_MS: "500" },
      stderr: "ignore",
    }));
    try {
      expect((await client.callTool({ name: "memory_recall", arguments: { query: "wait:0" } })).isError).toBeFalsy(); // connected
      // The short call ends at ~0.2 s; the long one runs past 0.2 s + the 0.5 s idle time.
      const [short, long] = await Promise.all([
        client.callTool({ name: "memory_recall", arguments: { query: "wait:200" } }),
        client.callTool({ name: "memory_recall", arguments: { query: "wait:1500" } }),
      ]);
      expect(short.isError, JSON.stringify(short)).toBeFalsy();
      expect(long.isError, JSON.stringify(long)).toBeFalsy();
      expect(JSON.stringify(long.content)).toContain("answered wait:1500");
    } finally {
      await client.close();
      relayer.close();
      rmSync(home, { recursive: true, force: true });
    }
  }, 30_000);
});

describe("sidecar watchdog", () => {
  it("gives up once after the configured consecutive failures, and a healthy answer resets the count", async () => {
    let healthy = true;
    const server = createServer((_req, res) => {
      res.statusCode = healthy ? 200 : 503;
      res.end();
    }).listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    let lost = 0;
    const stop = startSidecarWatchdog({ url: () => url, token: "t" }, { url, authToken: "t", watchdogIntervalSecs: 1, watchdogTimeoutSecs: 1, watchdogMaxFailures: 2 }, silentLogger, () => lost++);
    try {
      await new Promise((r) => setTimeout(r, 1_500));
      expect(lost).toBe(0);
      healthy = false;
      await new Promise((r) => setTimeout(r, 3_500));
      expect(lost).toBe(1);
    } finally {
      stop();
      server.close();
    }
  }, 10_000);
});
