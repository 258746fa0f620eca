// Blob store benchmark (issue 3, "Performance"): write and public-read throughput and p99 for 1 KiB and 1 MiB blobs
// at 32 concurrent connections through the service, against writing and reading the same bytes straight to the
// backend in the same run; and the service's resident memory while a 100 MiB blob streams in and out.
//
// The service runs in a child process (its own event loop, as in production) on a private nats-server and a fresh
// database; the load generator (undici, keep-alive) and the raw-backend baseline run in this process. A third side,
// the "HTTP floor", serves the same backend through the same uWS layer in the child with no service logic, to tell
// the cost of HTTP from the cost of the service. Sides alternate in slices of about a second, each side in every position; each reports ops/s, p50/p99 and
// its process's CPU per operation, and every comparison records how busy the rest of the machine was.
// The raw side and the floor use the backend the service uses (--backend, default BLOBSTORE_BACKEND or the service's
// default): for "jetstream" the raw side is the same JetStreamBlobBackend called in this process on its own NATS
// connection and bucket (no HTTP, no service logic, no content cache), for "fs" the FsBlobBackend.
//   node --import tsx bench/blobstore.ts [--seconds 4] [--connections 32] [--stream-mib 100] [--backend jetstream|fs] [--out results.json]
// Env (diagnosis): BENCH_ONLY=1KiB|1MiB, BENCH_SKIP_READS=1, BENCH_SKIP_WRITES=1, BENCH_CHILD_NODE_ARGS="--cpu-prof".
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import type { BackendKind } from "../gateway/blobstore/options.ts";
import { benchBlobstore } from "./blobstore/run.ts";
import { serve } from "./blobstore/service-process.ts";

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const arg = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  if (arg("--serve")) {
    await serve(JSON.parse(arg("--serve")!));
  } else {
    const results = await benchBlobstore({
      seconds: arg("--seconds") ? Number(arg("--seconds")) : undefined,
      connections: arg("--connections") ? Number(arg("--connections")) : undefined,
      streamMiB: arg("--stream-mib") ? Number(arg("--stream-mib")) : undefined,
      backend: arg("--backend") as BackendKind | undefined,
    });
    const text = JSON.stringify(results, null, 2);
    if (arg("--out")) writeFileSync(arg("--out")!, text + "\n");
    process.stdout.write(text + "\n");
    process.exit(0);
  }
}
