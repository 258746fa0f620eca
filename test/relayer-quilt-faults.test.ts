// Fault tests, MEMRELAY_STORE_MODE=quilt: the actor host (a `memrelay worker` child process) is killed with -9 in each
// crash window of a quilt — half gathered (before its seal), sealed (its store about to start or running), stored
// and answered by the publisher but not yet answered to the jobs, stored with only some members' patches recorded —
// and started again. Every accepted memory then ends done, recorded on chain once and indexed once, and the blob
// store's own records show each ciphertext in exactly one stored quilt: every patch of every quilt stored during the
// run is a recorded memory, no quilt blob is registered twice. Real NATS, Postgres, chain ledger, blob store.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { startStackWithoutActorHost, type TestStack } from "./support/stack.ts";
import { startWorkerProcess, type WorkerProcess } from "./support/worker-process.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";
import { parseQuiltPatchId } from "../adapters/blobs/quilt-codec.ts";
import { decodeCommit } from "../eventlog/event-store.ts";
import { JOB_EVENTS } from "../schemas/relayer/remember-job.ts";
import { QUILT_EVENTS } from "../schemas/relayer/quilt.ts";

async function until(cond: () => Promise<boolean>, timeoutMs: number, what: string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const QUILT_ENV = { MEMRELAY_STORE_MODE: "quilt" };

interface DoneRow { id: string; blob_id: string }

/** Stops a worker and waits until it has exited (the next one must not share the work queue with it). */
async function stop(worker: WorkerProcess): Promise<void> {
  if (worker.exitCode !== null || worker.signalCode !== null) return;
  const exited = new Promise((r) => worker.once("exit", r));
  worker.kill("SIGTERM");
  await exited;
}

/** Blob ids of the Walrus objects the blob store has registered (its own read model), one entry per object. */
async function walrusObjects(t: TestStack): Promise<string[]> {
  return (await t.stack.db.query("SELECT blob_id FROM bs_walrus_objects ORDER BY seq")).rows.map((r: { blob_id: string }) => r.blob_id);
}

/** The patch ids of a stored quilt, or null when the blob is not a quilt. */
async function patchesOf(t: TestStack, quiltId: string): Promise<string[] | null> {
  const res = await fetch(`${t.stack.blobstoreUrl}/v1/quilts/${quiltId}/patches`);
  if (res.status === 400) return null;
  expect(res.status).toBe(200);
  return ((await res.json()) as { patch_id: string }[]).map((p) => p.patch_id);
}

/**
 * Waits for every job to be done, then checks the memories against the chain, the index and the blob store: each job
 * recorded once (one blob object on chain, one index row), and the quilts stored since `objectsBefore` hold exactly
 * the recorded patches — no ciphertext in a second quilt, no quilt registered twice.
 */
async function expectEachStoredAndRecordedOnce(t: TestStack, owner: string, namespace: string, jobIds: readonly string[], objectsBefore: readonly string[]): Promise<DoneRow[]> {
  const doneRows = async () => (await t.stack.db.query("SELECT job_id::text AS id, blob_id FROM remember_jobs WHERE owner = $1 AND namespace = $2 AND status = 'done'", [owner, namespace])).rows as DoneRow[];
  await until(async () => (await doneRows()).length === jobIds.length, 120_000, `all ${jobIds.length} jobs to be done`);
  const done = await doneRows();
  expect(new Set(done.map((r) => r.id))).toEqual(new Set(jobIds));
  const recorded = new Set(done.map((r) => r.blob_id));
  expect(recorded.size).toBe(jobIds.length);
  for (const id of recorded) expect(parseQuiltPatchId(id), id).not.toBeNull();

  const objects = await t.stack.chain.listBlobs(owner, { namespace, limit: 5000 });
  expect(objects.length).toBe(jobIds.length);
  expect(new Set(objects.map((o) => o.blobId))).toEqual(recorded);
  const indexed = async () => Number((await t.stack.db.query("SELECT count(*) FROM memories WHERE owner = $1 AND namespace = $2", [owner, namespace])).rows[0].count);
  await until(async () => (await indexed()) >= jobIds.length, 60_000, "the memory index to hold every job");
  expect(await indexed()).toBe(jobIds.length);

  // The blob store's records: the quilts registered since the run began, and every patch they hold.
  const stored = async () => {
    const all = await walrusObjects(t);
    const fresh = all.slice(objectsBefore.length);
    const patches: string[] = [];
    for (const q of new Set(fresh)) patches.push(...((await patchesOf(t, q)) ?? []));
    return { all, fresh, patches };
  };
  await until(async () => (await stored()).patches.filter((p) => recorded.has(p)).length === recorded.size, 30_000, "the blob store to list every recorded patch");
  const { all, fresh, patches } = await stored();
  expect(all.slice(0, objectsBefore.length)).toEqual(objectsBefore);
  // No quilt blob registered twice (a rebuilt quilt is answered alreadyCertified), and nothing but quilts stored.
  expect(new Set(all).size).toBe(all.length);
  for (const q of fresh) expect(await patchesOf(t, q), `blob ${q} is a quilt`).not.toBeNull();
  // Each ciphertext in exactly one stored quilt: the stored patches are the recorded ones, each once.
  expect(patches.length).toBe(recorded.size);
  expect(new Set(patches)).toEqual(recorded);
  return done;
}

/** Quilt events of the run, by type (what the crash windows left in the event log). */
async function quiltEventCounts(t: TestStack): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const consumer = await t.stack.log.js.consumers.get("EVT", { filter_subjects: "evt.quilt.>" });
  const info = await consumer.info();
  const pending = info.num_pending;
  if (pending) {
    const it = await consumer.consume({ max_messages: 256 });
    let seen = 0;
    for await (const m of it) {
      for (const e of decodeCommit(m.data).events) counts[e.type] = (counts[e.type] ?? 0) + 1;
      if (++seen >= pending) break;
    }
  }
  await consumer.delete().catch(() => undefined);
  return counts;
}

describe("actor host killed with -9 with a quilt half gathered", () => {
  const JOBS = 100;
  const PATCHES = 40;
  let t: TestStack;
  let client: MemrelayClient;
  let owner: string;
  beforeAll(async () => void ({ t, client, owner } = await startStackWithoutActorHost()), 120_000);
  afterAll(async () => t?.teardown());

  it("ends every job done, recorded once, in exactly one stored quilt; the unsealed quilt is abandoned, never stored", async () => {
    const objectsBefore = await walrusObjects(t);
    const jobIds: string[] = [];
    for (let i = 0; i < JOBS / 20; i++) {
      const r = await client.rememberBulk(Array.from({ length: 20 }, (_, k) => ({ text: `quilt crash fact ${i * 20 + k}`, namespace: "qcrash" })));
      jobIds.push(...r.job_ids);
    }
    const doneRows = async () => (await t.stack.db.query("SELECT job_id::text AS id, blob_id FROM remember_jobs WHERE owner = $1 AND status = 'done'", [owner])).rows as DoneRow[];
    // Two full quilts go out at once; the last 20 jobs wait in a third quilt that only a full count or 20 s would send.
    const first = await startWorkerProcess(t.stack.workerEnv, "actors", { ...QUILT_ENV, QUILT_MAX_PATCHES: String(PATCHES), QUILT_MAX_WAIT_MS: "20000" });
    let beforeKill: DoneRow[];
    try {
      await until(async () => (await doneRows()).length >= 2 * PATCHES, 60_000, "the two full quilts' jobs to finish");
      await new Promise((r) => setTimeout(r, 1_000));
      beforeKill = await doneRows();
      // Still two quilts' worth: the rest are gathered, unsealed.
      expect(beforeKill.length).toBe(2 * PATCHES);
    } finally {
      first.kill("SIGKILL");
    }
    const quiltsBefore = new Set(beforeKill.map((r) => parseQuiltPatchId(r.blob_id)?.quiltId));
    expect(quiltsBefore.size).toBe(2);

    const second = await startWorkerProcess(t.stack.workerEnv, "actors", { ...QUILT_ENV, QUILT_MAX_PATCHES: String(PATCHES), QUILT_MAX_WAIT_MS: "200" });
    try {
      const after = await expectEachStoredAndRecordedOnce(t, owner, "qcrash", jobIds, objectsBefore);
      // The jobs done before the kill keep their blob ids; the gathered ones went out in new quilts after the restart.
      const byId = new Map(after.map((r) => [r.id, r.blob_id]));
      for (const r of beforeKill) expect(byId.get(r.id)).toBe(r.blob_id);
      const resumed = after.filter((r) => !beforeKill.some((b) => b.id === r.id));
      expect(resumed).toHaveLength(JOBS - 2 * PATCHES);
      for (const r of resumed) expect(quiltsBefore.has(parseQuiltPatchId(r.blob_id)?.quiltId)).toBe(false);
      // The half-gathered quilt was abandoned by the jobs that found it unsealed, so no writer could seal it late.
      const counts = await quiltEventCounts(t);
      expect(counts[QUILT_EVENTS.abandoned]).toBeGreaterThanOrEqual(1);
    } finally {
      second.kill("SIGTERM");
    }
  }, 300_000);
});

/**
 * A publisher in front of the blob store that stores each quilt it is sent, then never answers: the quilt is stored,
 * its jobs never learn their patch ids. `stored` lists the quilts it stored; `first` resolves with the first.
 */
async function publisherThatStoresThenHangs(target: string): Promise<{ url: string; stored: string[]; first: Promise<string>; close(): Promise<void> }> {
  let signal!: (quiltId: string) => void;
  const first = new Promise<string>((r) => (signal = r));
  const stored: string[] = [];
  const server: Server = createServer(async (req) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const answer = await fetch(target + req.url, { method: req.method, body: Buffer.concat(chunks), headers: { "content-type": req.headers["content-type"] ?? "application/octet-stream" } });
    const body = (await answer.json()) as { blobStoreResult?: { newlyCreated?: { blobObject: { blobId: string } } } };
    // `res` is never answered: the worker waits on it until it is killed.
    const id = body.blobStoreResult?.newlyCreated?.blobObject.blobId ?? "";
    stored.push(id);
    signal(id);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, stored, first, close: () => new Promise((r) => (server.closeAllConnections(), server.close(() => r()))) };
}

describe("actor host killed with -9 with a quilt in flight (stored, not yet answered)", () => {
  let t: TestStack;
  let client: MemrelayClient;
  let owner: string;
  beforeAll(async () => void ({ t, client, owner } = await startStackWithoutActorHost()), 120_000);
  afterAll(async () => t?.teardown());

  it("ends every job done and recorded once, under a patch of the quilt stored before the kill: the sealed quilt is rebuilt, not re-gathered", async () => {
    const objectsBefore = await walrusObjects(t);
    const r = await client.rememberBulk(Array.from({ length: 20 }, (_, k) => ({ text: `in flight fact ${k}`, namespace: "qflight" })));
    const publisher = await publisherThatStoresThenHangs(t.stack.workerEnv.BLOBSTORE_PUBLISHER_URL);
    const first = await startWorkerProcess(t.stack.workerEnv, "actors", { ...QUILT_ENV, QUILT_MAX_WAIT_MS: "300", BLOBSTORE_PUBLISHER_URL: publisher.url });
    let lostQuilts: string[];
    try {
      await publisher.first;
      // Whatever else was sealed meanwhile goes to the hanging publisher too.
      await new Promise((res) => setTimeout(res, 1_000));
      lostQuilts = [...publisher.stored];
    } finally {
      first.kill("SIGKILL");
      await publisher.close();
    }
    expect(lostQuilts.every((q) => q !== "")).toBe(true);
    const doneRows = async () => (await t.stack.db.query("SELECT job_id::text AS id, blob_id FROM remember_jobs WHERE owner = $1 AND status = 'done'", [owner])).rows as DoneRow[];
    expect(await doneRows()).toHaveLength(0);

    const second = await startWorkerProcess(t.stack.workerEnv, "actors", { ...QUILT_ENV, QUILT_MAX_WAIT_MS: "300" });
    try {
      const after = await expectEachStoredAndRecordedOnce(t, owner, "qflight", r.job_ids, objectsBefore);
      // The quilts stored before the kill hold the jobs that were in them: their patches are the recorded ones.
      const quiltsOfJobs = new Set(after.map((x) => parseQuiltPatchId(x.blob_id)!.quiltId));
      for (const q of lostQuilts) expect(quiltsOfJobs.has(q), `quilt ${q} stored before the kill is recorded`).toBe(true);
      const inLost = after.filter((x) => lostQuilts.includes(parseQuiltPatchId(x.blob_id)!.quiltId));
      expect(inLost.length).toBeGreaterThan(0);
      const counts = await quiltEventCounts(t);
      // Each lost quilt was rebuilt once per process (its members share one rebuild) and its answer recorded.
      expect(counts[QUILT_EVENTS.stored]).toBeGreaterThanOrEqual(lostQuilts.length);
    } finally {
      second.kill("SIGTERM");
    }
  }, 300_000);
});

describe("actor host killed with -9 at each crash window of a quilt, found by the events it appends", () => {
  let t: TestStack;
  let client: MemrelayClient;
  let owner: string;
  beforeAll(async () => void ({ t, client, owner } = await startStackWithoutActorHost()), 120_000);
  afterAll(async () => t?.teardown());

  /** Kills `worker` with -9 as soon as the event log receives an event of type `type` (a core subscription sees every append). */
  function killOnFirst(worker: WorkerProcess, type: string): Promise<void> {
    return new Promise((resolve) => {
      const sub = t.stack.log.nc.subscribe("evt.>", {
        callback: (_err, m) => {
          if (!decodeCommit(m.data).events.some((e) => e.type === type)) return;
          worker.kill("SIGKILL");
          sub.unsubscribe();
          resolve();
        },
      });
    });
  }

  const windows = [
    // members joined, the quilt unsealed
    { name: "before the seal", killOn: JOB_EVENTS.quiltJoined },
    // the quilt's membership recorded; its store about to start or running
    { name: "after the seal, before the store's answer", killOn: QUILT_EVENTS.sealed },
    // stored, and some members have recorded their patch while others have not
    { name: "after the store, with members partly recorded", killOn: JOB_EVENTS.uploaded },
  ];
  for (const [i, w] of windows.entries()) {
    it(`${w.name}: every job ends done, recorded once, its ciphertext in exactly one stored quilt`, async () => {
      const namespace = `window${i}`;
      const objectsBefore = await walrusObjects(t);
      const r = await client.rememberBulk(Array.from({ length: 20 }, (_, k) => ({ text: `window ${i} fact ${k} about the harbour`, namespace })));
      const first = await startWorkerProcess(t.stack.workerEnv, "actors", { ...QUILT_ENV, QUILT_MAX_WAIT_MS: "300" });
      await Promise.race([killOnFirst(first, w.killOn), new Promise((_, reject) => setTimeout(() => reject(new Error(`no ${w.killOn} within 60 s`)), 60_000))]).finally(() => first.kill("SIGKILL"));
      const second = await startWorkerProcess(t.stack.workerEnv, "actors", { ...QUILT_ENV, QUILT_MAX_WAIT_MS: "300" });
      try {
        await expectEachStoredAndRecordedOnce(t, owner, namespace, r.job_ids, objectsBefore);
        // Recall reads the patches back: each memory by its own text.
        const found = await client.recall(`window ${i} fact 7 about the harbour`, { namespace, limit: 3 });
        expect(found.results[0]?.text).toBe(`window ${i} fact 7 about the harbour`);
      } finally {
        await stop(second);
      }
    }, 300_000);
  }
});
