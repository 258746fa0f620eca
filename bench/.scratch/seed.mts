// Experiment: how fast each projection builds synthetic job.indexed commits.
import { Ctx, appendSynthetic, lastEventSeq } from "../lib/context.ts";
import { readCheckpoint } from "../../projections/runtime.ts";
const N = Number(process.env.N ?? 20000);
const ctx = new Ctx({ quick: true, encryptedNats: true, cpuProf: !!process.env.PROF, profileDir: "/tmp/exp/prof" });
const env = await ctx.env(["projections"]);
const names = ["memory_index", "lexical_index", "job_status", "alerts"];
const t0 = performance.now();
const { result: r, cpu } = await ctx.cpuWindow(async () => {
  const a = await appendSynthetic(env, N, { owners: 200 });
  console.log(`appended ${N} in ${a.seconds.toFixed(1)} s`);
  const last = await lastEventSeq(env);
  const done = new Map<string, number>();
  while (done.size < 3) {
    for (const n of names.slice(0, 3)) if (!done.has(n) && (await readCheckpoint(env.db, n)) >= last) done.set(n, (performance.now() - t0) / 1000);
    await new Promise((r) => setTimeout(r, 200));
    if (performance.now() - t0 > 600_000) break;
  }
  return done;
});
console.log([...r].map(([n, s]) => `${n} caught up at ${s.toFixed(1)} s (${Math.round(N / s)} rows/s)`).join("\n"));
console.log("CPU:", cpu);
await ctx.teardown();
process.exit(0);
