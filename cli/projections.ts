// `memrelay replay [name|all]` and `memrelay lag`: rebuild read models from the event log and show lag.
import { openEventLog } from "../eventlog/connection.ts";
import { STREAMS } from "../eventlog/subjects.ts";
import { deadLetterCounts } from "../eventlog/dead-letter.ts";
import { createPool } from "../db/pool.ts";
import { DeliverPolicy } from "@nats-io/jetstream";
import { loadConfig } from "../config/env.ts";
import { createLogger } from "../config/logger.ts";
import { ProjectionGroupRunner, bySubjects, migrateCheckpoints, readCheckpoint, resetProjection, type Projection } from "../projections/runtime.ts";
import { everyProjection } from "../runtime/read-models.ts";
import { ProgressBar } from "./progress.ts";
import { NO_DATABASE_URL } from "./args.ts";

export const REPLAY_HELP = `memrelay replay [<projection>|all] [--dims N] [--resume]
  Rebuilds read models from the event log, from sequence 1: empties the read models, rewinds their checkpoints and
  follows the log to its end, all of them at once (those following the same subjects read them once, together),
  with a progress bar each. It rebuilds read models that another event log built even while that log runs (a
  start refuses those; see "One stack, one database" in the README). A running memrelay notices the rewind and rebuilds too. --resume continues an interrupted replay from the
  read models' checkpoints instead of starting over.
  Projections: memory_index, lexical_index, job_status, alerts, and the developer console's console (spaces, keys,
  buckets, files) and console_access (the access index), and the blob store's blobstore_apps, blobstore_keys,
  blobstore_accounts, blobstore_buckets and blobstore_blobs (default: all). Replaying alerts publishes nothing
  already published: it remembers what it sent, and skips failures older than a day. While the console's read
  models rebuild, its API answers from what they hold so far (keys included: expect 401s until they catch up).

memrelay lag
  Shows each projection's checkpoint, its lag behind the event log and the commits it set aside (dead letters:
  events it could not apply after bounded retries, also on the DLQ stream with an alerts.deadletter.* alert), and
  the commands each actor set aside.`;

export async function projectionsCommand(cmd: "replay" | "lag", args: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(REPLAY_HELP);
    return 0;
  }
  const config = loadConfig(env);
  if (!config.databaseUrl) {
    console.error(NO_DATABASE_URL);
    return 2;
  }
  const dimsArg = args.indexOf("--dims");
  const dims = dimsArg >= 0 ? Number(args[dimsArg + 1]) : config.embeddingDims ?? 1024;
  const log = await openEventLog({ servers: config.natsUrl, name: `memrelay-${cmd}` });
  const db = createPool(config.databaseUrl, 4);
  try {
    await migrateCheckpoints(db);
    const all = everyProjection(dims, { log, network: config.network });
    const which = args.find((a) => !a.startsWith("--") && a !== String(dims)) ?? "all";
    const selected: Projection[] = which === "all" ? all : all.filter((p) => p.name === which);
    if (!selected.length) {
      console.error(`unknown projection ${which}; known: ${all.map((p) => p.name).join(", ")}`);
      return 2;
    }
    if (cmd === "lag") {
      const dead = new Map((await db.query<{ projection: string; n: string }>("SELECT projection, count(*) AS n FROM dead_letters GROUP BY projection")).rows.map((r) => [r.projection, Number(r.n)]));
      for (const p of selected) {
        const cp = await readCheckpoint(db, p.name);
        const consumer = await log.js.consumers.get(STREAMS.events, { filter_subjects: p.filter, ...(cp ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: cp + 1 } : {}) });
        const info = await consumer.info(true);
        await consumer.delete().catch(() => undefined);
        const set = dead.get(p.name) ?? 0;
        console.log(`${p.name.padEnd(18)} checkpoint ${String(cp).padStart(10)}  lag ${info.num_pending} events${set ? `  set aside ${set} (dead letters)` : ""}`);
      }
      // Commands the actor hosts set aside live only on the DLQ stream.
      for (const [key, n] of await deadLetterCounts(log)) if (key.startsWith("actor.")) console.log(`${("actor " + key.slice(6)).padEnd(18)} set aside ${n} commands (dead letters)`);
      return 0;
    }
    // Every selected read model is emptied first (unless an interrupted replay is resumed from its checkpoints), then
    // all rebuild at once: the ones that follow the same subjects share one consumer (each commit crosses the
    // connection and is decoded once), and each applies and checkpoints in its own transactions, so together they
    // use both the machine's cores and Postgres' concurrency.
    const resume = args.includes("--resume");
    for (const p of selected) {
      await p.migrate(db);
      if (!resume) await resetProjection(db, p);
    }
    const t0 = Date.now();
    const logger = createLogger({ format: config.logFormat });
    await Promise.all(
      bySubjects(selected).map(async (projections) => {
        const runner = new ProjectionGroupRunner(log, db, projections, logger, config.network);
        const bars = new Map(projections.map((p) => [p.name, new ProgressBar(`replay ${p.name}`)]));
        const done = new Set<string>();
        // An explicit replay may rebuild read models another event log built, even one still running.
        await runner.start({ takeOver: true });
        // Each read model is reported when it reaches the log's end; the runner stops when all have.
        while (done.size < projections.length) {
          await new Promise((r) => setTimeout(r, 100));
          for (const { projection: { name }, checkpoint, pending } of runner.handles()) {
            if (done.has(name) || !Number.isFinite(pending)) continue;
            const bar = bars.get(name)!;
            if (pending > 0) {
              bar.update(checkpoint, checkpoint + pending, "sequence");
              continue;
            }
            done.add(name);
            bar.update(checkpoint, checkpoint, "sequence");
            bar.finish(`replayed ${name} to sequence ${checkpoint} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
          }
        }
        await runner.stop();
      }),
    );
    return 0;
  } finally {
    await db.end();
    await log.close();
  }
}
