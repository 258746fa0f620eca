// Issue 28 §2: read models belong to one event log. Two logs (two nats-servers) on one database: while the log that
// built the read model still answers, another log's start is refused with an error naming DATABASE_URL and
// MEMRELAY_DATA_DIR and the read model is left as it is; once that log is gone, the other rebuilds it (and says why);
// an explicit replay (takeOver) rebuilds it even while the first log runs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { EventStore } from "../eventlog/event-store.ts";
import { createPool, type Db } from "../db/pool.ts";
import { createLogger, silentLogger } from "../config/logger.ts";
import { ProjectionRunner, type Projection } from "../projections/runtime.ts";
import { ReadModelOfAnotherLog } from "../projections/log-claim.ts";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";

const notes: Projection = {
  name: "claim_notes",
  filter: "evt.note.>",
  migrate: async (d) => void (await d.query("CREATE TABLE IF NOT EXISTS claim_notes (id text PRIMARY KEY)")),
  reset: async (tx) => void (await tx.query("DELETE FROM claim_notes")),
  apply: async (tx, events) => {
    for (const e of events) await tx.query("INSERT INTO claim_notes (id) VALUES ($1) ON CONFLICT DO NOTHING", [(e.event.data as { id: string }).id]);
  },
};

interface Stack {
  readonly nats: NatsServerHandle;
  log: EventLog;
}

let a: Stack;
let b: Stack;
let database: TestDatabase;
let db: Db;
const opened: EventLog[] = [];

async function openLog(nats: NatsServerHandle): Promise<EventLog> {
  const log = await openEventLog({ servers: nats.url, name: "log-claim-test" });
  opened.push(log);
  return log;
}

async function note(log: EventLog): Promise<{ id: string; seq: number }> {
  const id = randomUUID();
  const { seq } = await new EventStore(log.js, log.jsm).append(`note.${id}`, [{ type: "note.added", version: 1, data: { id } }], "any", { causationId: id, correlationId: id });
  return { id, seq };
}

const ids = async () => (await db.query<{ id: string }>("SELECT id FROM claim_notes ORDER BY id")).rows.map((r) => r.id).sort();

/** A runner whose warnings and errors are kept, started on `log`; resolves once it has applied `upTo` (when given). */
async function follow(log: EventLog, opts: { takeOver?: boolean; upTo?: number } = {}) {
  const warnings: string[] = [];
  const logger = createLogger({ sink: (line) => /WARN|ERROR/.test(line) && warnings.push(line) });
  const runner = new ProjectionRunner(log, db, notes, logger);
  await runner.start({ takeOver: opts.takeOver });
  if (opts.upTo !== undefined) expect(await runner.waitFor(opts.upTo, 10_000)).toBe(true);
  return { runner, warnings };
}

beforeAll(async () => {
  const [na, nb, d] = await Promise.all([startNatsServer(), startNatsServer(), createTestDatabase()]);
  database = d;
  db = createPool(database.url, 4);
  a = { nats: na, log: await openLog(na) };
  b = { nats: nb, log: await openLog(nb) };
}, 30_000);

afterAll(async () => {
  for (const log of opened) await log.close().catch(() => undefined);
  await db?.end();
  await Promise.all([a?.nats.cleanup(), b?.nats.cleanup()]);
  await database?.drop();
});

describe("read models claimed by one event log", () => {
  it("refuses another log's start while the first still answers, then rebuilds once it is gone", async () => {
    const first = await note(a.log);
    const ownerA = await follow(a.log, { upTo: first.seq });
    expect(await ids()).toEqual([first.id]);
    const other = await note(b.log);

    const refused = await new ProjectionRunner(b.log, db, notes, silentLogger).start().then(() => undefined, (err: unknown) => err);
    expect(refused).toBeInstanceOf(ReadModelOfAnotherLog);
    expect((refused as Error).message).toMatch(/DATABASE_URL/);
    expect((refused as Error).message).toMatch(/MEMRELAY_DATA_DIR/);
    expect((refused as Error).message).toContain(`127.0.0.1:${a.nats.port}`);
    // Nothing of A's read model was touched, and A goes on applying.
    expect(await ids()).toEqual([first.id]);
    const second = await note(a.log);
    expect(await ownerA.runner.waitFor(second.seq, 10_000)).toBe(true);
    expect(await ids()).toEqual([first.id, second.id].sort());

    // A's stack stops (its runner, then its nats-server): its log no longer answers, B may rebuild.
    await ownerA.runner.stop();
    await a.nats.stop();
    const ownerB = await follow(b.log, { upTo: other.seq });
    expect(await ids()).toEqual([other.id]);
    expect(ownerB.warnings.join("\n")).toMatch(/NATS at 127\.0\.0\.1:\d+\) no longer answers; rebuilding/);
    await ownerB.runner.stop();
  }, 60_000);

  it("lets an explicit replay take the read model over while its log still runs", async () => {
    // A's log is back (same store: the same log); B built the read model and still answers.
    await a.nats.restart();
    a.log = await openLog(a.nats);
    await expect(new ProjectionRunner(a.log, db, notes, silentLogger).start()).rejects.toBeInstanceOf(ReadModelOfAnotherLog);
    const replay = await follow(a.log, { takeOver: true });
    const latest = await note(a.log);
    expect(await replay.runner.waitFor(latest.seq, 10_000)).toBe(true);
    const rows = await ids();
    expect(rows).toContain(latest.id);
    expect(rows).toHaveLength(3); // A's two earlier notes and this one: nothing of B's
    expect(replay.warnings.join("\n")).toMatch(/taken over by this event log \(replay\); rebuilding/);
    await replay.runner.stop();
  }, 60_000);

  it("stops feeding a read model that a replay from another log took over while it ran", async () => {
    const running = await follow(a.log); // A's replay of the test before claimed it
    const replay = await follow(b.log, { takeOver: true });
    const bNote = await note(b.log);
    expect(await replay.runner.waitFor(bNote.seq, 10_000)).toBe(true);
    const deadline = Date.now() + 10_000;
    while (!running.warnings.some((l) => l.includes("taken over by another event log")) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(running.warnings.join("\n")).toMatch(/ERROR.*read model taken over by another event log.*DATABASE_URL \/ MEMRELAY_DATA_DIR/);
    // A's later events stay out of B's read model.
    const late = await note(a.log);
    await new Promise((r) => setTimeout(r, 1_500));
    const rows = await ids();
    expect(rows).toContain(bNote.id);
    expect(rows).not.toContain(late.id);
    await replay.runner.stop();
    await running.runner.stop();
  }, 60_000);
});
