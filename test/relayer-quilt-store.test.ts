// Black-box, MEMRELAY_STORE_MODE=quilt: the remember jobs of several owners in flight share quilts; each memory's
// blob id is its quilt patch id, served by the blob store's aggregator routes; recall, forget and restore from the
// chain records work over patches. Against the started stack (real NATS, Postgres, chain ledger, key servers, blob store).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "./support/stack.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";
import type { DevIdentity } from "../runtime/local-stack.ts";
import { parseQuiltPatchId } from "../adapters/blobs/quilt-codec.ts";
import { IndexLog } from "../projections/relayer/index-log.ts";
import { loadConfig, ConfigError } from "../config/env.ts";
import { STREAMS } from "../eventlog/subjects.ts";

let t: TestStack;
beforeAll(async () => {
  // A wait long enough that jobs started together land in one quilt on a loaded two-core machine.
  t = await startTestStack({ MEMRELAY_STORE_MODE: "quilt", QUILT_MAX_WAIT_MS: "400" });
}, 120_000);
afterAll(() => t?.teardown());

interface Owner { id: DevIdentity; client: MemrelayClient }
const owners = async (n: number): Promise<Owner[]> =>
  Promise.all(Array.from({ length: n }, async () => {
    const id = await t.stack.createIdentity();
    return { id, client: await t.client(id) };
  }));

const settled = async () => {
  const index = new IndexLog(t.stack.log, t.stack.db);
  expect(await index.waitApplied(await index.lastIndexSeq(), 10_000)).toBe(true);
};

describe("MEMRELAY_STORE_MODE", () => {
  it("is quilt by default, blob when asked, and a start refuses anything else", () => {
    expect(loadConfig({}).storeMode).toEqual({ mode: "quilt", limits: { maxPatches: 256, maxBytes: 8 * 1024 * 1024, maxWaitMs: 50, maxInFlight: 4 } });
    expect(loadConfig({ MEMRELAY_STORE_MODE: "blob" }).storeMode).toEqual({ mode: "blob" });
    expect(loadConfig({ MEMRELAY_STORE_MODE: " Quilt ", QUILT_MAX_PATCHES: "12" }).storeMode).toEqual({ mode: "quilt", limits: { maxPatches: 12, maxBytes: 8 * 1024 * 1024, maxWaitMs: 50, maxInFlight: 4 } });
    expect(() => loadConfig({ MEMRELAY_STORE_MODE: "quilts" })).toThrow(ConfigError);
    expect(() => loadConfig({ MEMRELAY_STORE_MODE: "quilt", QUILT_MAX_WAIT_MS: "soon" })).toThrow(/QUILT_MAX_WAIT_MS/);
    // The quilt limits of a blob-mode start are not read: a blob-mode relayer does not fail on them.
    expect(loadConfig({ MEMRELAY_STORE_MODE: "blob", QUILT_MAX_WAIT_MS: "soon" }).storeMode).toEqual({ mode: "blob" });
    expect(() => loadConfig({ QUILT_MAX_WAIT_MS: "soon" })).toThrow(/QUILT_MAX_WAIT_MS/);
  });
});

describe("remember in quilt mode", () => {
  it("stores concurrent owners' memories as patches of few quilts; recall, forget and restore read them", async () => {
    const people = await owners(4);
    const textsOf = (i: number) => [`owner ${i} keeps a red kayak named Wren${i}`, `owner ${i} was born in harbour town ${i}`];
    const jobs = await Promise.all(people.flatMap((p, i) => textsOf(i).map(async (text) => ({ p, i, text, job: await p.client.remember(text, "quilted") }))));
    const ended = await Promise.all(jobs.map(async (j) => ({ ...j, done: await j.p.client.waitForJob(j.job.job_id) })));
    for (const e of ended) expect(e.done, e.text).toMatchObject({ status: "done" });

    // Every blob id is a quilt patch id; the eight memories share one or a few quilts, never one each.
    const patchIds = ended.map((e) => e.done.blob_id!);
    const quilts = new Set(patchIds.map((id) => parseQuiltPatchId(id)?.quiltId));
    expect(quilts.has(undefined)).toBe(false);
    expect(quilts.size).toBeLessThanOrEqual(3);
    expect(new Set(patchIds).size).toBe(patchIds.length);
    // The aggregator lists each quilt's patches and serves each patch by its id.
    const listed = new Set<string>();
    for (const q of quilts) {
      const res = await fetch(`${t.stack.blobstoreUrl}/v1/quilts/${q}/patches`);
      expect(res.status).toBe(200);
      for (const p of (await res.json()) as { patch_id: string }[]) listed.add(p.patch_id);
    }
    for (const id of patchIds) {
      expect(listed.has(id)).toBe(true);
      expect((await fetch(`${t.stack.blobstoreUrl}/v1/blobs/by-quilt-patch-id/${id}`)).status).toBe(200);
    }

    // Recall finds each owner's own memories by their text, and only theirs.
    for (const [i, p] of people.entries()) {
      const r = await p.client.recall(`red kayak Wren${i}`, { namespace: "quilted", limit: 5 });
      expect(r.results.map((x) => x.text).sort()).toEqual([...textsOf(i)].sort());
      expect(r.results.every((x) => patchIds.includes(x.blob_id))).toBe(true);
    }

    // Restore from the chain records alone: the index rows are lost and so is the event log of every job and quilt
    // (their ciphertexts and patch ids with it); restore rebuilds recall from the chain records and the patches.
    const [first, second] = people;
    await settled();
    await t.stack.db.query("DELETE FROM memories WHERE owner = $1 AND namespace = 'quilted'", [first.id.owner]);
    for (const filter of ["evt.job.>", "evt.quilt.>"]) {
      await t.stack.log.jsm.streams.purge(STREAMS.events, { filter });
      expect((await t.stack.log.jsm.streams.info(STREAMS.events, { subjects_filter: filter })).state.subjects ?? {}, filter).toEqual({});
    }
    expect((await first.client.recall("red kayak Wren0", { namespace: "quilted" })).total).toBe(0);
    expect(await first.client.restore("quilted")).toMatchObject({ restored: 2, failed: 0, total: 2 });
    expect((await first.client.recall("red kayak Wren0", { namespace: "quilted" })).results.map((x) => x.text).sort()).toEqual([...textsOf(0)].sort());

    // Forget removes one owner's patches from recall; the other owners sharing the quilt keep theirs.
    const forgot = await second.client.call<{ deleted: number }>("POST", "/api/forget", { namespace: "quilted" });
    expect(forgot.deleted).toBe(2);
    expect((await second.client.recall("red kayak Wren1", { namespace: "quilted" })).total).toBe(0);
    expect((await people[2].client.recall("red kayak Wren2", { namespace: "quilted" })).results).toHaveLength(2);
  }, 120_000);
});
