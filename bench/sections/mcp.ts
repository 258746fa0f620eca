// Section: the agent transport. The same recall (one owner's namespace of real memories, limit 10, the same queries)
// as plain signed POST /api/recall and as MCP `memory_recall` calls over Streamable HTTP (one session per concurrent
// client) through the relayer's /api/mcp to the sidecar in its own process. Goal: the MCP path costs at most 1.3× the
// plain route (throughput ratio, one run), with CPU per call per process beside it. The ratio is taken with a lean
// MCP client (bench/lib/lean-mcp.ts) as light as the plain route's; the MCP SDK's client is measured too, beside it.
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createDelegateSession } from "../../adapters/encryption/session.ts";
import { RequestSigner } from "../../client/signer.ts";
import type { Ctx } from "../lib/context.ts";
import { ensureReal, log } from "../lib/context.ts";
import { closedLoop, newPool, signedPost } from "../lib/load.ts";
import { queries } from "../lib/texts.ts";
import { latencyLine, rate, summarize } from "../lib/stats.ts";
import type { SectionResult } from "../lib/report.ts";
import { TOOL } from "../../schemas/mcp-tools.ts";
import { closedOps } from "../lib/closed-ops.ts";
import { freePort } from "../../runtime/tcp-ports.ts";
import { openLeanSession, type LeanSession } from "../lib/lean-mcp.ts";

const CLIENTS = 16;
const NS = "mcp-bench";
export const MCP_TARGET_RATIO = 1.3;

/** CPU ms per call of the service's processes (not the load generator, not other processes on the machine). */
const serviceCpuMs = (w: { shares: { label: string; share: number }[]; seconds: number }, calls: number) =>
  (w.shares.filter((x) => !/^(bench|other processes|machine total)/.test(x.label)).reduce((s, x) => s + x.share, 0) * w.seconds * 1000) / calls;

/** The queries as memory_recall calls, one closed loop per session; a tool error counts as an error. */
const mcpLoop = (sessions: readonly { callTool(name: string, args: Record<string, unknown>): Promise<{ isError?: unknown }> }[], qs: readonly string[]) =>
  closedOps(qs.length, sessions.length, async (i, worker) => {
    const r = await sessions[worker]!.callTool(TOOL.recall, { query: qs[i], namespace: NS, limit: 10 });
    if (r.isError) throw new Error("memory_recall answered a tool error");
  });

/** The SDK client behind the same call shape as the lean one. */
const sdkSession = (c: Client) => ({
  callTool: async (name: string, args: Record<string, unknown>) => ({ isError: (await c.callTool({ name, arguments: args })).isError }),
});

export async function mcpSection(ctx: Ctx): Promise<SectionResult> {
  const started = new Date();
  const t0 = performance.now();
  const env = await ctx.env(["gateway", "projections", "actors"]);
  const who = await ctx.owner();
  await ensureReal(env, who, NS, ctx.n(1_000, 200), 80_000);
  await env.stopRole("actors");
  // The gateway forwards /api/mcp to a sidecar process of its own, sharing a token.
  const token = randomBytes(24).toString("hex");
  const sidecarUrl = `http://127.0.0.1:${await freePort()}`;
  await env.stopRole("gateway");
  await env.startRole("gateway", { SIDECAR_URL: sidecarUrl, SIDECAR_AUTH_TOKEN: token, RATE_LIMIT_DISABLED: "true" });
  await env.startRole("mcp", { SIDECAR_URL: sidecarUrl, SIDECAR_AUTH_TOKEN: token, MEMORY_RELAYER_URL: env.relayerUrl, MCP_MAX_SESSIONS_PER_IP: String(CLIENTS * 2), MCP_MAX_NEW_SESSIONS_PER_IP_PER_MIN: String(CLIENTS * 4) });

  const secret = Buffer.from(who.delegateSecretKeyHex, "hex");
  const session = await createDelegateSession({ delegateSecretKey: secret, packageId: env.workerEnv.MEMORY_PACKAGE_ID, rpcUrl: env.workerEnv.CHAIN_RPC_URL, ttlMin: 30 });
  const signer = new RequestSigner(secret, who.accountId);
  const n = ctx.n(2_000, 300);
  const qs = queries(n, 0);

  // plain route
  const pool = newPool(env.relayerUrl, CLIENTS);
  const plainReq = (q: string) => signedPost(signer, "/api/recall", { query: q, namespace: NS, limit: 10 }, { "x-encryption-session": session.header });
  await closedLoop(pool, queries(200, 1_000).map(plainReq), CLIENTS, { expect: 200 });
  await ctx.quiet();
  log(`mcp: plain POST /api/recall: ${n} calls from ${CLIENTS} clients ...`);
  const plain = await ctx.cpuWindow(() => closedLoop(pool, qs.map(plainReq), CLIENTS, { expect: 200, maxSeconds: 120 }));
  await pool.close();
  const plainN = plain.result.latencies.length;
  const plainS = summarize(plain.result.latencies);
  log(`  ${rate(plainN / plain.result.seconds, " calls/s")}, ${latencyLine(plainS)}; CPU ${plain.cpu}`);

  // MCP sessions: the lean client (the target's measurement), then the SDK's client.
  const headers = { authorization: `Bearer ${who.delegateSecretKeyHex}`, "x-memory-account-id": who.accountId };
  const leanPool = newPool(env.relayerUrl, CLIENTS);
  const lean: LeanSession[] = await Promise.all(Array.from({ length: CLIENTS }, () => openLeanSession(leanPool, "/api/mcp", headers)));
  const sdk = await Promise.all(Array.from({ length: CLIENTS }, async () => {
    const c = new Client({ name: "bench", version: "1" });
    await c.connect(new StreamableHTTPClientTransport(new URL("/api/mcp", env.relayerUrl), { requestInit: { headers } }));
    return c;
  }));
  try {
    const measure = async (label: string, sessions: Parameters<typeof mcpLoop>[0]) => {
      await mcpLoop(sessions, queries(200, 1_000));
      await ctx.quiet();
      log(`mcp: memory_recall over Streamable HTTP, ${label}: ${n} calls from ${CLIENTS} sessions ...`);
      const w = await ctx.cpuWindow(() => mcpLoop(sessions, qs));
      const calls = w.result.latencies.length;
      const r = { w, calls, s: summarize(w.result.latencies), rate: calls / w.result.seconds, errors: w.result.errors, cpuRatio: serviceCpuMs(w, calls) / serviceCpuMs(plain, plainN) };
      log(`  ${rate(r.rate, " calls/s")}, ${latencyLine(r.s)}, ${r.errors} errors; CPU ${w.cpu}; cost ratio ${(plainRate / r.rate).toFixed(2)}×`);
      return r;
    };
    const plainRate = plainN / plain.result.seconds;
    const m = await measure("lean client", lean);
    const k = await measure("the MCP SDK's client", sdk.map(sdkSession));
    const ratio = plainRate / m.rate;
    const sdkRatio = plainRate / k.rate;
    return {
      name: "mcp",
      title: "Agent transport: memory_recall over MCP vs the plain recall route",
      startedAt: started.toISOString(),
      seconds: (performance.now() - t0) / 1000,
      rows: [
        { metric: `plain POST /api/recall (${CLIENTS} clients)`, measured: `${rate(plainRate, " calls/s")}; ${latencyLine(plainS)}` },
        { metric: "  CPU ms per call, per process", measured: plain.perOp(plainN) },
        { metric: `MCP memory_recall, Streamable HTTP, lean client (${CLIENTS} sessions)`, measured: `${rate(m.rate, " calls/s")}; ${latencyLine(m.s)}; ${m.errors} errors` },
        { metric: "  CPU ms per call, per process", measured: m.w.perOp(m.calls) },
        { metric: `MCP memory_recall, Streamable HTTP, the MCP SDK's client (${CLIENTS} sessions)`, measured: `${rate(k.rate, " calls/s")}; ${latencyLine(k.s)}; ${k.errors} errors; ${sdkRatio.toFixed(2)}× the plain route's time per call, service CPU ${k.cpuRatio.toFixed(2)}×` },
        { metric: "  CPU ms per call, per process", measured: k.w.perOp(k.calls) },
        { metric: "MCP ÷ plain: time per call at equal concurrency (throughput ratio, lean clients both ways)", target: `≤ ${MCP_TARGET_RATIO}×`, measured: `${ratio.toFixed(2)}×`, pass: ratio <= MCP_TARGET_RATIO && m.errors === 0 },
        { metric: "MCP ÷ plain: service CPU per call (gateway, sidecar, Postgres, NATS, services)", target: `≤ ${MCP_TARGET_RATIO}×`, measured: `${m.cpuRatio.toFixed(2)}× (${serviceCpuMs(m.w, m.calls).toFixed(2)} vs ${serviceCpuMs(plain, plainN).toFixed(2)} ms)`, pass: m.cpuRatio <= MCP_TARGET_RATIO },
      ],
      notes: [
        `One owner's namespace of ${ctx.n(1_000, 200)} real memories; the same ${n} queries, limit 10, each way. Plain: signed requests with an encryption session (undici pool). MCP: one Streamable HTTP session per client, through the relayer (gateway worker) to the sidecar (\`memrelay worker --roles mcp\` joining the services), which runs the recall route's steps in its own process (mcp/sidecar/local-recall.ts: owner lookup, parser, recallMemories) with a cached encryption session, and answers each tool call with one JSON body written straight on its node:http response (mcp/sidecar/direct-call-transport.ts); the relayer forwards over kept-alive connections (gateway/relayer/sidecar-upstream.ts).`,
        "So an MCP call is the plain call's recall plus one JSON-RPC hop through the gateway and the sidecar, without the plain route's signature check and nonce (the sidecar holds the key): the ratio is that hop's cost.",
        "The load generator runs on the same 2 cores, so its own CPU slows whatever it measures. The target's ratio is taken with clients of equal weight: signed POSTs over an undici pool for the plain route, Streamable HTTP POSTs over an undici pool for MCP (bench/lib/lean-mcp.ts). The MCP SDK's client (the compatibility judge in the tests) costs the load generator more per call; its row shows the same service path measured through it.",
      ],
      data: { clients: CLIENTS, calls: n, plain: { rate: plainRate, ...plainS }, mcp: { rate: m.rate, errors: m.errors, ...m.s }, mcpSdk: { rate: k.rate, errors: k.errors, ...k.s }, ratio, sdkRatio, cpuRatio: m.cpuRatio },
    };
  } finally {
    await Promise.all(sdk.map((c) => c.close().catch(() => undefined)));
    await leanPool.close();
    await env.stopRole("mcp");
  }
}
