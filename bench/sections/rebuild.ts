// Section: rebuild. `memrelay replay all` (every read model: the relayer's, the console's and the blob store's, at
// once, as an operator recovering would run it) over the main environment's event log, against its floor: a
// bare binary COPY of the same rows into the same tables (indexes in place), timed in the same run. Goal (issue 15):
// the replay reaches at least 0.5× the floor's speed.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { unlink } from "node:fs/promises";
import { migrateCheckpoints, resetProjection } from "../../projections/runtime.ts";
import { everyProjection } from "../../runtime/read-models.ts";
import type { Ctx } from "../lib/context.ts";
import { lastEventSeq, log, waitProjections } from "../lib/context.ts";
import type { BenchEnv } from "../lib/env.ts";
import { repoRoot } from "../lib/processes.ts";
import { int, rate } from "../lib/stats.ts";
import type { SectionResult } from "../lib/report.ts";
import { SYNTHETIC_ROWS, ensureSynthetic } from "./recall.ts";

export const REBUILD_TARGET = 0.5;

/** Rows of every table in the bench database's public schema. */
async function tableRows(env: BenchEnv): Promise<Map<string, number>> {
  const tables = (await env.db.query<{ t: string }>("SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")).rows.map((r) => r.t);
  const out = new Map<string, number>();
  for (const t of tables) out.set(t, Number((await env.db.query<{ n: string }>(`SELECT count(*) AS n FROM "${t}"`)).rows[0]!.n));
  return out;
}

/** `memrelay replay all` as a child process with the environment's variables; resolves with its exit code. */
function replayAll(ctx: Ctx, env: BenchEnv, perModel: [string, number][]): Promise<number | null> {
  const child = spawn(process.execPath, [...ctx.workerNodeArgs(), join(repoRoot, "bin", "memrelay.mjs"), "replay", "all"], {
    env: { ...process.env, ...env.workerEnv, LOG_FORMAT: "json" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  ctx.sampler.track("memrelay replay all", child.pid!);
  // Its progress (stderr) ends in one line per read model: "replayed <name> to sequence <n> in <s> s".
  let err = "";
  let pending = "";
  child.stderr!.on("data", (b: Buffer) => {
    err = (err + b.toString()).slice(-2_000);
    pending += b.toString();
    const lines = pending.split(/[\r\n]/);
    pending = lines.pop()!;
    for (const line of lines) {
      const m = /replayed (\S+) to sequence \d+ in ([\d.]+) s/.exec(line);
      if (m) perModel.push([m[1]!, Number(m[2])]);
    }
  });
  return new Promise((resolve) =>
    child.once("exit", (code) => {
      ctx.sampler.untrack("memrelay replay all");
      if (code !== 0) log(`  replay all exited ${code}: ${err.trim().split("\n").slice(-3).join(" | ")}`);
      resolve(code);
    }),
  );
}

export async function rebuildSection(ctx: Ctx): Promise<SectionResult> {
  const started = new Date();
  const t0 = performance.now();
  const env = await ctx.env(["gateway", "projections"]);
  await ensureSynthetic(ctx, env, ctx.n(SYNTHETIC_ROWS, 20_000));
  await waitProjections(env, await lastEventSeq(env), 600_000);
  // Nothing else applies events meanwhile: the operator's replay is the only runner.
  await env.stopRole("actors");
  await env.stopRole("projections");

  // The read models' tables are the ones their resets empty.
  const projections = everyProjection(env.services.embedderDims, { log: env.log, network: env.workerEnv.CHAIN_NETWORK ?? "localnet" });
  await migrateCheckpoints(env.db);
  const before = await tableRows(env);
  for (const p of projections) {
    await p.migrate(env.db);
    await resetProjection(env.db, p);
  }
  const emptied = await tableRows(env);
  const tables = [...before].filter(([t, n]) => n > 0 && emptied.get(t) === 0).map(([t]) => t);
  const events = await lastEventSeq(env);

  await ctx.quiet();
  log(`rebuild: memrelay replay all over ${int(events)} EVT messages (${projections.length} read models) ...`);
  const perModel: [string, number][] = [];
  const replay = await ctx.cpuWindow(() => replayAll(ctx, env, perModel));
  if (replay.result !== 0) throw new Error(`memrelay replay all exited ${replay.result}`);
  const rebuilt = await tableRows(env);
  const rows = tables.reduce((s, t) => s + rebuilt.get(t)!, 0);
  const byModel = perModel.map(([name, sec]) => `${name} ${sec.toFixed(1)} s`).join(", ");
  log(`  ${replay.seconds.toFixed(1)} s (${byModel}): ${tables.map((t) => `${t} ${int(rebuilt.get(t)!)}`).join(", ")}`);
  log(`  CPU ms per 1,000 rows: ${replay.perOp(rows / 1000)}; shares of a core: ${replay.cpu}`);

  // The floor: the same rows, dumped in binary, copied back into the same (emptied) tables with their indexes.
  const file = (t: string) => `/tmp/memrelay-rebuild-floor-${process.pid}-${t}.bin`;
  for (const t of tables) await env.db.query(`COPY "${t}" TO '${file(t)}' WITH (FORMAT binary)`);
  await env.db.query(`TRUNCATE ${tables.map((t) => `"${t}"`).join(", ")}`);
  await ctx.quiet();
  log(`rebuild: binary COPY of the same ${int(rows)} rows into ${tables.length} tables ...`);
  const floor = await ctx.cpuWindow(async () => {
    for (const t of tables) await env.db.query(`COPY "${t}" FROM '${file(t)}' WITH (FORMAT binary)`);
  });
  await Promise.all(tables.map((t) => unlink(file(t)).catch(() => undefined)));
  const copied = await tableRows(env);
  const same = tables.every((t) => copied.get(t) === rebuilt.get(t) && rebuilt.get(t) === before.get(t));
  const ratio = floor.seconds / replay.seconds;
  log(`  ${floor.seconds.toFixed(1)} s; replay ÷ floor speed ${ratio.toFixed(2)}×; CPU ms per 1,000 rows: ${floor.perOp(rows / 1000)}`);
  await env.startRole("projections");

  return {
    name: "rebuild",
    title: "Rebuild of every read model (memrelay replay all) against a bare binary COPY (issue 15)",
    startedAt: started.toISOString(),
    seconds: (performance.now() - t0) / 1000,
    rows: [
      { metric: `memrelay replay all (${int(events)} EVT messages → ${int(rows)} rows in ${tables.length} tables)`, measured: `${replay.seconds.toFixed(1)} s (${rate(rows / replay.seconds, " rows/s")}); CPU ms per 1,000 rows: ${replay.perOp(rows / 1000)}` },
      { metric: "  time per read model (as `memrelay replay all` reports it)", measured: byModel },
      { metric: "bare binary COPY of the same rows into the same tables (the floor)", measured: `${floor.seconds.toFixed(1)} s (${rate(rows / floor.seconds, " rows/s")}); CPU ms per 1,000 rows: ${floor.perOp(rows / 1000)}` },
      { metric: "rows after the replay and after the COPY equal those before", measured: same ? "yes" : `no: ${tables.map((t) => `${t} ${before.get(t)}/${rebuilt.get(t)}/${copied.get(t)}`).join(", ")}` },
      { metric: "replay speed ÷ floor speed", target: `≥ ${REBUILD_TARGET}×`, measured: `${ratio.toFixed(2)}×`, pass: ratio >= REBUILD_TARGET && same },
    ],
    notes: [
      `The main environment's event log after the synthetic seeding (${int(ctx.synthetic.rows)} job.indexed commits of other owners, plus the real jobs of earlier sections). The projections' worker and the actor host are stopped; \`memrelay replay all\` runs as the operator would (its own process; every read model at once, those of one subject family from one consumer); its time runs from its start to its exit, and its CPU (and that of its Postgres backends) is counted up to their last reading before they exit.`,
      `Read-model tables: those the projections' resets empty (${tables.join(", ")}). Floor: each dumped with \`COPY … TO … (FORMAT binary)\` after the replay, truncated, then copied back with \`COPY … FROM … (FORMAT binary)\` by the server, indexes in place, one table after another.`,
    ],
    data: { events, rows, tables, replaySeconds: replay.seconds, floorSeconds: floor.seconds, ratio, same },
  };
}
