// Two probe read models of one subject family, for tests of a runner that feeds several projections from one
// consumer: `probe_all` keeps every commit (by id), `probe_kept` only the commits of type probe.kept (skipping the
// rest by `wants`, without decoding them). Each row records the transaction that wrote it. Each batch also sleeps a little, so that a replay takes long enough to be
// interrupted midway. Run as a script, it replays both until killed (`node --import tsx probe-group.ts`, with
// NATS_URL and DATABASE_URL, and PROBE_SHARED_COMMIT).
import type { Projection } from "../../projections/runtime.ts";

export const PROBE_KEPT = "probe.kept";
const SLEEP_PER_BATCH = "SELECT pg_sleep(0.005)";

const idsOf = (events: Parameters<Projection["apply"]>[1]) => events.map((e) => (e.event.data as { id: string }).id);

export const probeAll: Projection = {
  name: "probe_all",
  filter: "evt.probe.>",
  migrate: async (d) => void (await d.query("CREATE TABLE IF NOT EXISTS probe_all (id text PRIMARY KEY, seq bigint NOT NULL, tx bigint NOT NULL DEFAULT txid_current())")),
  reset: async (tx) => void (await tx.query("DELETE FROM probe_all")),
  apply: async (tx, events) => {
    await tx.query(SLEEP_PER_BATCH);
    await tx.query("INSERT INTO probe_all (id, seq) SELECT * FROM unnest($1::text[], $2::bigint[]) ON CONFLICT (id) DO NOTHING", [idsOf(events), events.map((e) => e.seq)]);
  },
};

export const probeKept: Projection = {
  name: "probe_kept",
  filter: "evt.probe.>",
  migrate: async (d) => void (await d.query("CREATE TABLE IF NOT EXISTS probe_kept (id text PRIMARY KEY, tx bigint NOT NULL DEFAULT txid_current())")),
  reset: async (tx) => void (await tx.query("DELETE FROM probe_kept")),
  apply: async (tx, events) => {
    if (events.some((e) => e.event.type !== PROBE_KEPT)) throw new Error("probe_kept was given a commit its `wants` skips");
    await tx.query(SLEEP_PER_BATCH);
    await tx.query("INSERT INTO probe_kept (id) SELECT unnest($1::text[]) ON CONFLICT (id) DO NOTHING", [idsOf(events)]);
  },
  wants: (raw) => Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).includes(`"${PROBE_KEPT}"`),
};

if (process.argv[1]?.endsWith("probe-group.ts")) {
  const { openEventLog } = await import("../../eventlog/connection.ts");
  const { createPool } = await import("../../db/pool.ts");
  const { silentLogger } = await import("../../config/logger.ts");
  const { ProjectionGroupRunner } = await import("../../projections/runtime.ts");
  const log = await openEventLog({ servers: process.env.NATS_URL!, name: "probe-group" });
  const db = createPool(process.env.DATABASE_URL!, 4);
  // Small batches: many transactions, so that a kill lands between and inside them. PROBE_SHARED_COMMIT=1: the lanes
  // share their transactions, as live runners do.
  const sharedCommit = process.env.PROBE_SHARED_COMMIT === "1";
  await new ProjectionGroupRunner(log, db, [probeAll, probeKept], silentLogger, "local", { maxBatch: 50, pullMessages: 64, sharedCommit }).start();
  console.log("started");
}
