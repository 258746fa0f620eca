// Chaos under load, the short run (issue 32 §3; `npm run chaos` is the long one): 8 agents of 3 owners write and
// recall on `memrelay start --cluster` while a NATS node is killed -9 and started again, another is paused
// (SIGSTOP) for 8 s, and gateway 2 (with actor host 2 and a projection instance) is killed -9 and started again.
// Afterwards every accepted memory is accounted for, and writes and reads recovered within each fault's window. Calls
// that failed after the clients' retries are reported, not asserted away: during a paused NATS node the gateways
// answer 503 "account lookup is unavailable" for longer than the retries last (see the README's chaos section).
import { describe, expect, it } from "vitest";
import { formatResult, runChaos, type ChaosOptions } from "./chaos/chaos.ts";

const opts: ChaosOptions = { agents: 8, owners: 3, faults: ["nats-kill", "nats-sigstop", "gateway-kill"], pauseMs: 8_000, quietMs: 4_000, stepPauseMs: 1_000, log: (l) => process.env.CHAOS_LOG && console.log(l) };

describe("chaos under load on the cluster stack", () => {
  it("accounts for every accepted memory after a NATS node kill, a NATS node pause and a gateway kill", async () => {
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
  }, 150_000);
});
