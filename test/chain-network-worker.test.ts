// A relayer worker on a "real" network: CHAIN_NETWORK other than localnet makes `memrelay worker` reach the chain
// through a Sui node's JSON-RPC (CHAIN_RPC_URL, MEMORY_PACKAGE_ID, MEMORY_REGISTRY_ID) instead of the ledger on NATS.
// Here the node is the local ledger's RPC, on a network named "memnet": the worker's actor host records each memory's
// blob through it, and its restore lists them through it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { startWorkerProcess } from "./support/worker-process.ts";

let t: TestStack;
let worker: ChildProcess | undefined;
beforeAll(async () => {
  t = await startTestStack({ CHAIN_NETWORK: "memnet" }, { roles: { gateway: true, projections: true, actors: false } });
  worker = await startWorkerProcess(t.stack.workerEnv, "actors");
}, 120_000);
afterAll(async () => {
  worker?.kill("SIGTERM");
  await t?.teardown();
});

describe("a worker on a network reached over JSON-RPC", () => {
  it("records memories' blobs through the node and restores from the blobs it lists there", async () => {
    expect(t.stack.workerEnv.CHAIN_NETWORK).toBe("memnet");
    const who = await t.stack.createIdentity();
    const client = await t.client(who);
    const { job_id } = await client.remember("The lighthouse keeper feeds the gulls at dawn", "coast");
    const job = await client.waitForJob(job_id);
    expect(job.status).toBe("done");
    const blob = await t.stack.chain.getBlob(who.owner, job.blob_id!);
    expect(blob).toMatchObject({ owner: who.owner, namespace: "coast" });

    // the index lost (as with a lost database), then restored from the chain through the worker, which lists the
    // owner's blobs through the RPC
    await t.stack.db.query("DELETE FROM memories WHERE owner = $1 AND namespace = $2", [who.owner, "coast"]);
    expect((await client.recall("lighthouse gulls", { namespace: "coast" })).results).toHaveLength(0);
    const restored = await client.restore("coast");
    expect(restored).toMatchObject({ restored: 1, failed: 0 });
    expect((await client.recall("lighthouse gulls", { namespace: "coast" })).results[0]?.text).toContain("lighthouse");
  });
});
