// The memory index's batch insert (binary COPY of the rows not yet taken, for batches of COPY_MIN_ROWS or more)
// against a real Postgres: a redelivered memory, a second memory of a blob already indexed, and duplicates within one
// batch are left out exactly as ON CONFLICT DO NOTHING leaves them; a time the copy encoder cannot take exactly
// falls back to that insert.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { createPool, inTransaction, type Db } from "../db/pool.ts";
import { migrateCheckpoints } from "../projections/runtime.ts";
import { memoryIndexProjection } from "../projections/relayer/memory-index.ts";
import type { StoredEvent } from "../schemas/envelope.ts";
import type { IndexLogEvent } from "../schemas/relayer/memory-maintenance.ts";
import { COPY_MIN_ROWS } from "../db/copy-binary.ts";
import { encodeVectorF32 } from "../schemas/vector-wire.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";

let database: TestDatabase;
let db: Db;
const DIMS = 4;
const projection = memoryIndexProjection(DIMS);
let seq = 0;

const indexed = (id: string, blob: string, createdAt = "2026-11-26T05:00:00.000Z", owner = "0xowner"): StoredEvent<IndexLogEvent> => ({
  seq: ++seq,
  subject: `evt.job.${id}`,
  event: {
    type: "job.indexed", version: 2, id: randomUUID(), aggregate: `job.${id}`, occurred_at: createdAt, causation_id: id, correlation_id: id,
    data: { object_id: "0x1", wallet: "0x2", owner, namespace: "ns", blob_id: blob, vector_f32: encodeVectorF32([1, 0, 0.5, -0.25]), importance: 0.3, size: 10, created_at: createdAt },
  },
});
/** Other memories, so that the batch is large enough to be copied. */
const filler = () => Array.from({ length: COPY_MIN_ROWS }, () => indexed(randomUUID(), `filler-${randomUUID()}`));
const rows = async () =>
  (await db.query<{ id: string; blob_id: string; created: string; v: string; importance: number }>(
    "SELECT id::text, blob_id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS created, vector::text AS v, importance FROM memories WHERE blob_id NOT LIKE 'filler-%' ORDER BY blob_id, id",
  )).rows;

beforeAll(async () => {
  database = await createTestDatabase();
  db = createPool(database.url, 2);
  await migrateCheckpoints(db);
  await projection.migrate(db);
}, 30_000);

afterAll(async () => {
  await db?.end();
  await database?.drop();
});

describe("memory index batch insert", () => {
  it("leaves out taken ids and blobs, in the table and within the batch", async () => {
    const [a, b, c, d] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await inTransaction(db, (tx) => projection.apply(tx, [indexed(a, "blob-a"), ...filler()]));
    // a again (redelivery), b twice in the batch, c on a's blob (taken), d on b's blob (taken earlier in the batch)
    await inTransaction(db, (tx) => projection.apply(tx, [indexed(a, "blob-a"), indexed(b, "blob-b"), indexed(b.toUpperCase(), "blob-b"), indexed(c, "blob-a"), indexed(d, "blob-b"), ...filler()]));
    expect((await rows()).map((r) => [r.id, r.blob_id])).toEqual([[a, "blob-a"], [b, "blob-b"]]);
    expect(Number((await db.query("SELECT count(*) AS n FROM memories")).rows[0].n)).toBe(2 + 2 * COPY_MIN_ROWS);
    expect((await rows())[0]).toMatchObject({ created: "2026-11-26 05:00:00.000000", v: "[1,0,0.5,-0.25]", importance: 0.3 });
  });

  it("falls back to the row-by-row insert for a time with microseconds, and stores it exactly", async () => {
    const e = randomUUID();
    await inTransaction(db, (tx) => projection.apply(tx, [indexed(e, "blob-e", "2026-11-26T05:00:00.123456Z"), ...filler()]));
    expect((await rows()).find((r) => r.id === e)?.created).toBe("2026-11-26 05:00:00.123456");
  });
});
