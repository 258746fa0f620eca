// A runner that feeds several projections of one subject family from one consumer (`memrelay replay`): each read
// model ends equal to what the log says, each with its own checkpoint, and a replay killed midway (kill -9, in a
// child process) resumes from the checkpoints it had committed and ends equal — nothing lost, nothing twice, whether
// each lane commits alone or the lanes share transactions (live).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { EventStore } from "../eventlog/event-store.ts";
import { createPool, type Db } from "../db/pool.ts";
import { silentLogger } from "../config/logger.ts";
import { LIVE, ProjectionGroupRunner, migrateCheckpoints, readCheckpoint, resetProjection, type Projection } from "../projections/runtime.ts";
import { PROBE_KEPT, probeAll, probeKept } from "./support/probe-group.ts";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";

let nats: NatsServerHandle;
let database: TestDatabase;
let log: EventLog;
let db: Db;
const all: string[] = [];
const kept: string[] = [];
let last = 0;
const COMMITS = 3_000;

const sorted = (xs: string[]) => [...xs].sort();
const ids = async (table: string) => (await db.query<{ id: string }>(`SELECT id FROM ${table} ORDER BY id`)).rows.map((r) => r.id);

/** Runs a group over both probes until both reached `last`. */
async function replayToEnd(): Promise<void> {
  const runner = new ProjectionGroupRunner(log, db, [probeAll, probeKept], silentLogger);
  await runner.start();
  const deadline = Date.now() + 60_000;
  while (runner.handles().some((h) => h.checkpoint < last || h.pending > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  await runner.stop();
}

beforeAll(async () => {
  [nats, database] = await Promise.all([startNatsServer(), createTestDatabase()]);
  log = await openEventLog({ servers: nats.url, name: "projection-group-test" });
  db = createPool(database.url, 4);
  await migrateCheckpoints(db);
  const store = new EventStore(log.js, log.jsm);
  // One commit in three is kept by probe_kept; appended 64 at a time.
  for (let i = 0; i < COMMITS; i += 64) {
    const seqs = await Promise.all(
      Array.from({ length: Math.min(64, COMMITS - i) }, async (_, j) => {
        const id = randomUUID();
        const type = (i + j) % 3 === 0 ? PROBE_KEPT : "probe.other";
        all.push(id);
        if (type === PROBE_KEPT) kept.push(id);
        return (await store.append(`probe.${id}`, [{ type, version: 1, data: { id } }], 0, { causationId: id, correlationId: id })).seq;
      }),
    );
    last = Math.max(last, ...seqs);
  }
}, 120_000);

afterAll(async () => {
  await db?.end();
  await log?.close();
  await nats?.cleanup();
  await database?.drop();
});

describe("one consumer for several projections", () => {
  it("rebuilds each read model from the log, with its own checkpoint", async () => {
    await replayToEnd();
    expect(await ids("probe_all")).toEqual(sorted(all));
    expect(await ids("probe_kept")).toEqual(sorted(kept));
    expect(await readCheckpoint(db, probeAll.name)).toBe(last);
    expect(await readCheckpoint(db, probeKept.name)).toBe(last);
  }, 90_000);

  it.each([
    ["its own transactions", "0"],
    ["transactions shared by the lanes", "1"],
  ])("a replay killed midway (kill -9) resumes from its checkpoints and ends equal, each lane in %s", async (_, shared) => {
    for (const p of [probeAll, probeKept]) await resetProjection(db, p);
    const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("./support/probe-group.ts", import.meta.url))], {
      env: { ...process.env, NATS_URL: nats.url, DATABASE_URL: database.url, PROBE_SHARED_COMMIT: shared },
      stdio: "ignore",
    });
    const exited = new Promise((r) => child.once("exit", r));
    try {
      // Killed once it is part of the way through.
      const deadline = Date.now() + 60_000;
      while ((await readCheckpoint(db, probeAll.name)) < last / 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    } finally {
      child.kill("SIGKILL");
      await exited;
    }
    const at = await readCheckpoint(db, probeAll.name);
    expect(at).toBeGreaterThanOrEqual(last / 3);
    expect(at).toBeLessThan(last);
    // What a checkpoint says was applied is there, and nothing beyond it.
    expect(Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM probe_all WHERE seq > $1", [at])).rows[0].n)).toBe(0);

    await replayToEnd();
    expect(await ids("probe_all")).toEqual(sorted(all));
    expect(await ids("probe_kept")).toEqual(sorted(kept));
    expect(await readCheckpoint(db, probeKept.name)).toBe(last);
  }, 120_000);

  it("live, lanes that apply the same commit share one transaction; a batch one lane cannot apply leaves the other's applied", async () => {
    // A probe that refuses one id: its lane sets that commit aside, the other lane applies it.
    const picky: Projection = {
      ...probeKept,
      name: "probe_picky",
      migrate: async (d) => void (await d.query("CREATE TABLE IF NOT EXISTS probe_picky (id text PRIMARY KEY, tx bigint NOT NULL DEFAULT txid_current())")),
      apply: async (tx, events) => {
        if (events.some((e) => (e.event.data as { id: string }).id.startsWith("refused"))) throw new Error("probe_picky refuses this one");
        await tx.query("INSERT INTO probe_picky (id) SELECT unnest($1::text[]) ON CONFLICT (id) DO NOTHING", [events.map((e) => (e.event.data as { id: string }).id)]);
      },
    };
    const runner = new ProjectionGroupRunner(log, db, [probeAll, picky], silentLogger, "local", LIVE);
    await runner.start();
    const [allHandle, pickyHandle] = runner.handles();
    const store = new EventStore(log.js, log.jsm);
    const append = async (id: string) => (await store.append(`probe.${id}`, [{ type: PROBE_KEPT, version: 1, data: { id } }], 0, { causationId: randomUUID(), correlationId: id })).seq;
    const txOf = async (table: string, id: string) => (await db.query<{ tx: string }>(`SELECT tx FROM ${table} WHERE id = $1`, [id])).rows[0]?.tx;
    try {
      expect(await allHandle.waitFor(last, 30_000)).toBe(true);
      expect(await pickyHandle.waitFor(last, 30_000)).toBe(true);
      const shared = randomUUID();
      let seq = await append(shared);
      expect(await allHandle.waitFor(seq, 30_000)).toBe(true);
      expect(await pickyHandle.waitFor(seq, 30_000)).toBe(true);
      expect(await txOf("probe_picky", shared)).toBe(await txOf("probe_all", shared));

      const refused = `refused-${randomUUID()}`;
      seq = await append(refused);
      expect(await allHandle.waitFor(seq, 30_000)).toBe(true);
      expect(await pickyHandle.waitFor(seq, 30_000)).toBe(true);
      expect(await txOf("probe_all", refused)).toBeDefined();
      expect(await txOf("probe_picky", refused)).toBeUndefined();
      const dead = await db.query("SELECT 1 FROM dead_letters WHERE projection = 'probe_picky' AND seq = $1", [seq]);
      expect(dead.rowCount).toBe(1);
      expect(await readCheckpoint(db, picky.name)).toBe(seq);
    } finally {
      await runner.stop();
    }
  }, 60_000);

  it("live, a projection stopped alone stays where it was and the others go on applying new commits", async () => {
    const runner = new ProjectionGroupRunner(log, db, [probeAll, probeKept], silentLogger, "local", LIVE);
    await runner.start();
    const [allHandle, keptHandle] = runner.handles();
    try {
      expect(await allHandle.waitFor(last, 30_000)).toBe(true);
      expect(await keptHandle.waitFor(last, 30_000)).toBe(true);
      await keptHandle.stop();
      const store = new EventStore(log.js, log.jsm);
      const later = randomUUID();
      const { seq } = await store.append(`probe.${later}`, [{ type: PROBE_KEPT, version: 1, data: { id: later } }], 0, { causationId: later, correlationId: later });
      expect(await allHandle.waitFor(seq, 30_000)).toBe(true);
      expect(await ids("probe_all")).toContain(later);
      // Given time it would have had, the stopped one applied nothing more.
      await new Promise((r) => setTimeout(r, 500));
      expect(keptHandle.checkpoint).toBe(last);
      expect(await readCheckpoint(db, probeKept.name)).toBe(last);
      expect(await ids("probe_kept")).not.toContain(later);
      expect(allHandle.pending).toBe(0);
    } finally {
      await runner.stop();
    }
  }, 60_000);
});
