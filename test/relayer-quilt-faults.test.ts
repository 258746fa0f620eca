// Fault test, MEMRELAY_STORE_MODE=quilt: the actor host is killed with -9 while a quilt is half gathered (its jobs'
// ciphertexts wait in the quilt writer, not yet stored). After a restart every accepted memory ends done, recorded on
// chain exactly once, each under a patch id of a quilt that was stored. Real NATS, Postgres, chain ledger, blob store;
// the actor host is a `memrelay worker` child process.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
