// Chaos under load, the short run (issue 32 §3; `npm run chaos` is the long one): 8 agents of 3 owners write and
// recall on `memrelay start --cluster` (its own Postgres primary and hot standby, an actor host and a projection
// instance of their own beside the two relayer processes) while one fault at a time hits it: the event log's NATS
// leader killed -9 and started again, then paused (SIGSTOP) for 6 s; the actor host alone killed -9 with jobs in
// flight; the projection instance alone killed -9; the Postgres primary stopped as a crash does and started again; the
// standby stopped for 6 s. Afterwards every accepted memory is accounted for, and writes and reads recovered within
// each fault's window. Calls that failed after the clients' retries are reported per fault, not asserted away.
// Still only with MEMRELAY_CHAOS=1, not in `npm test`: one of the last three runs found 2 of 182 done memories whose
// blob the blob store served but recall could not decrypt (cause not found yet; README, chaos section), and on this
// shared machine under load a run took 4–7 minutes; a test that fails at random would fail CI at random.
import { describe, expect, it } from "vitest";
import { ALL_FAULTS, formatResult, runChaos, type ChaosOptions } from "./chaos/chaos.ts";

// Gateway 2's kill is left to the long run: its process restarts like the actor host's and the projection instance's
// (the slowest part of a fault here), and those two are covered.
const opts: ChaosOptions = { agents: 8, owners: 3, faults: ALL_FAULTS.filter((f) => f !== "gateway-kill"), pauseMs: 6_000, quietMs: 3_000, stepPauseMs: 1_000, log: (l: string) => process.env.CHAOS_LOG && console.log(l) };

describe("chaos under load on the cluster stack", () => {
  it.runIf(process.env.MEMRELAY_CHAOS === "1")("accounts for every accepted memory after each fault, and writes and reads recover within each fault's window", async () => {
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
  }, 420_000);
});
