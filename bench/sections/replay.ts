// Section 4: replay. resetProjection empties the memory index and rewinds its checkpoint; the running projection
// worker notices at its next batch (one fresh commit is appended to wake it) and rebuilds from sequence 1. Timed
// from the reset to the checkpoint passing that commit; the rebuilt rows are checked against the originals.
import { resetProjection, readCheckpoint } from "../../projections/runtime.ts";
import { memoryIndexProjection, MEMORY_INDEX } from "../../projections/relayer/memory-index.ts";
import { STREAMS } from "../../eventlog/subjects.ts";
import type { Ctx } from "../lib/context.ts";
import { appendSynthetic, lastEventSeq, log, waitProjections } from "../lib/context.ts";
import type { BenchEnv } from "../lib/env.ts";
import { OTHERS, cpuShares, formatShares } from "../lib/processes.ts";
import { int, rate, sleep } from "../lib/stats.ts";
import type { SectionResult } from "../lib/report.ts";
import { SYNTHETIC_ROWS, ensureSynthetic } from "./recall.ts";

const WAKE_OWNER = "0x" + "ee".repeat(32);

/** Row count and a digest of every column of every row (except the wake-up rows). */
async function indexDigest(env: BenchEnv): Promise<{ rows: number; digest: string }> {
  const r = await env.db.query<{ n: string; d: string }>(
    "SELECT count(*) AS n, md5(string_agg(id::text || blob_id || owner || namespace || md5(vector::text) || importance || size || created_at, ',' ORDER BY id)) AS d FROM memories WHERE owner <> $1",
    [WAKE_OWNER],
  );
  return { rows: Number(r.rows[0].n), digest: r.rows[0].d };
}

async function countMessages(env: BenchEnv, filter: string): Promise<number> {
  const c = await env.log.js.consumers.get(STREAMS.events, { filter_subjects: filter });
  try {
    return (await c.info(true)).num_pending;
  } finally {
    await c.delete().catch(() => undefined);
  }
}

export async function replaySection(ctx: Ctx): Promise<SectionResult> {
  const started = new Date();
  const t0 = performance.now();
  const env = await ctx.env(["gateway", "projections"]);
  await ensureSynthetic(ctx, env, ctx.n(SYNTHETIC_ROWS, 20_000));
  await waitProjections(env, await lastEventSeq(env), 300_000);
  await env.stopRole("actors");
  const before = await indexDigest(env);
  const commits = await countMessages(env, "evt.job.>");
  // Real jobs store one 2-event commit (accepted + uploaded) and one 1-event commit (indexed); synthetic jobs one 1-event commit.
  const realJobs = Number((await env.db.query<{ n: string }>("SELECT count(*) AS n FROM remember_jobs WHERE owner <> '' AND status IN ('uploaded', 'done')")).rows[0].n);
  const events = commits + realJobs;
  log(`replay: ${int(before.rows)} index rows, ${int(commits)} commits (≈ ${int(events)} events) on evt.job.> — resetting ${MEMORY_INDEX} ...`);

  await ctx.quiet();
  const cpuA = await ctx.sampler.cpu();
  const tReset = performance.now();
  await resetProjection(env.db, memoryIndexProjection(env.services.embedderDims));
  // Wake the idle runner: it notices the rewound checkpoint at its next batch.
  const wake = await appendSynthetic(env, 1, { ownerList: [WAKE_OWNER], inFlight: 1, label: "wake-up commit" });
  const progress: [number, number][] = [];
  let last = 0;
  for (;;) {
    const cp = await readCheckpoint(env.db, MEMORY_INDEX);
    const now = performance.now();
    if (cp < last) progress.length = 0;
    last = cp;
    progress.push([now - tReset, cp]);
    if (cp >= wake.lastSeq && progress.length > 1) break;
    if (now - tReset > 600_000) throw new Error("replay did not finish within 10 minutes");
    if (progress.length % 50 === 0) log(`  replay: checkpoint ${int(cp)} / ${int(wake.lastSeq)} (${((now - tReset) / 1000).toFixed(1)} s)`);
    await sleep(50);
  }
  const seconds = (performance.now() - tReset) / 1000;
  const shares = cpuShares(cpuA, await ctx.sampler.cpu(), seconds);
  ctx.foreign.push(shares.find((x) => x.label === OTHERS)?.share ?? 0);
  const ours = shares.filter((x) => x.label !== OTHERS && !x.label.startsWith("machine total"));
  const cpuPerEvent = ours.map((x) => `${x.label} ${((x.share * seconds * 1e6) / events).toFixed(0)} µs`).join(", ");
  log(`  CPU: ${formatShares(shares)}`);
  const after = await indexDigest(env);
  const total = Number((await env.db.query<{ n: string }>("SELECT count(*) AS n FROM memories")).rows[0].n);
  const equal = after.rows === before.rows && after.digest === before.digest;
  const eventsPerSec = (events + 1) / seconds;
  log(`replay: ${int(events)} events in ${seconds.toFixed(1)} s → ${rate(eventsPerSec, " events/s")} (${rate((commits + 1) / seconds, " commits/s")}, ${rate(total / seconds, " rows/s")}); rows ${before.rows} → ${after.rows}`);
  return {
    name: "replay",
    title: "4. Replay of the memory index",
    startedAt: started.toISOString(),
    seconds: (performance.now() - t0) / 1000,
    rows: [
      { metric: `events/s (${int(events)} events in ${int(commits)} commits → ${int(total)} rows)`, target: "≥ 10,000 events/s", measured: rate(eventsPerSec, " events/s"), pass: eventsPerSec >= 10_000 && equal },
      { metric: "commits/s · index rows/s", measured: `${rate((commits + 1) / seconds, " commits/s")} · ${rate(total / seconds, " rows/s")}` },
      { metric: "replay time (reset → caught up)", measured: `${seconds.toFixed(1)} s` },
      { metric: "CPU per process during the replay (1 core = 100 %)", measured: formatShares(shares) },
      { metric: "CPU per event replayed", measured: cpuPerEvent },
      { metric: "rebuilt index equals the original", measured: equal ? `yes: ${int(before.rows)} rows, same digest of every column (plus the wake-up row)` : `NO: ${before.rows} rows before, ${after.rows} after, digests ${before.digest} / ${after.digest}` },
    ],
    notes: [
      "The projection runs in its own worker process (`memrelay worker --roles projections`), which also runs the job-status projection (idle during the replay: it is not reset). The actor host is stopped and no load runs.",
      "Timed from `resetProjection` (TRUNCATE + checkpoint 0 in one transaction) until the memory-index checkpoint passes a commit appended right after the reset to wake the idle runner (it notices a moved checkpoint only when it applies a batch). Checkpoint polled every 50 ms.",
      "Events: every event of `evt.job.>` is read and decoded; only `job.indexed` ones become rows. Count = commits (exact, from the stream) + one extra event per real job (its accepted+uploaded commit holds two events).",
    ],
    data: { cpu: shares, commits, events, realJobs, seconds, eventsPerSec, rowsBefore: before.rows, rowsAfter: after.rows, digestEqual: equal, progress: progress.filter((_, i) => i % 10 === 0) },
  };
}
