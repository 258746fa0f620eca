// The chaos run's per-fault figures from its call log (test/chaos/chaos.ts): which calls count for a fault, and when
// writes and reads count as recovered.
import { describe, expect, it } from "vitest";
import { figures } from "./chaos/chaos.ts";
import type { CallRecord } from "./chaos/load.ts";

const call = (kind: CallRecord["kind"], start: number, end: number, reason?: string): CallRecord => ({ kind, start, end, failed: reason !== undefined, ...(reason ? { reason } : {}) });

describe("per-fault figures", () => {
  it("counts only calls started in the window, and recovery ends with the last failed or slow call of each kind", () => {
    const f = figures("nats-kill", 1_000, 20_000, [
      call("write", 500, 1_500, "503 before"), // started before the fault: not its call
      call("write", 1_100, 1_200),
      call("write", 2_000, 6_000), // slow (over 2 s): writes recover at 6 s
      call("read", 3_000, 3_500, "503 account lookup"),
      call("read", 4_000, 4_100),
      call("write", 21_000, 21_100, "after"), // after the window
    ]);
    expect(f).toEqual({ fault: "nats-kill", durationMs: 19_000, writeRecoveryMs: 5_000, readRecoveryMs: 2_500, calls: 4, failedCalls: 1, reasons: { "503 account lookup": 1 } });
  });

  it("says 0 s when no call of a kind failed or was slow", () => {
    const f = figures("gateway-kill", 0, 10_000, [call("write", 1, 100), call("read", 2, 1_999)]);
    expect([f.writeRecoveryMs, f.readRecoveryMs, f.failedCalls]).toEqual([0, 0, 0]);
  });
});
