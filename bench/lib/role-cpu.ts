// CPU per operation by role, from timed windows of tracked processes (bench/sections/scaling.ts): windows of one kind
// pooled over rounds (CPU summed, operations summed), then each tracked label's CPU divided by the operations and
// summed per role, with the idle CPU of the same processes over the same seconds subtracted for the figure above
// idle. Pure: no I/O.
import type { ClusterRole } from "./cluster-env.ts";

/** One timed window: operations done, and CPU milliseconds of each tracked process over it. */
export interface Window {
  readonly ops: number;
  readonly errors: number;
  readonly firstError?: string;
  readonly seconds: number;
  readonly latencies: number[];
  /** label → CPU ms used during the window. */
  readonly cpuMs: Record<string, number>;
  /** Share of a core used by processes outside this run during the window. */
  readonly others: number;
}

/** A window and the idle CPU (ms per second, by label) of the same processes measured just before it. */
export interface MeasuredWindow {
  readonly window: Window;
  readonly idleMsPerSecond: Record<string, number>;
}

/** Windows of one kind pooled: CPU ms by label, operations, seconds, and what the processes use idle over as long. */
export interface Pooled {
  readonly ops: number;
  readonly errors: number;
  readonly seconds: number;
  readonly latencies: number[];
  readonly cpuMs: Record<string, number>;
  /** CPU ms the same processes use over the same seconds without load. */
  readonly idleMs: Record<string, number>;
  readonly others: number[];
}

export function pool(windows: readonly MeasuredWindow[]): Pooled {
  const cpuMs: Record<string, number> = {};
  const idleMs: Record<string, number> = {};
  for (const { window: w, idleMsPerSecond } of windows) {
    for (const [label, ms] of Object.entries(w.cpuMs)) cpuMs[label] = (cpuMs[label] ?? 0) + ms;
    for (const [label, perSecond] of Object.entries(idleMsPerSecond)) idleMs[label] = (idleMs[label] ?? 0) + perSecond * w.seconds;
  }
  return {
    ops: windows.reduce((s, m) => s + m.window.ops, 0),
    errors: windows.reduce((s, m) => s + m.window.errors, 0),
    seconds: windows.reduce((s, m) => s + m.window.seconds, 0),
    latencies: windows.flatMap((m) => m.window.latencies),
    cpuMs,
    idleMs,
    others: windows.map((m) => m.window.others),
  };
}

export interface RoleCpu {
  /** CPU ms per operation by role (instances summed) and by instance. */
  readonly roles: Map<ClusterRole, { total: number; instances: [string, number][] }>;
  /** Over `roles`. */
  readonly total: number;
  /** The same total less what the processes use without load. */
  readonly aboveIdle: number;
  /** Tracked processes outside the roles (the bench process, Postgres' shared processes), CPU ms per operation. */
  readonly outside: [string, number][];
}

/**
 * `roleOf`: tracked label ("<env>: <instance>") → role; labels it does not name are reported outside the roles (a
 * process of another environment that is gone reads 0 and is left out).
 */
export function cpuByRole(roleOf: ReadonlyMap<string, ClusterRole>, roles: readonly ClusterRole[], p: Pooled): RoleCpu {
  const byRole = new Map<ClusterRole, { total: number; instances: [string, number][] }>(roles.map((r) => [r, { total: 0, instances: [] }]));
  const outside: [string, number][] = [];
  const ops = Math.max(1, p.ops);
  let idle = 0;
  for (const [label, ms] of Object.entries(p.cpuMs)) {
    const r = byRole.get(roleOf.get(label)!);
    if (!r) {
      if (ms > 0) outside.push([label.replace(/ \(.*\)$/, ""), ms / ops]);
      continue;
    }
    r.total += ms / ops;
    r.instances.push([label.slice(label.indexOf(": ") + 2), ms / ops]);
    idle += p.idleMs[label] ?? 0;
  }
  const total = [...byRole.values()].reduce((s, r) => s + r.total, 0);
  return { roles: byRole, total, aboveIdle: total - idle / ops, outside };
}
