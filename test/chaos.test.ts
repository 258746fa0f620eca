// Chaos under load, the short run (issue 32 §3; `npm run chaos` is the long one): 8 agents of 3 owners write and
// recall on `memrelay start --cluster` while a NATS node is killed -9 and started again and another is paused
// (SIGSTOP) for 8 s; the second case also kills gateway 2 (with actor host 2 and a projection instance). Both run only
// with MEMRELAY_CHAOS=1 (and `npm run chaos` is the long run): they find an open bug (in some runs many done memories
// are no longer recalled first by their own text, with every row in place; README, chaos section), and a test that
// fails on a known open bug in part of its runs would fail CI at random.
// Afterwards every accepted memory is accounted for, and writes and reads recovered within each fault's window. Calls
// that failed after the clients' retries are reported, not asserted away: during a paused NATS node the gateways
// answer 503 "account lookup is unavailable" for longer than the retries last (see the README's chaos section).
import { describe, expect, it } from "vitest";
import { formatResult, runChaos, type ChaosOptions } from "./chaos/chaos.ts";

const base = { agents: 8, owners: 3, pauseMs: 8_000, quietMs: 4_000, stepPauseMs: 1_000, log: (l: string) => process.env.CHAOS_LOG && console.log(l) };

describe("chaos under load on the cluster stack", () => {
  it.runIf(process.env.MEMRELAY_CHAOS === "1")("accounts for every accepted memory after a NATS node kill and a NATS node pause", () => accountsForEveryMemory({ ...base, faults: ["nats-kill", "nats-sigstop"] }), 150_000);

  it.runIf(process.env.MEMRELAY_CHAOS === "1")("accounts for every accepted memory after a NATS node kill, a NATS node pause and a gateway kill", () =>
    accountsForEveryMemory({ ...base, faults: ["nats-kill", "nats-sigstop", "gateway-kill"] }), 180_000);
});

async function accountsForEveryMemory(opts: ChaosOptions): Promise<void> {
  const r = await runChaos(opts);
  const report = formatResult(opts, r);
  console.log(report);
  const a = r.accounting;
  expect(a.accepted, report).toBeGreaterThan(50);
  expect(r.faults.map((f) => f.fault)).toEqual(opts.faults);
  for (const f of r.faults) {
    expect(f.calls, report).toBeGreaterThan(0);
    expect(f.failedCalls, report).toBeLessThan(f.calls);
    expect(f.writeRecoveryMs, report).toBeLessThan(f.durationMs);
    expect(f.readRecoveryMs, report).toBeLessThan(f.durationMs);
  }
  expect(a.unsettled, report).toBe(0);
  expect(a.failedWithoutReason, report).toBe(0);
  expect(a.ownerMismatches, report).toEqual([]);
  expect(a.duplicateIds, report).toBe(0);
  expect(a.notRecalledByOwnText, report).toBe(0);
  expect(a.deadLetters, report).toBe("");
}
