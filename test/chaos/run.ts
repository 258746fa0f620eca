// `npm run chaos`: the long chaos run (issue 32 §3): 64 agents of 8 owners on `memrelay start --cluster`, a NATS
// node killed -9 and started again, a NATS node paused (SIGSTOP) for 20 s, gateway 2 (with actor host 2 and a
// projection instance) killed -9 and started again. Prints the figures and writes them to bench/RESULTS.md's
// "Chaos under load" section (replaced on each run). Exits 1 when the accounting does not hold.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { formatResult, runChaos, type ChaosOptions } from "./chaos.ts";

const opts: ChaosOptions = { agents: 64, owners: 8, faults: ["nats-kill", "nats-sigstop", "gateway-kill"], pauseMs: 20_000, quietMs: 15_000, stepPauseMs: 500, log: (l) => console.error(l) };
const results = fileURLToPath(new URL("../../bench/RESULTS.md", import.meta.url));
const HEADING = "## Chaos under load (npm run chaos)";

const r = await runChaos(opts);
const section = `${HEADING}\n\n${new Date().toISOString().slice(0, 10)}. ${formatResult(opts, r)}\n`;
console.log(section);
const old = readFileSync(results, "utf8");
const start = old.indexOf(HEADING);
const end = start < 0 ? -1 : old.indexOf("\n## ", start + HEADING.length);
writeFileSync(results, start < 0 ? `${old.trimEnd()}\n\n${section}` : `${old.slice(0, start)}${section}${end < 0 ? "" : old.slice(end)}`);
const a = r.accounting;
const holds = a.unsettled === 0 && a.failedWithoutReason === 0 && a.ownerMismatches.length === 0 && a.duplicateIds === 0 && a.notRecalledByOwnText === 0 && !a.deadLetters;
process.exit(holds ? 0 : 1);
