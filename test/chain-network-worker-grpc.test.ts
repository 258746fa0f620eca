// A relayer worker reaching the chain over Sui's gRPC API: CHAIN_GRPC_URL set (and no CHAIN_RPC_URL at all) makes
// `memrelay worker` speak gRPC-web to the node for every chain path: its actor host records each memory's blob, its
// gateway recalls (Seal's key-server reads) and restores from the blobs it lists, and its MCP sidecar makes agents'
// decrypt sessions through it. The node is the local ledger's RPC listener, on a network named "memnet", which
// answers both APIs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { TOOL } from "../schemas/mcp-tools.ts";
import { freePort } from "./support/free-port.ts";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { startWorkerProcess, type WorkerProcess } from "./support/worker-process.ts";
import { MemrelayClient } from "../client/memrelay-client.ts";
import { cachedSessionProvider } from "../client/session-cache.ts";

let t: TestStack;
let worker: WorkerProcess | undefined;
let grpcEnv: Record<string, string>;
beforeAll(async () => {
  t = await startTestStack({ CHAIN_NETWORK: "memnet" }, { roles: { gateway: true, projections: true, actors: false } });
  const { CHAIN_RPC_URL: _jsonRpc, ...env } = t.stack.workerEnv;
  grpcEnv = { ...env, CHAIN_GRPC_URL: t.stack.encryptionStack.grpcUrl, SIDECAR_URL: `http://127.0.0.1:${await freePort()}` };
  worker = await startWorkerProcess(grpcEnv, "gateway,actors");
}, 120_000);
afterAll(async () => {
  worker?.kill("SIGTERM");
  await t?.teardown();
});

describe("a worker on a network reached over gRPC", () => {
  it("says so in /config", async () => {
    const config = (await (await fetch(`http://127.0.0.1:${worker!.port}/config`)).json()) as Record<string, unknown>;
    expect(config).toMatchObject({ network: "memnet", chainTransport: "grpc", chainGrpcUrl: t.stack.encryptionStack.grpcUrl, chainRpcUrl: "" });
  });

  it("remembers, recalls and restores with every chain call over gRPC", async () => {
    const who = await t.stack.createIdentity();
    // The client's own session is made over JSON-RPC (a client's choice); the worker has no JSON-RPC URL at all.
    const session = cachedSessionProvider({ delegateSecretKey: who.delegateSecretKey, packageId: t.stack.encryptionStack.packageId, rpcUrl: t.stack.encryptionStack.rpcUrl });
    const client = new MemrelayClient({ baseUrl: `http://127.0.0.1:${worker!.port}`, delegatePrivateKey: who.delegateSecretKey, accountId: who.accountId, encryptionSession: session });
    const { job_id } = await client.remember("The ferry to the island leaves at seven when the tide is high", "harbour");
    const job = await client.waitForJob(job_id);
    expect(job.status).toBe("done");
    expect(await t.stack.chain.getBlob(who.owner, job.blob_id!)).toMatchObject({ owner: who.owner, namespace: "harbour" });
    expect((await client.recall("ferry island tide", { namespace: "harbour" })).results[0]?.text).toContain("ferry");

    // the index lost, then restored from the blobs the worker lists on the chain over gRPC
    await t.stack.db.query("DELETE FROM memories WHERE owner = $1 AND namespace = $2", [who.owner, "harbour"]);
    expect((await client.recall("ferry island tide", { namespace: "harbour" })).results).toHaveLength(0);
    expect(await client.restore("harbour")).toMatchObject({ restored: 1, failed: 0 });
    expect((await client.recall("ferry island tide", { namespace: "harbour" })).results[0]?.text).toContain("ferry");
  });

  it("serves an agent's MCP recall from a sidecar whose decrypt sessions are made over gRPC", async () => {
    const id = await t.stack.createIdentity();
    const sidecar = await startWorkerProcess(grpcEnv, "mcp", { MEMORY_RELAYER_URL: `http://127.0.0.1:${worker!.port}` });
    const headers = { authorization: `Bearer ${Buffer.from(id.delegateSecretKey).toString("hex")}`, "x-memory-account-id": id.accountId };
    const client = new Client({ name: "memrelay-test", version: "1.0.0" });
    const textOf = (r: unknown) => ((r as { content: { text: string }[] }).content ?? []).map((c) => c.text).join("\n");
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${worker!.port}/api/mcp`), { requestInit: { headers } }));
      expect(textOf(await client.callTool({ name: TOOL.remember, arguments: { text: "The lighthouse lamp is lit at dusk", namespace: "coast" } }))).toMatch(/^Remembered/);
      expect(textOf(await client.callTool({ name: TOOL.recall, arguments: { query: "when is the lamp lit?", namespace: "coast" } }))).toContain("lighthouse lamp");
    } finally {
      await client.close().catch(() => undefined);
      sidecar.kill("SIGTERM");
    }
  }, 60_000);

  it("refuses to start when CHAIN_GRPC_URL does not answer, naming it", async () => {
    const dead = "http://127.0.0.1:9";
    await expect(startWorkerProcess({ ...grpcEnv, CHAIN_GRPC_URL: dead }, "actors")).rejects.toThrow(
      new RegExp(`worker exited with 2: .*CHAIN_GRPC_URL=${dead}: the Sui node's gRPC API does not answer`, "s"),
    );
  });
});
