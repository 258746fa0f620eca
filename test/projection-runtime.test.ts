// The projection runtime against a real nats-server and Postgres: commits a projection skips (`wants` false) still
// move its checkpoint (the one-statement path), the events it wants are applied, and a reset made by another process
// is noticed by that path too — the runner rebuilds from sequence 1 instead of writing past the reset. A batch it
// applies moves the checkpoint by compare-and-set in the same transaction, committed without waiting for the WAL flush.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { EventStore } from "../eventlog/event-store.ts";
import { createPool, type Db } from "../db/pool.ts";
import { silentLogger } from "../config/logger.ts";
import { ProjectionRunner, readCheckpoint, resetProjection, type Projection } from "../projections/runtime.ts";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";

let nats: NatsServerHandle;
let database: TestDatabase;
let log: EventLog;
let db: Db;
let store: EventStore;
let runner: ProjectionRunner;

const KEPT = "probe.kept";
/** A wanted event whose apply records the transaction's synchronous_commit setting. */
const MODE = "probe.kept.mode";
const kept: Projection = {
  name: "probe_kept",
  filter: "evt.probe.>",
  migrate: async (d) => void (await d.query("CREATE TABLE IF NOT EXISTS probe_kept (id text PRIMARY KEY, seq bigint NOT NULL); CREATE TABLE IF NOT EXISTS probe_modes (id text PRIMARY KEY, mode text NOT NULL)")),
  reset: async (tx) => void (await tx.query("DELETE FROM probe_kept")),
  apply: async (tx, events) => {
    for (const e of events) {
      const id = (e.event.data as { id: string }).id;
      if (e.event.type === KEPT) await tx.query("INSERT INTO probe_kept (id, seq) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING", [id, e.seq]);
      if (e.event.type === MODE) await tx.query("INSERT INTO probe_modes (id, mode) VALUES ($1, current_setting('synchronous_commit')) ON CONFLICT (id) DO NOTHING", [id]);
    }
  },
  wants: (raw) => Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).includes(KEPT),
};

const append = async (type: string, id = randomUUID()) => (await store.append(`probe.${id}`, [{ type, version: 1, data: { id } }], "any", { causationId: id, correlationId: id })).seq;
const rows = async () => (await db.query<{ id: string }>("SELECT id FROM probe_kept ORDER BY seq")).rows.map((r) => r.id);

beforeAll(async () => {
  [nats, database] = await Promise.all([startNatsServer(), createTestDatabase()]);
  log = await openEventLog({ servers: nats.url, name: "projection-runtime-test" });
  db = createPool(database.url, 4);
  store = new EventStore(log.js, log.jsm);
  runner = new ProjectionRunner(log, db, kept, silentLogger);
  await runner.start();
}, 30_000);

afterAll(async () => {
  await runner?.stop();
  await db?.end();
  await log?.close();
  await nats?.cleanup();
  await database?.drop();
});

describe("projection runtime", () => {
  it("moves the checkpoint past skipped commits and applies the wanted ones", async () => {
    let last = 0;
    for (let i = 0; i < 5; i++) last = await append("probe.skipped");
    expect(await runner.waitFor(last, 10_000)).toBe(true);
    expect(await readCheckpoint(db, kept.name)).toBe(last);
    const id = randomUUID();
    last = await append(KEPT, id);
    for (let i = 0; i < 3; i++) last = await append("probe.skipped");
    expect(await runner.waitFor(last, 10_000)).toBe(true);
    expect(await readCheckpoint(db, kept.name)).toBe(last);
    expect(await rows()).toEqual([id]);
  });

  it("notices a reset by another process on a skipped commit and rebuilds from sequence 1", async () => {
    const before = await rows();
    await resetProjection(db, kept);
    expect(await rows()).toEqual([]);
    // The next batch holds only a skipped commit: its compare-and-set fails on the rewound checkpoint.
    const last = await append("probe.skipped");
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && ((await readCheckpoint(db, kept.name)) < last || (await rows()).length < before.length)) await new Promise((r) => setTimeout(r, 100));
    expect(await rows()).toEqual(before);
    expect(await readCheckpoint(db, kept.name)).toBe(last);
  }, 30_000);

  it("applies a batch in a transaction committed without waiting for the WAL flush, the checkpoint moved in it", async () => {
    const id = randomUUID();
    const last = await append(MODE, id);
    expect(await runner.waitFor(last, 10_000)).toBe(true);
    expect((await db.query<{ mode: string }>("SELECT mode FROM probe_modes WHERE id = $1", [id])).rows[0]?.mode).toBe("off");
    expect(await readCheckpoint(db, kept.name)).toBe(last);
    // outside those transactions the server's setting holds
    expect((await db.query<{ m: string }>("SELECT current_setting('synchronous_commit') AS m")).rows[0].m).toBe("on");
  });

  it("two runners of one read model (an operator's replay beside the running one) both end with nothing pending", async () => {
    let last = 0;
    for (let i = 0; i < 30; i++) last = (await Promise.all(Array.from({ length: 50 }, () => append(KEPT)))).reduce((a, b) => Math.max(a, b), 0);
    expect(await runner.waitFor(last, 20_000)).toBe(true);
    const expected = await rows();
    const other = await openEventLog({ servers: nats.url, name: "projection-runtime-test-replay" });
    const replay = new ProjectionRunner(other, db, kept, silentLogger);
    try {
      await resetProjection(db, kept);
      await replay.start();
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && (replay.pending > 0 || runner.pending > 0 || (await readCheckpoint(db, kept.name)) < last)) await new Promise((r) => setTimeout(r, 100));
      expect({ replay: replay.pending, running: runner.pending, checkpoint: await readCheckpoint(db, kept.name) }).toEqual({ replay: 0, running: 0, checkpoint: last });
      expect(await rows()).toEqual(expected);
    } finally {
      await replay.stop();
      await other.close();
    }
  }, 40_000);

  it("a runner that loses its batch to another runner reports nothing pending once that one has applied everything", async () => {
    let last = 0;
    for (let i = 0; i < 20; i++) last = await append(KEPT);
    expect(await runner.waitFor(last, 20_000)).toBe(true);
    // The replay's runner gets its first transaction only once the running one has rebuilt everything after the
    // reset: its batch's compare-and-set then fails, and it restarts at a checkpoint with nothing left to deliver.
    const pool = createPool(database.url, 2);
    let release: () => void = () => undefined;
    let gate: Promise<void> | undefined;
    const gated = new Proxy(pool, {
      get(target, prop) {
        if (prop === "connect" && gate) {
          const g = gate;
          gate = undefined;
          return async () => (await g, target.connect());
        }
        const v = Reflect.get(target, prop, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const other = await openEventLog({ servers: nats.url, name: "projection-runtime-test-loser" });
    const replay = new ProjectionRunner(other, gated, kept, silentLogger);
    try {
      await resetProjection(db, kept);
      await replay.start();
      // (gated once started: the start's claim of the read model takes a transaction of its own)
      gate = new Promise<void>((r) => (release = r));
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && (await readCheckpoint(db, kept.name)) < last) await new Promise((r) => setTimeout(r, 50));
      expect(gate).toBeUndefined(); // the replay's batch is waiting for its transaction
      release();
      const settle = Date.now() + 5_000;
      while (Date.now() < settle && replay.pending > 0) await new Promise((r) => setTimeout(r, 50));
      expect({ pending: replay.pending, checkpoint: replay.checkpoint }).toEqual({ pending: 0, checkpoint: last });
    } finally {
      release();
      await replay.stop();
      await other.close();
      await pool.end();
    }
  }, 40_000);

  it("notices a reset by another process on a wanted commit and rebuilds from sequence 1", async () => {
    const before = await rows();
    await resetProjection(db, kept);
    // The next batch holds a wanted commit: the compare-and-set inside its transaction fails, nothing is applied.
    const id = randomUUID();
    const last = await append(KEPT, id);
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline && ((await readCheckpoint(db, kept.name)) < last || (await rows()).length < before.length + 1)) await new Promise((r) => setTimeout(r, 100));
    expect(await rows()).toEqual([...before, id]);
    expect(await readCheckpoint(db, kept.name)).toBe(last);
  }, 30_000);
});
