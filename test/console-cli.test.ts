// The operator commands `memrelay replay` and `memrelay lag` know the developer console's read models (console,
// console_access): lag reports them, replay rebuilds them from the event log.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { encodeCommit, envelope } from "../eventlog/event-store.ts";
import { createPool, type Db } from "../db/pool.ts";
import { runProjectionsCommand } from "./support/projections-cli.ts";
import { AGG, EV, type UploadQueued } from "../schemas/console/events.ts";

let nats: NatsServerHandle;
let database: TestDatabase;
let log: EventLog;
let db: Db;
let env: Record<string, string>;
const fileId = randomUUID();

beforeAll(async () => {
  nats = await startNatsServer();
  database = await createTestDatabase("memrelay_console_cli");
  log = await openEventLog({ servers: nats.url, name: "console-cli-test" });
  db = createPool(database.url, 2);
  env = { NATS_URL: nats.url, DATABASE_URL: database.url };
  // One completed upload, as the console's actors record it.
  const created = new Date().toISOString();
  const queued: UploadQueued = {
    file_id: fileId,
    bucket_id: randomUUID(),
    space_id: randomUUID(),
    name: "notes.md",
    size: 42,
    mime_type: "text/markdown",
    blob_id: "b".repeat(43),
    md5: "0".repeat(32),
    is_private: true,
    metadata: {},
    storage_bucket_name: "wc-x",
    storage_key: fileId,
    uploader_user_id: randomUUID(),
    uploader_key_id: randomUUID(),
    owner_address: "0x" + "1".repeat(64),
    name_claim: "claim",
    created_at: created,
  };
  const ctx = { causationId: fileId, correlationId: fileId };
  const aggregate = `${AGG.upload}.${fileId}`;
  await log.js.publish(
    `evt.${aggregate}`,
    encodeCommit({
      events: [
        envelope(aggregate, { type: EV.uploadQueued, version: 1, data: queued }, ctx),
        envelope(aggregate, { type: EV.uploadStarted, version: 1, data: { started_at: created } }, ctx),
        envelope(aggregate, { type: EV.uploadCompleted, version: 1, data: { storage_object_id: "wc-x/" + fileId, completed_at: created, bucket_id: queued.bucket_id, space_id: queued.space_id, size: 42 } }, ctx),
      ],
    }),
  );
}, 60_000);

afterAll(async () => {
  await db?.end();
  await log?.close();
  await database?.drop();
  await nats?.cleanup();
});

const run = (cmd: "replay" | "lag", args: string[]) => runProjectionsCommand(cmd, args, env);

describe("memrelay replay / lag and the console's read models", () => {
  it("lag lists console and console_access; replay console rebuilds the files; lag then shows it caught up", async () => {
    const before = await run("lag", []);
    expect(before.rc).toBe(0);
    expect(before.out).toMatch(/^console\s+checkpoint\s+0\s+lag 1 events$/m);
    expect(before.out).toMatch(/^console_access\s+checkpoint\s+0\s+lag 1 events$/m);

    const replay = await run("replay", ["console"]);
    expect(replay.rc).toBe(0);
    const row = await db.query<{ name: string; status: string }>("SELECT name, status FROM console_files WHERE file_id = $1", [fileId]);
    expect(row.rows).toEqual([{ name: "notes.md", status: "completed" }]);

    const after = await run("lag", ["console"]);
    expect(after.out).toMatch(/^console\s+checkpoint\s+1\s+lag 0 events$/m);
    expect(after.out).not.toMatch(/memory_index/);

    expect((await run("replay", ["console_access"])).rc).toBe(0);
    expect((await run("lag", ["no_such_projection"])).rc).toBe(2);
  }, 60_000);
});
