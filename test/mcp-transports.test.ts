// Black-box: the agent transports through the relayer (/api/mcp, /api/mcp/sse) to the MCP sidecar, driven by the MCP
// SDK's own client over Streamable HTTP and legacy SSE, against the started stack. Plus bad input: wrong and revoked
// credentials, malformed JSON-RPC, unknown tools, wrong argument types, oversized arguments, too many sessions. The
// session rule (the session id, bound to the credential and address that opened it, is the capability) and the tool
// names a MemWal client sees.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { Agent, request } from "undici";
import { startTestStack, type TestStack } from "./support/stack.ts";
import type { DevIdentity } from "../runtime/local-stack.ts";
import { removeDelegateKey } from "../adapters/chain/local/accounts.ts";
import { MEMWAL_TOOL, TOOL } from "../schemas/mcp-tools.ts";
import { startWorkerProcess } from "./support/worker-process.ts";
import { freePort } from "./support/free-port.ts";

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ MCP_MAX_SESSIONS_PER_IP: "6", MCP_MAX_NEW_SESSIONS_PER_IP_PER_MIN: "1000" });
}, 120_000);
afterAll(async () => t?.teardown());

const bearer = (id: DevIdentity) => ({ authorization: `Bearer ${Buffer.from(id.delegateSecretKey).toString("hex")}`, "x-memory-account-id": id.accountId });

async function connect(id: DevIdentity, kind: "streamable" | "sse"): Promise<Client> {
  const headers = bearer(id);
  const url = new URL(kind === "streamable" ? "/api/mcp" : "/api/mcp/sse", t.stack.relayerUrl);
  const transport = kind === "streamable"
    ? new StreamableHTTPClientTransport(url, { requestInit: { headers } })
    : new SSEClientTransport(url, { requestInit: { headers }, eventSourceInit: { fetch: (u, init) => fetch(u, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }) } });
  const client = new Client({ name: "memrelay-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

const textOf = (r: unknown) => ((r as { content: { type: string; text: string }[] }).content ?? []).map((c) => c.text).join("\n");

async function rpc(body: unknown, headers: Record<string, string>, path = "/api/mcp") {
  const res = await request(t.stack.relayerUrl + path, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text.startsWith("{") ? JSON.parse(text) : text };
}

const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "raw", version: "1" } } };

describe.each(["streamable", "sse"] as const)("MCP over %s", (kind) => {
  it("lists the six relayer tools with input schemas, remembers, recalls, analyzes, restores and reports health", async () => {
    const id = await t.stack.createIdentity();
    const client = await connect(id, kind);
    try {
      const tools = await client.listTools();
      expect(tools.tools.map((x) => x.name).sort()).toEqual([TOOL.analyze, TOOL.health, TOOL.recall, TOOL.remember, TOOL.rememberBulk, TOOL.restore].sort());
      expect(tools.tools.find((x) => x.name === TOOL.recall)?.inputSchema.properties).toHaveProperty("query");

      const remembered = await client.callTool({ name: TOOL.remember, arguments: { text: `I keep bees in ${kind} land`, namespace: "garden" } });
      expect(remembered.isError).toBeFalsy();
      expect(textOf(remembered)).toMatch(/^Remembered in namespace "garden"/);
      const bulk = await client.callTool({ name: TOOL.rememberBulk, arguments: { facts: ["My hives are painted blue", "The queen is named Ada"], namespace: "garden" } });
      expect(textOf(bulk)).toMatch(/Remembered 2 of 2 facts/);

      const recalled = await client.callTool({ name: TOOL.recall, arguments: { query: "what do I keep?", namespace: "garden", limit: 3 } });
      expect(textOf(recalled)).toContain(`I keep bees in ${kind} land`);
      expect(textOf(recalled)).not.toMatch(/^\s*[{[]/); // text for the agent, not a JSON dump

      const analyzed = await client.callTool({ name: TOOL.analyze, arguments: { text: "I moved to Lisbon last year. My sister works as a pilot.", namespace: "life" } });
      expect(textOf(analyzed)).toMatch(/^Extracted (\d+) new facts?; \1 stored in namespace "life"/);
      // analyze waited for its facts to be stored: a recall right after finds them (MemWal #386)
      expect(textOf(await client.callTool({ name: TOOL.recall, arguments: { query: "Where did I move?", namespace: "life", limit: 5 } }))).toContain("Lisbon");

      const restored = await client.callTool({ name: TOOL.restore, arguments: { namespace: "garden", limit: 100_000 } });
      expect(textOf(restored)).toMatch(/restored 0, skipped 3, failed 0, total 3, truncated false/);

      expect(textOf(await client.callTool({ name: TOOL.health, arguments: {} }))).toMatch(/Memory service ok, version/);
    } finally {
      await client.close();
    }
  }, 60_000);
});

/** A legacy SSE stream opened with `headers`: the endpoint it announced, and the JSON-RPC messages it delivers. */
async function openSseStream(headers: Record<string, string>) {
  const res = await fetch(new URL("/api/mcp/sse", t.stack.relayerUrl), { headers: { ...headers, accept: "text/event-stream" } });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  const nextEvent = async (): Promise<{ event?: string; data: string }> => {
    for (;;) {
      const end = buffered.indexOf("\n\n");
      if (end >= 0) {
        const chunk = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (chunk.startsWith(":")) continue; // keepalive
        const lines = chunk.split("\n");
        return { event: lines.find((l) => l.startsWith("event:"))?.slice(6).trim(), data: lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n") };
      }
      const { value, done } = await reader.read();
      if (done) throw new Error("the stream ended");
      buffered += decoder.decode(value, { stream: true });
    }
  };
  const endpoint = await nextEvent();
  expect(endpoint.event).toBe("endpoint");
  return { postUrl: new URL(endpoint.data, t.stack.relayerUrl).toString(), next: async () => JSON.parse((await nextEvent()).data) as { id: number; result?: any }, close: () => reader.cancel() };
}

describe("the legacy SSE session rule: the session id, bound to the credential and address that opened it, is the capability", () => {
  it("accepts messages without a credential (as the MCP SSE transport and MemWal's package send them), refuses another credential or another address", async () => {
    const id = await t.stack.createIdentity();
    const stranger = await t.stack.createIdentity();
    const sse = await openSseStream(bearer(id));
    const post = (body: unknown, headers: Record<string, string> = {}, dispatcher?: Agent) =>
      request(sse.postUrl, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body), dispatcher });
    const otherAddress = new Agent({ localAddress: "127.0.0.2" });
    try {
      const init = await post(initialize);
      expect(init.statusCode).toBe(202);
      await init.body.dump();
      expect((await sse.next()).result.serverInfo.name).toBe("memrelay");
      await (await post({ jsonrpc: "2.0", method: "notifications/initialized" })).body.dump();
      const list = await post({ jsonrpc: "2.0", id: 2, method: "tools/list" });
      expect(list.statusCode).toBe(202);
      await list.body.dump();
      expect((await sse.next()).result.tools.map((x: { name: string }) => x.name)).toContain(TOOL.recall);

      const foreign = await post({ jsonrpc: "2.0", id: 3, method: "tools/list" }, bearer(stranger));
      expect(foreign.statusCode).toBe(403);
      expect(((await foreign.body.json()) as any).error.message).toMatch(/opened with another credential/);
      const elsewhere = await post({ jsonrpc: "2.0", id: 4, method: "tools/list" }, {}, otherAddress);
      expect(elsewhere.statusCode).toBe(403);
      expect(((await elsewhere.body.json()) as any).error.message).toMatch(/opened from another address/);
      // the same credential is accepted from anywhere
      const same = await post({ jsonrpc: "2.0", id: 5, method: "tools/list" }, bearer(id), otherAddress);
      expect(same.statusCode).toBe(202);
      await same.body.dump();
      expect((await sse.next()).id).toBe(5);
    } finally {
      await sse.close();
      await otherAddress.close();
    }
  });

  it("works with the MCP SDK's SSE client when the credential goes only on the stream", async () => {
    const id = await t.stack.createIdentity();
    const headers = bearer(id);
    const transport = new SSEClientTransport(new URL("/api/mcp/sse", t.stack.relayerUrl), {
      eventSourceInit: { fetch: (u, init) => fetch(u, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }) },
    });
    const client = new Client({ name: "memrelay-test", version: "1.0.0" });
    await client.connect(transport);
    try {
      expect(textOf(await client.callTool({ name: TOOL.remember, arguments: { text: "My bike is green", namespace: "sse" } }))).toMatch(/^Remembered/);
      expect(textOf(await client.callTool({ name: TOOL.recall, arguments: { query: "bike colour", namespace: "sse" } }))).toContain("My bike is green");
    } finally {
      await client.close();
    }
  }, 30_000);

  it("a Streamable HTTP session still wants its credential on every request: missing is 401, another is 403", async () => {
    const id = await t.stack.createIdentity();
    const stranger = await t.stack.createIdentity();
    const opened = await rpc(initialize, bearer(id));
    const session = { "mcp-session-id": String(opened.headers["mcp-session-id"]) };
    const missing = await rpc({ jsonrpc: "2.0", id: 2, method: "tools/list" }, session);
    expect(missing.status).toBe(401);
    expect(missing.body.error.message).toMatch(/^missing credential/);
    const foreign = await rpc({ jsonrpc: "2.0", id: 2, method: "tools/list" }, { ...bearer(stranger), ...session });
    expect(foreign.status).toBe(403);
    expect(foreign.body.error.message).toMatch(/opened with another credential/);
  });
});

describe("tool names for MemWal's clients", () => {
  it("a session opened with x-memwal-account-id serves memwal_remember, _recall, _analyze and _restore (restore's limit up to 500)", async () => {
    const id = await t.stack.createIdentity();
    const headers = { authorization: bearer(id).authorization, "x-memwal-account-id": id.accountId };
    const transport = new SSEClientTransport(new URL("/api/mcp/sse", t.stack.relayerUrl), {
      eventSourceInit: { fetch: (u, init) => fetch(u, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }) },
    });
    const client = new Client({ name: "memwal-bridge", version: "0.0.2" });
    await client.connect(transport);
    try {
      const tools = (await client.listTools()).tools;
      expect(tools.map((x) => x.name).sort()).toEqual([MEMWAL_TOOL.analyze, MEMWAL_TOOL.recall, MEMWAL_TOOL.remember, MEMWAL_TOOL.restore].sort());
      expect(textOf(await client.callTool({ name: MEMWAL_TOOL.remember, arguments: { text: "I play the cello", namespace: "music" } }))).toMatch(/^Remembered in namespace "music"/);
      expect(textOf(await client.callTool({ name: MEMWAL_TOOL.recall, arguments: { query: "which instrument?", namespace: "music" } }))).toContain("I play the cello");
      const restored = await client.callTool({ name: MEMWAL_TOOL.restore, arguments: { namespace: "music", limit: 500 } });
      expect(textOf(restored)).toMatch(/restored 0, skipped 1, failed 0, total 1/);
      const unknown = await client.callTool({ name: TOOL.recall, arguments: { query: "x" } }).catch((e) => e);
      expect(JSON.stringify(unknown)).toMatch(/not found/i);
    } finally {
      await client.close();
    }
  }, 30_000);
});

describe("MCP across a relayer restart", () => {
  it("a Streamable HTTP session lives in the sidecar: it keeps working after the relayer in front of it restarts", async () => {
    const id = await t.stack.createIdentity();
    const port = await freePort();
    const env = { SIDECAR_URL: t.stack.relayer.sidecarUrl(), PORT: String(port) };
    let gateway = await startWorkerProcess(t.stack.workerEnv, "gateway", env);
    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/api/mcp`), { requestInit: { headers: bearer(id) } });
    const client = new Client({ name: "memrelay-test", version: "1.0.0" });
    try {
      await client.connect(transport);
      const session = transport.sessionId;
      expect(textOf(await client.callTool({ name: TOOL.recall, arguments: { query: "anything" } }))).toMatch(/No memories/);
      gateway.kill("SIGKILL");
      await new Promise((r) => gateway.once("exit", r));
      gateway = await startWorkerProcess(t.stack.workerEnv, "gateway", env);
      expect(textOf(await client.callTool({ name: TOOL.recall, arguments: { query: "anything" } }))).toMatch(/No memories/);
      expect(transport.sessionId).toBe(session);
    } finally {
      await client.close().catch(() => undefined);
      gateway.kill("SIGTERM");
    }
  }, 120_000);
});

describe("memory_recall runs the relayer's recall", () => {
  it("answers exactly what POST /api/recall answers: the same memories, order and distances", async () => {
    const id = await t.stack.createIdentity();
    const http = await t.client(id);
    const facts = ["I keep bees on the roof", "My hives are painted blue", "The queen bee is named Ada", "I sell honey on Saturdays"];
    const { job_ids } = await http.rememberBulk(facts.map((text) => ({ text, namespace: "apiary" })));
    for (const j of job_ids) expect((await http.waitForJob(j)).status).toBe("done");
    const client = await connect(id, "streamable");
    try {
      for (const query of ["what about bees?", "honey", "colour of the hives"]) {
        const plain = await http.recall(query, { namespace: "apiary", limit: 3 });
        const lines = plain.results.map((m, i) => `${i + 1}. ${m.text} (relevance ${(1 - m.distance).toFixed(3)})`);
        expect(textOf(await client.callTool({ name: TOOL.recall, arguments: { query, namespace: "apiary", limit: 3 } }))).toBe(lines.join("\n"));
      }
    } finally {
      await client.close();
    }
  }, 60_000);

  it("in a sidecar process of its own that joins the services (worker --roles mcp), and refuses a removed delegate", async () => {
    const id = await t.stack.createIdentity();
    const link = { SIDECAR_URL: `http://127.0.0.1:${await freePort()}` };
    // the gateway picks its own port (a port picked in advance can be taken by then)
    const gateway = await startWorkerProcess(t.stack.workerEnv, "gateway", { ...link, PORT: "0" });
    const gatewayPort = gateway.port!;
    const sidecar = await startWorkerProcess(t.stack.workerEnv, "mcp", { ...link, MEMORY_RELAYER_URL: `http://127.0.0.1:${gatewayPort}` });
    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${gatewayPort}/api/mcp`), { requestInit: { headers: bearer(id) } });
    const client = new Client({ name: "memrelay-test", version: "1.0.0" });
    try {
      await client.connect(transport);
      expect(textOf(await client.callTool({ name: TOOL.remember, arguments: { text: "I collect old maps", namespace: "hobby" } }))).toMatch(/^Remembered/);
      expect(textOf(await client.callTool({ name: TOOL.recall, arguments: { query: "what do I collect?", namespace: "hobby" } }))).toContain("I collect old maps");
      // The recall ran in the sidecar: the gateway's recall route answered nothing.
      const metrics = await (await fetch(`http://127.0.0.1:${gatewayPort}/metrics`)).text();
      expect(metrics).toMatch(/memrelay_http_requests_total\{route="mcp_post",status="200"\}/);
      expect(metrics).not.toMatch(/memrelay_http_requests_total\{route="recall"/);
      await removeDelegateKey(t.stack.chain, { ownerKey: id.ownerSecretKey, publicKey: id.delegatePublicKeyHex, accountId: id.accountId });
      const refused = await client.callTool({ name: TOOL.recall, arguments: { query: "what do I collect?", namespace: "hobby" } });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(/refused this credential \(401\)/);
    } finally {
      await client.close().catch(() => undefined);
      sidecar.kill("SIGTERM");
      gateway.kill("SIGTERM");
    }
  }, 120_000);
});

describe("MCP bad input", () => {
  it("refuses a missing, malformed or unknown credential with 401 and a JSON-RPC error, and opens no session", async () => {
    const id = await t.stack.createIdentity();
    const stranger = await t.stack.createIdentity();
    const cases: Record<string, string>[] = [
      {},
      { authorization: "Bearer not-a-key", "x-memory-account-id": id.accountId },
      { ...bearer(id), "x-memory-account-id": "0x12" },
      { ...bearer(stranger), "x-memory-account-id": id.accountId },
    ];
    for (const headers of cases) {
      const r = await rpc(initialize, headers);
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ jsonrpc: "2.0", error: { code: -32001 } });
      expect(r.headers["mcp-session-id"]).toBeUndefined();
    }
    const sse = await request(t.stack.relayerUrl + "/api/mcp/sse", { headers: { authorization: "Bearer " + "0".repeat(64), "x-memory-account-id": id.accountId } });
    expect(sse.statusCode).toBe(401);
    expect(JSON.parse(await sse.body.text())).toMatchObject({ error: { code: -32001 } });
  });

  it("has no OAuth routes when MCP_OAUTH_DELEGATE_ENCRYPTION_KEY is unset", async () => {
    for (const path of ["/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource"]) {
      expect((await request(t.stack.relayerUrl + path)).statusCode).toBe(404);
    }
    expect((await rpc({}, {}, "/oauth/token")).status).toBe(404);
  });

  it("answers malformed JSON-RPC, requests without a session and unknown sessions with JSON-RPC errors", async () => {
    const id = await t.stack.createIdentity();
    const parse = await rpc("{not json", bearer(id));
    expect(parse.status).toBe(400);
    expect(parse.body).toMatchObject({ error: { code: -32700 } });
    const noSession = await rpc({ jsonrpc: "2.0", id: 2, method: "tools/list" }, bearer(id));
    expect(noSession.status).toBe(400);
    expect(noSession.body.error.message).toMatch(/initialize/);
    const unknown = await rpc({ jsonrpc: "2.0", id: 2, method: "tools/list" }, { ...bearer(id), "mcp-session-id": "00000000-0000-4000-8000-000000000000" });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toMatch(/reconnect/);
  });

  it("reports unknown tools, wrong argument types and oversized arguments as errors, stores nothing, and keeps serving", async () => {
    const id = await t.stack.createIdentity();
    const client = await connect(id, "streamable");
    try {
      const unknown = await client.callTool({ name: "memory_format_disk", arguments: {} }).catch((e) => e);
      expect(JSON.stringify(unknown)).toMatch(/not found|unknown tool/i);
      const wrongType = await client.callTool({ name: TOOL.recall, arguments: { query: 42 } }).catch((e) => e);
      expect(JSON.stringify(wrongType)).toMatch(/invalid|expected string/i);
      const tooMany = await client.callTool({ name: TOOL.rememberBulk, arguments: { facts: Array.from({ length: 21 }, (_, i) => `fact ${i}`) } }).catch((e) => e);
      expect(JSON.stringify(tooMany)).toMatch(/invalid|too big|20/i);
      const huge = await client.callTool({ name: TOOL.remember, arguments: { text: "x".repeat(2_200_000) } }).catch((e) => e);
      expect(JSON.stringify(huge)).toMatch(/413|exceeds|too big|invalid/i);
      // nothing was stored, and the session still works
      const stats = await (await t.client(id)).call<{ memory_count: number }>("POST", "/api/stats", {});
      expect(stats.memory_count).toBe(0);
      expect(textOf(await client.callTool({ name: TOOL.health, arguments: {} }))).toMatch(/ok/);
    } finally {
      await client.close();
    }
  }, 30_000);

  it("refuses a removed delegate on its next call, then refuses the session", async () => {
    const id = await t.stack.createIdentity();
    const client = await connect(id, "streamable");
    try {
      expect(textOf(await client.callTool({ name: TOOL.recall, arguments: { query: "anything" } }))).toMatch(/No memories/);
      await removeDelegateKey(t.stack.chain, { ownerKey: id.ownerSecretKey, publicKey: id.delegatePublicKeyHex, accountId: id.accountId });
      const refused = await client.callTool({ name: TOOL.recall, arguments: { query: "anything" } });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(/refused this credential \(401\)/);
      const after = await client.listTools().catch((e) => e);
      expect(String(after)).toMatch(/401|refused/);
    } finally {
      await client.close().catch(() => undefined);
    }
  }, 30_000);

  it("caps sessions per client address with 429 and Retry-After", async () => {
    const id = await t.stack.createIdentity();
    const open: Client[] = [];
    try {
      let refused: { status: number; headers: Record<string, unknown>; body: any } | undefined;
      for (let i = 0; i < 8 && !refused; i++) {
        const r = await rpc(initialize, bearer(id));
        if (r.status === 429) refused = r;
        else expect(r.status).toBe(200);
      }
      expect(refused?.body).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } });
      expect(refused?.body.error.message).toMatch(/maximum of 6 sessions/);
      expect(refused?.headers["retry-after"]).toBeDefined();
    } finally {
      await Promise.all(open.map((c) => c.close()));
    }
  });
});
