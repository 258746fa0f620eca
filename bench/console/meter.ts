// CPU meters of the console benchmark (Linux /proc): per process, and for the whole machine.
import { readFileSync } from "node:fs";

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
export function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

export interface Meter {
  procs: number[];
  busy: number;
  total: number;
}

/** Machine-wide busy and total CPU seconds (all cores), from /proc/stat. */
export function machineCpu(): { busy: number; total: number } {
  try {
    const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: (total - f[3] - (f[4] ?? 0)) / 100, total: total / 100 };
  } catch {
    return { busy: 0, total: 0 };
  }
}
