// Fault test, MEMRELAY_STORE_MODE=quilt: the actor host is killed with -9 while a quilt is half gathered (its jobs'
// ciphertexts wait in the quilt writer, not yet stored). After a restart every accepted memory ends done, recorded on
// chain exactly once, each under a patch id of a quilt that was stored. Real NATS, Postgres, chain ledger, blob store;
// the actor host is a `memrelay worker` child process.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { startStackWithoutActorHost, type TestStack } from "./support/stack.ts";
import { startWorkerProcess } from "./support/worker-process.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";
import { parseQuiltPatchId } from "../adapters/blobs/quilt-codec.ts";

async function until(cond: () => Promise<boolean>, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const JOBS = 100;
const PATCHES = 40;

describe("actor host killed with -9 with a quilt half gathered", () => {
  let t: TestStack;
  let client: MemrelayClient;
  let owner: string;
  beforeAll(async () => void ({ t, client, owner } = await startStackWithoutActorHost()), 120_000);
  afterAll(async () => t?.teardown());

  it("ends every job done, recorded once, under a patch of a stored quilt", async () => {
    const jobIds: string[] = [];
    for (let i = 0; i < JOBS / 20; i++) {
      const r = await client.rememberBulk(Array.from({ length: 20 }, (_, k) => ({ text: `quilt crash fact ${i * 20 + k}`, namespace: "qcrash" })));
      jobIds.push(...r.job_ids);
    }
    const doneRows = async () => (await t.stack.db.query("SELECT job_id::text AS id, blob_id FROM remember_jobs WHERE owner = $1 AND status = 'done'", [owner])).rows as { id: string; blob_id: string }[];
    // Two full quilts go out at once; the last 20 jobs wait in a third quilt that only a full count or 20 s would send.
    const first = await startWorkerProcess(t.stack.workerEnv, "actors", { MEMRELAY_STORE_MODE: "quilt", QUILT_MAX_PATCHES: String(PATCHES), QUILT_MAX_WAIT_MS: "20000" });
    let beforeKill: { id: string; blob_id: string }[];
    try {
      await until(async () => (await doneRows()).length >= 2 * PATCHES, 60_000, "the two full quilts' jobs to finish");
      await new Promise((r) => setTimeout(r, 1_000));
      beforeKill = await doneRows();
      // Still two quilts' worth: the rest are gathered, unsent.
      expect(beforeKill.length).toBe(2 * PATCHES);
    } finally {
      first.kill("SIGKILL");
    }
    const quiltsBefore = new Set(beforeKill.map((r) => parseQuiltPatchId(r.blob_id)?.quiltId));
    expect(quiltsBefore.size).toBe(2);

    const second = await startWorkerProcess(t.stack.workerEnv, "actors", { MEMRELAY_STORE_MODE: "quilt", QUILT_MAX_PATCHES: String(PATCHES), QUILT_MAX_WAIT_MS: "200" });
    try {
      await until(async () => (await doneRows()).length === JOBS, 120_000, `all ${JOBS} jobs to be done`);
      const after = await doneRows();
      expect(new Set(after.map((r) => r.id))).toEqual(new Set(jobIds));
      // The jobs done before the kill keep their blob ids; the gathered ones went out in new quilts after the restart.
      const byId = new Map(after.map((r) => [r.id, r.blob_id]));
      for (const r of beforeKill) expect(byId.get(r.id)).toBe(r.blob_id);
      const resumed = after.filter((r) => !beforeKill.some((b) => b.id === r.id));
      expect(resumed).toHaveLength(JOBS - 2 * PATCHES);
      for (const r of resumed) {
        const quilt = parseQuiltPatchId(r.blob_id)?.quiltId;
        expect(quilt).toBeDefined();
        expect(quiltsBefore.has(quilt)).toBe(false);
      }
      expect(new Set(after.map((r) => r.blob_id)).size).toBe(JOBS);
      // Recorded exactly once: one blob object on chain per job, one index row per job.
      const objects = await t.stack.chain.listBlobs(owner, { namespace: "qcrash", limit: 5000 });
      expect(objects.length).toBe(JOBS);
      expect(new Set(objects.map((o) => o.blobId))).toEqual(new Set(after.map((r) => r.blob_id)));
      const indexed = async () => Number((await t.stack.db.query("SELECT count(*) FROM memories WHERE owner = $1 AND namespace = 'qcrash'", [owner])).rows[0].count);
      await until(async () => (await indexed()) >= JOBS, 60_000, "the memory index to hold every job");
      expect(await indexed()).toBe(JOBS);
    } finally {
      second.kill("SIGTERM");
    }
  }, 300_000);
});

/**
 * A publisher in front of the blob store that stores each quilt it is sent, then never answers: the quilt is stored,
 * its jobs never learn their patch ids. `stored` resolves with the first quilt's id.
 */
async function publisherThatStoresThenHangs(target: string): Promise<{ url: string; stored: Promise<string>; close(): Promise<void> }> {
  let signal!: (quiltId: string) => void;
  const stored = new Promise<string>((r) => (signal = r));
  const server: Server = createServer(async (req) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const answer = await fetch(target + req.url, { method: req.method, body: Buffer.concat(chunks), headers: { "content-type": req.headers["content-type"] ?? "application/octet-stream" } });
    const body = (await answer.json()) as { blobStoreResult?: { newlyCreated?: { blobObject: { blobId: string } } } };
    // `res` is never answered: the worker waits on it until it is killed.
    signal(body.blobStoreResult?.newlyCreated?.blobObject.blobId ?? "");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, stored, close: () => new Promise((r) => (server.closeAllConnections(), server.close(() => r()))) };
}

describe("actor host killed with -9 with a quilt in flight (stored, not yet answered)", () => {
  let t: TestStack;
  let client: MemrelayClient;
  let owner: string;
  beforeAll(async () => void ({ t, client, owner } = await startStackWithoutActorHost()), 120_000);
  afterAll(async () => t?.teardown());

  it("ends every job done and recorded once; the lost quilt's patches stay as unrecorded copies", async () => {
    const r = await client.rememberBulk(Array.from({ length: 20 }, (_, k) => ({ text: `in flight fact ${k}`, namespace: "qflight" })));
    const publisher = await publisherThatStoresThenHangs(t.stack.workerEnv.BLOBSTORE_PUBLISHER_URL);
    const first = await startWorkerProcess(t.stack.workerEnv, "actors", { MEMRELAY_STORE_MODE: "quilt", QUILT_MAX_WAIT_MS: "300", BLOBSTORE_PUBLISHER_URL: publisher.url });
    let lostQuilt: string;
    try {
      lostQuilt = await publisher.stored;
    } finally {
      first.kill("SIGKILL");
      await publisher.close();
    }
    expect(lostQuilt).not.toBe("");
    const doneRows = async () => (await t.stack.db.query("SELECT job_id::text AS id, blob_id FROM remember_jobs WHERE owner = $1 AND status = 'done'", [owner])).rows as { id: string; blob_id: string }[];
    expect(await doneRows()).toHaveLength(0);

    const second = await startWorkerProcess(t.stack.workerEnv, "actors", { MEMRELAY_STORE_MODE: "quilt", QUILT_MAX_WAIT_MS: "300" });
    try {
      await until(async () => (await doneRows()).length === r.job_ids.length, 120_000, "every job to be done");
      const after = await doneRows();
      expect(new Set(after.map((x) => x.id))).toEqual(new Set(r.job_ids));
      // Redelivered jobs encrypt and store again: their recorded patches are in new quilts, never the lost one.
      for (const x of after) expect(parseQuiltPatchId(x.blob_id)?.quiltId).not.toBe(lostQuilt);
      const objects = await t.stack.chain.listBlobs(owner, { namespace: "qflight", limit: 100 });
      expect(objects.length).toBe(r.job_ids.length);
      expect(new Set(objects.map((o) => o.blobId))).toEqual(new Set(after.map((x) => x.blob_id)));
      // What does not hold: the lost quilt is stored and its patches are second copies no chain record points to.
      const lost = await fetch(`${t.stack.blobstoreUrl}/v1/quilts/${lostQuilt}/patches`);
      expect(lost.status).toBe(200);
      // (The first quilt gathered up to all 20 jobs, depending on when their embeddings ended.)
      const lostPatches = ((await lost.json()) as unknown[]).length;
      expect(lostPatches).toBeGreaterThan(0);
      expect(lostPatches).toBeLessThanOrEqual(r.job_ids.length);
    } finally {
      second.kill("SIGTERM");
    }
  }, 300_000);
});
