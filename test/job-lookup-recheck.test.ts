// Unit: a long poll whose job's outcome is never announced reads the job again with spacing that doubles from 250 ms
// to 4 s, not every 250 ms: thousands of memories in flight for seconds each otherwise cost the gateway and Postgres a
// read per poll four times a second (bench/NOTES.md, issue 31, stop 41). The read model and the event log are
// stand-ins that count reads; the announcement path is covered black-box by test/remember-long-poll.test.ts.
import { describe, expect, it } from "vitest";
import { JobLookup } from "../projections/relayer/job-lookup.ts";
import type { Db } from "../db/pool.ts";
import type { EventLog } from "../eventlog/connection.ts";
import type { CheckpointFeed } from "../projections/checkpoint-feed.ts";
import type { Reads } from "../db/read-pool.ts";

const JOB = "5b0f7c1e-1d2a-4c3b-9e8f-0a1b2c3d4e5f";
const OWNER = "0xowner";

/** A read model that always has the job running, counting the reads. */
function runningJobReads() {
  const counter = { reads: 0 };
  const db = {
    query: async () => ({ rows: [{ job_id: JOB, owner: OWNER, namespace: "default", status: "running", blob_id: null, error: null, done_seq: null, recall_seq: "0", set_aside_by: null, set_aside_error: null }] }),
  } as unknown as Db;
  const reads: Reads = {
    read: (fn) => {
      counter.reads++;
      return fn(db);
    },
  };
  return { counter, db, reads };
}

/** An event log that never announces an outcome (as when the gateway's connection was down while one was sent). */
const silentLog = { js: {}, jsm: {}, nc: { subscribe: () => ({ unsubscribe() {} }) } } as unknown as EventLog;
const unusedFeed = {} as CheckpointFeed;

describe("a long poll with no announcement", () => {
  it("reads again at 250 ms, then twice as long each time up to 4 s: 7 reads in 8 s, not 33", async () => {
    const { counter, db, reads } = runningJobReads();
    const lookup = new JobLookup(db, silentLog, unusedFeed, reads);
    const t0 = Date.now();
    const view = await lookup.settled(JOB, OWNER, 8_000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(7_900);
    expect(view?.status).toBe("running");
    // The first read, then after 250, 500, 1,000, 2,000 and 4,000 ms (7,750 ms in all), and one as the wait ends.
    expect(counter.reads).toBe(7);
  }, 20_000);
});
