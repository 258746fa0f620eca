// Black-box, issue 31 item 4 (MemWal #967: a 12-item bulk accepted, then none of it stored and no item failed): every
// item of a bulk request ends done or failed with its reason, also when a limit or the storage side refuses part of
// it. The client polls the bulk status as the SDK's rememberBulkAndWait does and sees each item's final state; none is
// missing, none stays running. Real NATS, Postgres, chain ledger, blob store; the actor host is a worker process.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { DiscardPolicy } from "@nats-io/jetstream";
import { startStackWithoutActorHost, type TestStack } from "./support/stack.ts";
import { startWorkerProcess, type WorkerProcess } from "./support/worker-process.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";
import { STREAMS } from "../eventlog/subjects.ts";

let t: TestStack;
let client: MemrelayClient;
beforeAll(async () => void ({ t, client } = await startStackWithoutActorHost()), 120_000);
afterAll(async () => t?.teardown());

type Item = { job_id: string; status: string; blob_id?: string; error?: string };

/** Polls the bulk status until every item is done or failed (what rememberBulkAndWait waits for). */
async function finalStates(jobIds: string[], timeoutMs = 120_000): Promise<Item[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { results } = (await client.bulkStatus(jobIds)) as { results: Item[] };
    if (results.every((r) => r.status === "done" || r.status === "failed")) return results;
    if (Date.now() > deadline) throw new Error(`items still not final: ${JSON.stringify(results.filter((r) => r.status !== "done" && r.status !== "failed"))}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

async function stop(worker: WorkerProcess): Promise<void> {
  if (worker.exitCode !== null || worker.signalCode !== null) return;
  const exited = new Promise((r) => worker.once("exit", r));
  worker.kill("SIGTERM");
  await exited;
}

const twelve = (tag: string) => Array.from({ length: 12 }, (_, i) => ({ text: `${tag} item ${i}: the lighthouse keeper logs ship ${i}`, namespace: tag }));

describe("a 12-item bulk whose items a limit or the storage side refuses in part", () => {
  it("work queue full after 5 commands: the 7 refused items fail at once with the reason, the 5 queued end done", async () => {
    const info = await t.stack.log.jsm.streams.info(STREAMS.commands);
    await t.stack.log.jsm.streams.update(STREAMS.commands, { max_msgs: 5, discard: DiscardPolicy.New });
    let r;
    try {
      r = await client.rememberBulk(twelve("queuelimit"));
    } finally {
      await t.stack.log.jsm.streams.update(STREAMS.commands, { max_msgs: info.config.max_msgs, discard: info.config.discard });
    }
    expect(r.job_ids).toHaveLength(12);
    expect(r.total).toBe(12);
    // Before any actor host runs: the refused items are already final, with the queue's reason; none is unknown.
    const early = (await client.bulkStatus(r.job_ids)).results as Item[];
    expect(early.filter((x) => x.status === "not_found")).toEqual([]);
    const refused = early.filter((x) => x.status === "failed");
    expect(refused).toHaveLength(7);
    for (const x of refused) expect(x.error).toMatch(/^not queued: .*maximum messages/);

    const worker = await startWorkerProcess(t.stack.workerEnv, "actors");
    try {
      const final = await finalStates(r.job_ids);
      expect(final.map((x) => x.job_id)).toEqual(r.job_ids);
      expect(final.filter((x) => x.status === "done")).toHaveLength(5);
      expect(final.filter((x) => x.status === "failed").map((x) => x.job_id).sort()).toEqual(refused.map((x) => x.job_id).sort());
      // The five done are recallable; the seven failed were never stored.
      const recalled = await client.recall("lighthouse keeper logs ship", { namespace: "queuelimit", limit: 20 });
      expect(recalled.results).toHaveLength(5);
    } finally {
      await stop(worker);
    }
  }, 240_000);

  it("a publisher that rate-limits after its first quilt: each item ends done or failed with the publisher's answer", async () => {
    const publisher = await rateLimitingPublisher(t.stack.workerEnv.BLOBSTORE_PUBLISHER_URL, 1);
    // Quilts of four: the 12 items make three quilts, of which the publisher takes one.
    const worker = await startWorkerProcess(t.stack.workerEnv, "actors", { QUILT_MAX_PATCHES: "4", QUILT_MAX_WAIT_MS: "2000", BLOBSTORE_PUBLISHER_URL: publisher.url });
    try {
      const r = await client.rememberBulk(twelve("ratelimit"));
      const final = await finalStates(r.job_ids);
      expect(final.map((x) => x.job_id)).toEqual(r.job_ids);
      const done = final.filter((x) => x.status === "done");
      const failed = final.filter((x) => x.status === "failed");
      expect(done.length + failed.length).toBe(12);
      expect(done).toHaveLength(4);
      for (const x of failed) expect(x.error).toMatch(/upload failed after 5 wallet attempts: .*429/);
      expect(publisher.refused()).toBeGreaterThan(0);
      const recalled = await client.recall("lighthouse keeper logs ship", { namespace: "ratelimit", limit: 20 });
      expect(recalled.results.map((x) => x.blob_id).sort()).toEqual(done.map((x) => x.blob_id).sort());
    } finally {
      await stop(worker);
      await publisher.close();
    }
  }, 240_000);
});

/** A publisher in front of the blob store that forwards the first `allowed` stores and answers 429 to every other. */
async function rateLimitingPublisher(target: string, allowed: number): Promise<{ url: string; refused(): number; close(): Promise<void> }> {
  let forwarded = 0;
  let refused = 0;
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (forwarded >= allowed) {
      refused++;
      res.writeHead(429, { "content-type": "application/json" }).end(JSON.stringify({ error: "rate limited: too many stores" }));
      return;
    }
    forwarded++;
    const answer = await fetch(target + req.url, { method: req.method, body: Buffer.concat(chunks), headers: { "content-type": req.headers["content-type"] ?? "application/octet-stream" } });
    res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" }).end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, refused: () => refused, close: () => new Promise((r) => (server.closeAllConnections(), server.close(() => r()))) };
}
