// Black-box: GET /api/remember/{id}?wait=<seconds>, the long poll. With no actor host running, a job stays pending
// and the poll answers when its wait is over (uWS keeps the request open that long); with one, it answers as soon as
// the job is done. POST /api/remember?wait= holds the remember itself the same way. Bad waits are a 400.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "./support/stack.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";
import { RelayerError } from "../client/memrelay-client.ts";

let idle: TestStack;
let client: MemrelayClient;
beforeAll(async () => {
  idle = await startTestStack({}, { roles: { actors: false } });
  client = await idle.client();
}, 120_000);
afterAll(async () => idle?.teardown());

describe("GET /api/remember/{id}?wait=", () => {
  it("holds the request until the wait is over while the job cannot finish", async () => {
    const { job_id } = await client.remember("I water the plants on Sundays");
    const t0 = Date.now();
    const j = await client.job(job_id, 12);
    const took = Date.now() - t0;
    expect(j.status).toBe("running");
    expect(took).toBeGreaterThanOrEqual(11_500);
    expect(took).toBeLessThan(16_000);
  }, 30_000);

  it("holds POST /api/remember?wait= the same way, then answers 202 with the running job", async () => {
    const t0 = Date.now();
    const j = await client.call<{ job_id: string; status: string }>("POST", "/api/remember?wait=2", { text: "I water the plants on Tuesdays" });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_500);
    expect(j.status).toBe("running");
    expect((await client.job(j.job_id)).status).toBe("running");
  }, 30_000);

  it("refuses a wait that is not 0 to 30 whole seconds", async () => {
    const { job_id } = await client.remember("I water the plants on Mondays");
    for (const wait of ["31", "-1", "1.5", "abc"]) {
      const err = await client.call("GET", `/api/remember/${job_id}?wait=${wait}`).catch((e) => e);
      expect(err).toBeInstanceOf(RelayerError);
      expect((err as RelayerError).status).toBe(400);
      const post = await client.call("POST", `/api/remember?wait=${wait}`, { text: "never stored" }).catch((e) => e);
      expect((post as RelayerError).status).toBe(400);
    }
  });
});
