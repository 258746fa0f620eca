// Black-box with one read model held back: a finished remember job leaves no actor snapshot (its events are its
// state), so while the job-status read model lags, GET /api/remember/{id} answers from the job's events — done with
// its blob id, never a 404 — and the long poll answers as soon as the recall indexes have it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "./support/stack.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";
import { lastCommit } from "../eventlog/command-bus.ts";
import { JOB_EVENTS, type JobIndexed } from "../schemas/relayer/remember-job.ts";
import { JOB_STATUS } from "../projections/relayer/job-status.ts";

let t: TestStack;
let client: MemrelayClient;
beforeAll(async () => {
  t = await startTestStack();
  client = await t.client();
}, 120_000);
afterAll(async () => t?.teardown());

describe("a finished job the status read model does not have yet", () => {
  it("is read from its events: done with its blob id, and no snapshot was stored", async () => {
    await t.stack.relayer.projections.find((p) => p.projection.name === JOB_STATUS)!.stop();
    const { job_id } = await client.remember("The spare key is under the blue flowerpot", "lookup");
    let indexed: JobIndexed | undefined;
    for (let i = 0; i < 200 && !indexed; i++) {
      const c = await lastCommit(t.stack.log, `evt.job.${job_id}`);
      indexed = c?.events.find((e) => e.type === JOB_EVENTS.indexed)?.data as JobIndexed | undefined;
      if (!indexed) await new Promise((r) => setTimeout(r, 50));
    }
    expect(indexed).toBeDefined();
    expect(await t.stack.log.snapshots.get(`job.${job_id}`)).toBeNull();
    const j = await client.job(job_id, 10);
    expect(j).toMatchObject({ job_id, status: "done", blob_id: indexed!.blob_id, namespace: "lookup" });
    const r = await client.recall("where is the spare key?", { namespace: "lookup", limit: 1 });
    expect(r.results[0]?.text).toBe("The spare key is under the blue flowerpot");
  }, 60_000);
});
