// The developer console benchmark's options and results (bench/console.ts), the percentile and rounding its figures
// use, and the Markdown section it prints.

export interface ConsoleBenchOptions {
  /** measured seconds per upload scenario */
  readonly seconds?: number;
  /** concurrent uploads: every size is measured at each of these (default 1 and 4) */
  readonly concurrency?: readonly number[];
  /** upload sizes in MiB (default 1 and 10) */
  readonly sizes?: readonly number[];
  /** files seeded into one space for the list measurement (0 skips the list measurement) */
  readonly files?: number;
  /** list requests measured */
  readonly listRequests?: number;
  /**
   * split (default): the blob store, the console's listener and the console's actors + projections in three
   * processes, as the services scale (the relayer benchmark splits its roles the same way); single: everything in one
   * process, as `memrelay start` runs it.
   */
  readonly layout?: "split" | "single";
  readonly log?: (line: string) => void;
}

export interface UploadScenario {
  readonly size_mib: number;
  readonly concurrency: number;
  readonly direct_mib_s: number;
  readonly accepted_mib_s: number;
  readonly completed_mib_s: number;
  readonly ratio_accepted: number;
  readonly ratio_completed: number;
  /** a bare HTTP relay into the blob store (the console's transport alone): what any console could reach at best */
  readonly floor_mib_s: number;
  readonly ratio_floor: number;
  readonly direct_p50_ms: number;
  readonly accepted_p50_ms: number;
  readonly completed_p50_ms: number;
  readonly uploads: number;
  /** CPU milliseconds per MiB uploaded, per process (in `processes` order: the services, then the load generator) */
  readonly cpu_ms_per_mib: { readonly processes: readonly string[]; readonly direct: readonly number[]; readonly floor: readonly number[]; readonly console: readonly number[] };
  /** share of the whole machine's CPU in use during each side (1 = every core busy) */
  readonly machine_busy: { readonly direct: number; readonly console: number };
}

export interface ListScenario {
  readonly name: string;
  readonly requests: number;
  readonly p50_ms: number;
  readonly p99_ms: number;
}

export interface ConsoleBenchResult {
  readonly layout: "split" | "single";
  readonly uploads: readonly UploadScenario[];
  /** null when the list measurement was skipped (files: 0) */
  readonly list: { readonly files: number; readonly seed_seconds: number; readonly p50_ms: number; readonly p99_ms: number; readonly scenarios: readonly ListScenario[] } | null;
  readonly goals: { readonly upload_ratio: number; readonly list_p99_ms: number };
  /** null: not measured */
  readonly pass: { readonly upload: boolean | null; readonly list: boolean | null };
}

export const pct = (xs: number[], p: number) => {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
export const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

/** The results as a Markdown section (for bench/RESULTS.md and the README). */
export function consoleBenchMarkdown(r: ConsoleBenchResult): string {
  const lines = [
    "### Developer console",
    "",
    `Layout: ${r.layout === "split" ? "blob store, console listener and console workers in three processes" : "one services process (as memrelay start)"}.`,
    "",
    "| upload | concurrent | direct to blob store | bare relay (floor) | ratio | console, at 202 | ratio | console, completed | ratio | p50 direct / 202, job after 202 | CPU ms per MiB, direct → console |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ...r.uploads.map(
      (u) =>
        `| ${u.size_mib} MiB | ${u.concurrency} | ${u.direct_mib_s} MiB/s | ${u.floor_mib_s} MiB/s | ${u.ratio_floor} | ${u.accepted_mib_s} MiB/s | **${u.ratio_accepted}** | ${u.completed_mib_s} MiB/s | ${u.ratio_completed} | ${u.direct_p50_ms} / ${u.accepted_p50_ms} / ${u.completed_p50_ms} ms | ${u.cpu_ms_per_mib.processes.map((p, i) => `${p} ${u.cpu_ms_per_mib.direct[i]} → ${u.cpu_ms_per_mib.console[i]}`).join("; ")} |`,
    ),
    "",
    `Goal: ratio ≥ ${r.goals.upload_ratio} (${r.pass.upload ? "met" : "not met"} at the 202).`,
  ];
  const l = r.list;
  if (l) {
    lines.push(
      "",
      `| list, ${l.files.toLocaleString("en")} files in one space | p50 | p99 |`,
      "|---|---|---|",
      ...l.scenarios.map((s) => `| ${s.name} | ${s.p50_ms} ms | ${s.p99_ms} ms |`),
      `| **all** | ${l.p50_ms} ms | **${l.p99_ms} ms** |`,
      "",
      `Goal: p99 ≤ ${r.goals.list_p99_ms} ms (${r.pass.list ? "met" : "not met"}). Seeding ${l.files} files took ${l.seed_seconds} s.`,
    );
  }
  return lines.join("\n");
}
