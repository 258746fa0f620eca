// Section 5: peak memory per process over the run, from /proc/<pid>/status (VmHWM: peak resident set; RssAnon:
// private memory, i.e. without mapped files and shared memory such as Postgres' shared buffers), sampled every 500 ms.
import type { Ctx } from "../lib/context.ts";
import { mib } from "../lib/stats.ts";
import type { SectionResult } from "../lib/report.ts";

export function memorySection(ctx: Ctx, sectionsRun: string[]): SectionResult {
  ctx.sampler.sampleNowSync();
  const peaks = ctx.sampler.snapshot();
  return {
    name: "memory",
    title: "5. Peak memory per process",
    startedAt: new Date().toISOString(),
    seconds: 0,
    rows: peaks.map((p) => ({
      metric: p.label,
      measured:
        p.pids.length > 1
          ? `${p.pids.length} processes: largest VmHWM ${mib(p.hwm)}, largest RssAnon ${mib(p.anon)}, largest sum of RssAnon at one time ${mib(p.sumAnon)}`
          : `VmHWM ${mib(p.hwm)} · peak RssAnon ${mib(p.anon)}`,
    })),
    notes: [
      `Over the sections run: ${sectionsRun.join(", ")}. Each process of a role is one row (a role restarted between sections keeps the larger peak).`,
      "Postgres backends: the connections of the bench database (found by their process titles; pools reconnect, hence many processes over a run); their VmHWM counts the shared buffers they touched (shared_buffers is 128 MB here), RssAnon is their private memory. The postmaster and background processes are shared with other databases and not counted.",
    ],
    data: { peaks },
  };
}
