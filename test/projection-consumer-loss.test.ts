// Issue 32's chaos run left job-status rows at `uploaded` whose `job.indexed` the log holds, with the checkpoint past
// it, after a NATS node was killed and its JetStream stayed unavailable a while: the runner's consumer was lost and
// nats.js's ordered consumer recreated it by itself (eventlog/follow-consumer.ts says how that can hand a lane commits
// out of order). Here two instances of the job-status read model (same database, compare-and-set checkpoint) follow
// a log while remember jobs are written and their consumers are deleted under them again and again, and the
// nats-server is killed -9 and started again: every job's row must end as the fold of its events in the log, and the
// consumers the runners gave up must not stay on the stream. On one server the ordered consumer kept the rows right
// here (the interleaving needs a cluster's lagging node); it failed the last part, leaving its consumers behind.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { EventStore } from "../eventlog/event-store.ts";
import { STREAMS } from "../eventlog/subjects.ts";
import { DeliveryOutOfOrder, followConsumer } from "../eventlog/follow-consumer.ts";
import type { JsMsg } from "@nats-io/jetstream";
import { createPool, type Db } from "../db/pool.ts";
import { silentLogger } from "../config/logger.ts";
import { LIVE, ProjectionGroupRunner, migrateCheckpoints } from "../projections/runtime.ts";
import { jobStatusProjection } from "../projections/relayer/job-status.ts";
import { foldJob } from "../schemas/relayer/job-view.ts";
import { JOB_VECTOR_EVENT_VERSION } from "../schemas/relayer/remember-job.ts";
import type { IndexLogEvent } from "../schemas/relayer/memory-maintenance.ts";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";

let nats: NatsServerHandle;
let database: TestDatabase;
let db: Db;
const logs: EventLog[] = [];
const JOBS = 300;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const open = async (name: string) => {
  const log = await openEventLog({ servers: nats.url, name });
  logs.push(log);
  return log;
};
/** Retries what the restarted server refused or did not answer (JetStream not ready yet). */
async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt > 200) throw err;
      await sleep(100);
    }
  }
}
/** Appends one event; the commit id makes a retried append land once. */
function append(store: EventStore, aggregate: string, type: string, data: Record<string, unknown>, after: number): Promise<number> {
  const commitId = randomUUID();
  return retrying(async () => (await store.append(aggregate, [{ type, version: JOB_VECTOR_EVENT_VERSION, data } as never], after, { causationId: commitId, correlationId: commitId, commitId })).seq);
}

beforeAll(async () => {
  [nats, database] = await Promise.all([startNatsServer(), createTestDatabase()]);
  db = createPool(database.url, 6);
  await migrateCheckpoints(db);
}, 60_000);

afterAll(async () => {
  for (const log of logs) await log.close().catch(() => undefined);
  await db?.end();
  await nats?.cleanup();
  await database?.drop();
});

describe("a projection whose consumer is lost under it", () => {
  it("applies every commit once its consumer is deleted or its server restarted, and leaves no consumer behind", async () => {
    const writer = await open("loss-writer");
    const store = new EventStore(writer.js, writer.jsm);
    const runners = [new ProjectionGroupRunner(await open("loss-a"), db, [jobStatusProjection], silentLogger, "local", LIVE), new ProjectionGroupRunner(await open("loss-b"), db, [jobStatusProjection], silentLogger, "local", LIVE)];
    for (const r of runners) await r.start();

    // The events written per job, with their stream sequences: what the read model must fold to.
    const written = new Map<string, { seq: number; event: IndexLogEvent }[]>();
    let stopFaults = false;
    const faults = (async () => {
      const admin = await open("loss-admin");
      for (let round = 0; !stopFaults; round++) {
        await sleep(150);
        if (round % 10 === 5) {
          // the node killed -9 and started again: every consumer goes with it
          await nats.stop("SIGKILL");
          await sleep(500);
          await nats.restart();
          continue;
        }
        try {
          for await (const c of admin.jsm.consumers.list(STREAMS.events)) await admin.jsm.consumers.delete(STREAMS.events, c.name).catch(() => undefined);
        } catch {
          // the server is starting again
        }
      }
    })();
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let i = w; i < JOBS; i += 8) {
          const job = randomUUID();
          const aggregate = `job.${job}`;
          const events: { seq: number; event: IndexLogEvent }[] = [];
          written.set(job, events);
          let at = 0;
          for (const [type, data] of [["job.accepted", { owner: "0xowner", namespace: "ns", accepted_at: new Date().toISOString() }], ["job.uploaded", { blob_id: `b-${job}` }], ["job.indexed", {}]] as const) {
            at = await append(store, aggregate, type, data, at);
            events.push({ seq: at, event: { type, data } as unknown as IndexLogEvent });
          }
          // spread over several seconds, so that the faults fall between a job's events
          await sleep(20);
        }
      }),
    );
    stopFaults = true;
    await faults;
    const last = (await retrying(() => writer.jsm.streams.info(STREAMS.events))).state.last_seq;
    const deadline = Date.now() + 60_000;
    const checkpoint = async () => Number((await db.query<{ seq: string }>("SELECT seq FROM projection_checkpoints WHERE name = $1", [jobStatusProjection.name])).rows[0]?.seq ?? 0);
    while ((await checkpoint()) < last && Date.now() < deadline) await sleep(100);
    expect(await checkpoint()).toBe(last);

    const rows = new Map((await db.query<{ id: string; status: string; done_seq: string | null }>("SELECT job_id::text AS id, status, done_seq FROM remember_jobs")).rows.map((r) => [r.id, r] as const));
    const wrong = [...written].filter(([job, events]) => {
      const want = foldJob(events);
      const row = rows.get(job);
      return row?.status !== want.status || Number(row.done_seq) !== want.done_seq;
    });
    expect(wrong.map(([job]) => ({ job, row: rows.get(job), log: written.get(job)!.map((e) => `${e.seq}:${e.event.type}`) }))).toEqual([]);

    // Idle, each runner keeps one consumer; stopped, none.
    await sleep(2_000);
    const consumers = () => retrying(async () => (await writer.jsm.streams.info(STREAMS.events)).state.consumer_count);
    expect(await consumers()).toBeLessThanOrEqual(runners.length);
    for (const r of runners) await r.stop();
    await sleep(500);
    expect(await consumers()).toBe(0);
  }, 180_000);

  it("takes only the consumer's next delivery, past the last stream sequence: a gap or a message behind ends the follow", async () => {
    const log = await open("loss-order");
    const consumer = await followConsumer(log, "evt.nothing.>", 40, 1);
    const msg = (seq: number, delivery: number) => ({ seq, info: { deliverySequence: delivery } }) as JsMsg;
    try {
      consumer.check(msg(41, 1));
      consumer.check(msg(45, 2));
      // a delivery lost on the way (the counter jumps), one delivered again, one from a consumer behind
      expect(() => consumer.check(msg(46, 4))).toThrow(DeliveryOutOfOrder);
      expect(() => consumer.check(msg(45, 2))).toThrow(DeliveryOutOfOrder);
      expect(() => consumer.check(msg(44, 3))).toThrow(DeliveryOutOfOrder);
      consumer.check(msg(46, 3));
      // from the start: nothing at or before the position it starts after
      const fresh = await followConsumer(log, "evt.nothing.>", 40, 1);
      expect(() => fresh.check(msg(40, 1))).toThrow(DeliveryOutOfOrder);
      await fresh.close();
    } finally {
      await consumer.close();
    }
  });
});
