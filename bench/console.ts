// Developer console benchmark (issue 5, "Done when"):
//   1. upload throughput for 1 MiB and 10 MiB files through the console (multipart, streamed into the blob store),
//      as a ratio to writing the same bytes to the blob store directly (its data API, same account, same
//      concurrency) — goal ≥ 0.8. Reported twice: at the 202 (bytes stored, job queued) and at completion (job
//      verified the object, recorded the blob on chain, file listed as completed). Beside them, the relay floor: the
//      same bytes through a bare HTTP relay into the blob store (the same uWS layer and storage client as the console,
//      nothing else), the best any console that moves the bytes over HTTP could do on the machine. The three sides
//      take turns in slices (each in every position once), so the machine's drift over a run favours none of them.
//   2. list p99 with 100,000 files in one space (spread over 10 buckets): space and bucket listings, every sort,
//      deep cursors and substring search, sequential requests over HTTP — goal ≤ 30 ms.
//
// The services run in child processes on a private nats-server and a fresh database — by default the blob store
// (with the ledger), the console's listener and the console's actors + projections each in its own process, as the
// services scale; `--layout single` runs everything in one process as `memrelay start` does. The relay floor is a
// process of its own. The load generator runs in this process.
//   node --import tsx bench/console.ts [--seconds 6] [--concurrency 1,4] [--sizes 1,10] [--files 100000] [--layout split|single] [--out file.json]
// --files 0 skips the list measurement, --sizes none the uploads. Diagnosis: BENCH_CPU_PROF=<dir> (CPU profiles of the services processes, and
// phase marks on stderr on the same clock), BENCH_CHILD_NODE_ARGS="--trace-gc" (extra node flags for them).
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { consoleBenchMarkdown } from "./console/results.ts";
import { serve } from "./console/services.ts";
import { runConsoleBench } from "./console/run.ts";

const isMain = process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  const args = process.argv.slice(2);
  const val = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  if (args.includes("--serve")) await serve();
  else {
    const r = await runConsoleBench({
      seconds: val("--seconds") ? Number(val("--seconds")) : undefined,
      concurrency: val("--concurrency") ? val("--concurrency")!.split(",").map(Number) : undefined,
      files: val("--files") ? Number(val("--files")) : undefined,
      sizes: val("--sizes") ? (val("--sizes") === "none" ? [] : val("--sizes")!.split(",").map(Number)) : undefined,
      layout: val("--layout") === "single" ? "single" : "split",
    });
    const md = consoleBenchMarkdown(r);
    console.log(md);
    const outFile = val("--out");
    if (outFile) writeFileSync(outFile, JSON.stringify(r, null, 2) + "\n");
    process.exit(0);
  }
}
