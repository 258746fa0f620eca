// Chaos under load, the short run (issue 32 §3; `npm run chaos` is the long one): 8 agents of 3 owners write and
// recall on `memrelay start --cluster` (its own Postgres primary and hot standby, an actor host and a projection
// instance of their own beside the two relayer processes) while one fault at a time hits it: the event log's NATS
// leader killed -9 and started again, then paused (SIGSTOP) for 6 s; gateway 2's process killed -9 (answers lost
// after the relayer took the request: the clients' retries must store nothing twice); the actor host alone killed -9
// with jobs in flight; the projection instance alone killed -9; the Postgres primary stopped as a crash does and
// started again; the standby stopped for 6 s. Every fault of the long run, shorter. Afterwards every accepted memory
// is accounted for exactly (settled with a reason, rows per owner, no row under a job no 202 named, no done memory
// whose own-text recall finds its text under a second row, each done memory recalled by its own text, no dead
// letter), and writes and reads recovered within RECOVERY_BOUND_MS of each fault:
// from the injection to the end of the last call that failed or was slow (calls still in flight when the fault's
// window closed count; reads held by a NATS leader election or the primary's restart took 10–15 s to end here).
// Calls that failed after the clients' retries are reported per fault; a fault whose window had MIN_CALLS_TO_JUDGE
// calls must have served most of them (judge in test/chaos/chaos.ts), one with fewer is reported as not judged.
// Part of `npm test`. Its first run inside the whole suite (stop 37) left 202 of 594 accepted jobs unsettled at the
// deadline (200 without a status answer, 2 reading `uploaded`) and failed 3 on an event-log outage counted as wallet
// attempts (fixed: actors/relayer/wallet-attempts.ts). Not reproduced since, alone or beside other suites at a load
// average of 10; what may have held it is mended (a follower of a paused node now ends instead of waiting out the
// pause: eventlog/follow-consumer.ts; a bulk status of jobs the read model lacks reads the log a few at a time), and
// the accounting now says why a job stayed unsettled (the status call's error, its read-model row, `memrelay lag`, and
// each job's events, quilt and command). Stop 39's last CI run left 3 jobs `uploaded` with their `job.indexed` in the
// log: nats-server 2.9.10's stream replicas had diverged (different events at the same sequence on two nodes), and a
// projection fed from the divergent one skipped commits; it now runs on nats-server 2.10 or later (bench/NOTES.md,
// "Issue 32, stop 40").
import { describe, expect, it } from "vitest";
import { ALL_FAULTS, formatResult, judge, runChaos, type ChaosOptions } from "./chaos/chaos.ts";

const RECOVERY_BOUND_MS = 30_000;
const opts: ChaosOptions = { agents: 8, owners: 3, faults: ALL_FAULTS, pauseMs: 6_000, quietMs: 3_000, stepPauseMs: 1_000, drainLimitMs: 120_000, log: (l: string) => process.env.CHAOS_LOG && console.log(l) };

describe("chaos under load on the cluster stack", () => {
  it("accounts for every accepted memory after each fault, and writes and reads recover within 30 s of each", async () => {
    const r = await runChaos(opts);
    const report = formatResult(opts, r);
    console.log(report);
    const a = r.accounting;
    expect(a.accepted, report).toBeGreaterThan(50);
    expect(r.faults.map((f) => f.fault)).toEqual(opts.faults);
    for (const f of r.faults) {
      // a window with too few calls to judge is reported so (formatResult), not passed off as served through
      const j = judge(f);
      if (j.judged) expect(j.holds, `${f.fault}: ${j.why}\n${report}`).toBe(true);
      expect(f.writeRecoveryMs, report).toBeLessThan(RECOVERY_BOUND_MS);
      expect(f.readRecoveryMs, report).toBeLessThan(RECOVERY_BOUND_MS);
    }
    expect(a.unsettled, report).toBe(0);
    expect(a.failedWithoutReason, report).toBe(0);
    expect(a.ownerMismatches, report).toEqual([]);
    expect(a.storedTwice, report).toBe(0);
    expect(a.unnamedRows, report).toBe(0);
    expect(a.notRecalledByOwnText, report).toBe(0);
    expect(a.deadLetters, report).toBe("");
  }, 420_000);
});
