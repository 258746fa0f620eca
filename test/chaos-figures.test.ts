// The chaos run's per-fault figures from its call log (test/chaos/chaos.ts): which calls count for a fault, and when
// writes and reads count as recovered.
import { describe, expect, it } from "vitest";
import { figures } from "./chaos/chaos.ts";
import type { CallRecord } from "./chaos/load.ts";

const call = (kind: CallRecord["kind"], start: number, end: number, reason?: string): CallRecord => ({ kind, start, end, failed: reason !== undefined, ...(reason ? { reason } : {}) });

describe("per-fault figures", () => {
  it("counts only calls that overlap the window, and recovery ends with the last failed or slow call of each kind", () => {
    const f = figures("nats-kill", 1_000, 20_000, [
      call("write", 500, 900, "503 before"), // ended before the fault: not its call
      call("write", 1_100, 1_200),
      call("write", 2_000, 6_000), // slow (over 2 s): writes recover at 6 s
      call("read", 3_000, 3_500, "503 account lookup"),
      call("read", 4_000, 4_100),
      call("write", 21_000, 21_100, "after"), // after the window
    ], 1_000);
    expect(f).toEqual({ fault: "nats-kill", durationMs: 19_000, writeRecoveryMs: 5_000, readRecoveryMs: 2_500, calls: 4, failedCalls: 1, reasons: { "503 account lookup": 1 } });
  });

  it("counts a call in flight at the injection (a paused node holds calls, and then none starts)", () => {
    const f = figures("nats-sigstop", 1_000, 10_000, [call("write", 500, 1_200), call("read", 800, 7_000, "503 account lookup")], 1_000);
    expect([f.calls, f.failedCalls, f.readRecoveryMs, f.writeRecoveryMs]).toEqual([2, 1, 6_000, 0]);
  });

  it("says 0 s when no call of a kind failed or was slow", () => {
    const f = figures("gateway-kill", 0, 10_000, [call("write", 1, 100), call("read", 2, 1_999)], 0);
    expect([f.writeRecoveryMs, f.readRecoveryMs, f.failedCalls]).toEqual([0, 0, 0]);
  });

  it("counts a call as slow only past twice the slowest 1 % before the first fault, when that is over 2 s", () => {
    const before = Array.from({ length: 100 }, (_, i) => call("write", i * 10, i * 10 + 3_000)); // 3 s each before the fault
    const f = figures("nats-sigstop", 5_000, 30_000, [...before, call("write", 6_000, 11_000), call("write", 7_000, 14_000)], 5_000);
    expect(f.writeRecoveryMs).toBe(9_000); // the 7 s call is slow (over 6 s), the 5 s one is not
  });
});
