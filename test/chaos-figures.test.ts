// The chaos run's per-fault figures from its call log (test/chaos/chaos.ts): which calls count for a fault, when
// writes and reads count as recovered, and when a fault is judged served through; and the accounting's count of
// memories stored under two rows.
import { describe, expect, it } from "vitest";
import { MAX_FAILED_SHARE, MIN_CALLS_TO_JUDGE, figures, judge, storedTwice, type FaultFigures } from "./chaos/chaos.ts";
import type { Accepted, CallRecord } from "./chaos/load.ts";

const call = (kind: CallRecord["kind"], start: number, end: number, reason?: string): CallRecord => ({ kind, start, end, failed: reason !== undefined, ...(reason ? { reason } : {}) });

describe("per-fault figures", () => {
  it("counts only calls that end in the window, and recovery ends with the last failed or slow call of each kind", () => {
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

  it("counts a call still in flight at the window's end for the next window, not for both", () => {
    const straddling = call("read", 9_500, 12_000, "503 primary down");
    const first = figures("projection-kill", 1_000, 10_000, [call("read", 2_000, 2_100), straddling], 1_000);
    const next = figures("postgres-restart", 10_000, 20_000, [straddling], 1_000);
    expect([first.calls, first.failedCalls, first.readRecoveryMs]).toEqual([1, 0, 0]);
    expect([next.calls, next.failedCalls, next.readRecoveryMs]).toEqual([1, 1, 2_000]);
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

describe("whether a fault was served through", () => {
  const window = (calls: number, failedCalls: number): FaultFigures => ({ fault: "postgres-restart", durationMs: 9_000, writeRecoveryMs: 0, readRecoveryMs: 0, calls, failedCalls, reasons: {} });

  it("does not judge a window with too few calls, whatever failed in it", () => {
    for (const [calls, failed] of [[0, 0], [2, 2], [MIN_CALLS_TO_JUDGE - 1, 0]]) {
      expect(judge(window(calls, failed))).toEqual({ judged: false, why: `not judged: ${calls} calls during it, fewer than ${MIN_CALLS_TO_JUDGE}` });
    }
  });

  it("holds while at most half the calls failed, and fails past that", () => {
    expect(MAX_FAILED_SHARE).toBe(0.5);
    expect(judge(window(40, 20))).toEqual({ judged: true, holds: true, why: "50.00 % of 40 calls failed, within 50.00 %" });
    expect(judge(window(40, 21))).toEqual({ judged: true, holds: false, why: "52.50 % of 40 calls failed, over 50.00 %" });
    expect(judge(window(MIN_CALLS_TO_JUDGE, MIN_CALLS_TO_JUDGE))).toMatchObject({ judged: true, holds: false });
  });
});

describe("memories stored under more than one row", () => {
  const accepted = (jobId: string, text: string): Accepted => ({ jobId, text, owner: "0xa" });
  const a = accepted("j1", "agent 1 note 1: x y");
  const b = accepted("j2", "agent 1 note 2: z w");
  const c = accepted("j3", "agent 1 note 3: v u");

  it("finds a memory whose own-text recall answers its text twice (a second job for one text), and only it", () => {
    const recalled = new Map([
      [a.jobId, [{ text: a.text }, { text: a.text }]],
      [b.jobId, [{ text: b.text }, { text: c.text }]],
      [c.jobId, [{ text: c.text }]],
    ]);
    expect(storedTwice([a, b, c], recalled)).toEqual([a]);
  });

  it("finds none when each text comes back once", () => {
    expect(storedTwice([a, b], new Map([[a.jobId, [{ text: a.text }, { text: b.text }]], [b.jobId, [{ text: b.text }, { text: a.text }]]]))).toEqual([]);
  });
});
