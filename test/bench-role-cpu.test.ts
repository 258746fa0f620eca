// The scaling bench's arithmetic (bench/lib/role-cpu.ts): windows pooled over rounds, CPU per operation summed per
// role and instance, the idle CPU of the same processes subtracted, processes outside the roles kept apart.
import { describe, expect, it } from "vitest";
import { cpuByRole, pool, type MeasuredWindow } from "../bench/lib/role-cpu.ts";
import type { ClusterRole } from "../bench/lib/cluster-env.ts";

const ROLES: ClusterRole[] = ["gateway", "actor host", "projections"];
const roleOf = new Map<string, ClusterRole>([
  ["scaling: gateway 1", "gateway"],
  ["scaling: gateway 2", "gateway"],
  ["scaling: actor host 1", "actor host"],
  ["scaling: projections 1", "projections"],
]);

const window = (ops: number, seconds: number, cpuMs: Record<string, number>, idleMsPerSecond: Record<string, number> = {}): MeasuredWindow => ({
  window: { ops, errors: 0, seconds, latencies: Array.from({ length: ops }, () => 1), cpuMs, others: 0.1 },
  idleMsPerSecond,
});

describe("CPU per operation by role", () => {
  it("given two rounds, when pooled, then CPU and operations add up before dividing (not a mean of the rounds' ratios)", () => {
    const p = pool([window(10, 10, { "scaling: actor host 1": 100 }), window(30, 10, { "scaling: actor host 1": 200 })]);
    expect(p.ops).toBe(40);
    expect(p.seconds).toBe(20);
    expect(p.latencies).toHaveLength(40);
    expect(p.others).toEqual([0.1, 0.1]);
    const c = cpuByRole(roleOf, ROLES, p);
    expect(c.roles.get("actor host")!.total).toBeCloseTo(7.5); // 300 ms / 40, where the mean of 10 and 6.67 would be 8.33
    expect(c.total).toBeCloseTo(7.5);
  });

  it("given two gateways, then the role's figure is their sum and each instance is listed", () => {
    const c = cpuByRole(roleOf, ROLES, pool([window(100, 10, { "scaling: gateway 1": 300, "scaling: gateway 2": 100, "scaling: actor host 1": 500 })]));
    expect(c.roles.get("gateway")!.total).toBeCloseTo(4);
    expect(c.roles.get("gateway")!.instances).toEqual([
      ["gateway 1", 3],
      ["gateway 2", 1],
    ]);
    expect(c.roles.get("projections")!.total).toBe(0);
    expect(c.total).toBeCloseTo(9);
  });

  it("given idle CPU per second, then the figure above idle subtracts it over the window's own length", () => {
    // 10 s window, 50 ops; the actor host idles at 5 ms/s: 50 ms of its 400 are not the load's.
    const c = cpuByRole(roleOf, ROLES, pool([window(50, 10, { "scaling: actor host 1": 400, "scaling: gateway 1": 100 }, { "scaling: actor host 1": 5 })]));
    expect(c.total).toBeCloseTo(10);
    expect(c.aboveIdle).toBeCloseTo(9);
  });

  it("given processes outside the roles, then they are reported apart and not in the total; gone ones (0 ms) are left out", () => {
    const c = cpuByRole(
      roleOf,
      ROLES,
      pool([window(10, 5, { "scaling: gateway 1": 20, "bench (load generator, observer)": 30, "postgres shared processes (WAL writer, checkpointer, ...)": 10, "main: nats-server": 0 })]),
    );
    expect(c.total).toBeCloseTo(2);
    expect(c.outside).toEqual([
      ["bench", 3],
      ["postgres shared processes", 1],
    ]);
  });

  it("given a window with no operation, then figures stay finite (divided by one, not zero)", () => {
    const c = cpuByRole(roleOf, ROLES, pool([window(0, 5, { "scaling: gateway 1": 20 })]));
    expect(c.total).toBe(20);
    expect(Number.isFinite(c.aboveIdle)).toBe(true);
  });
});
