// `npm run chaos`: the long chaos run (issue 32 §3): 64 agents of 8 owners on `memrelay start --cluster`, every fault
// of test/chaos/chaos.ts once (the event log's NATS leader killed -9 and paused 20 s, gateway 2, an actor host and a
// projection instance killed -9, the Postgres primary crashed and restarted, the standby stopped 20 s). Prints the figures and writes them to bench/CHAOS.md (replaced
// on each run), which bench/RESULTS.md copies after the bench's sections. Exits 1 when the accounting does not hold.
import { readFileSync, writeFileSync } from "node:fs";
import { ALL_FAULTS, formatResult, runChaos, type ChaosOptions } from "./chaos.ts";
import { CHAOS_MD, RESULTS_JSON, RESULTS_MD, render } from "../../bench/lib/report.ts";

const opts: ChaosOptions = { agents: 64, owners: 8, faults: ALL_FAULTS, pauseMs: 20_000, quietMs: 15_000, stepPauseMs: 500, drainLimitMs: 15 * 60_000, log: (l) => console.error(l) };
const HEADING = "## Chaos under load (npm run chaos)";

const r = await runChaos(opts);
const section = `${HEADING}\n\n${new Date().toISOString().slice(0, 10)}. ${formatResult(opts, r)}\n`;
console.log(section);
writeFileSync(CHAOS_MD, section);
writeFileSync(RESULTS_MD, render(JSON.parse(readFileSync(RESULTS_JSON, "utf8"))));
const a = r.accounting;
const holds = a.unsettled === 0 && a.failedWithoutReason === 0 && a.ownerMismatches.length === 0 && a.storedTwice === 0 && a.unnamedRows === 0 && a.notRecalledByOwnText === 0 && !a.deadLetters;
process.exit(holds ? 0 : 1);
