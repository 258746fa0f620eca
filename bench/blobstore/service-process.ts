// The blob store benchmark's service process: the service and, beside it, the HTTP floor (`bench/blobstore.ts
// --serve`), and how the bench starts it; plus the backends the raw side and the floor use.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { FsBlobBackend, type BlobBackend } from "../../adapters/blob-bytes/backend.ts";
import { JetStreamBlobBackend } from "../../adapters/blob-bytes/object-store-backend.ts";
import { bodyBuffers, readBuffers } from "../../gateway/recycled-buffers.ts";
import type { BackendKind } from "../../gateway/blobstore/options.ts";

const MiB = 1024 * 1024;

/** A backend of `kind` (JetStream: on its own connection and bucket, so that the sides do not share a socket). */
export async function openBackend(kind: BackendKind, natsUrl: string, dir: string, bucket: string): Promise<{ backend: BlobBackend; close(): Promise<void> }> {
  if (kind === "fs") return { backend: new FsBlobBackend(dir), close: async () => undefined };
  const nc: NatsConnection = await connect({ servers: natsUrl, name: `bench-${bucket}`, noAsyncTraces: true });
  const backend = new JetStreamBlobBackend(nc, { bucket });
  await backend.init();
  return { backend, close: () => nc.close() };
}

export async function startChild(cfg: Record<string, unknown>): Promise<{ child: ChildProcess; url: string; floorUrl: string }> {
  const self = fileURLToPath(new URL("../blobstore.ts", import.meta.url));
  const extra = process.env.BENCH_CHILD_NODE_ARGS ? process.env.BENCH_CHILD_NODE_ARGS.split(" ") : [];
  const child = spawn(process.execPath, [...extra, "--import", "tsx", self, "--serve", JSON.stringify(cfg)], { stdio: ["ignore", "pipe", "inherit"] });
  const [url, floorUrl] = await new Promise<[string, string]>((resolve, reject) => {
    let buf = "";
    child.stdout!.on("data", (c: Buffer) => {
      buf += c.toString();
      const m = /READY (\S+) (\S+)/.exec(buf);
      if (m) resolve([m[1], m[2]]);
    });
    child.once("exit", (code) => reject(new Error(`blob store child exited with ${code}`)));
  });
  return { child, url, floorUrl };
}

/** Child mode: start the service and report its address. */
export async function serve(cfg: { natsUrl: string; databaseUrl: string; dataDir: string; maxBlobBytes: number; backend: BackendKind }): Promise<void> {
  const { startBlobstore } = await import("../../runtime/blobstore.ts");
  const { createLogger } = await import("../../config/logger.ts");
  const warnings = createLogger({ sink: (l) => void (/ (WARN|ERROR) /.test(l) && process.stderr.write(l + "\n")) });
  const svc = await startBlobstore({ ...cfg, port: 0, logger: warnings, gc: { intervalMs: 0 } });
  // The HTTP floor: the same listener layer and backend with none of the service (no auth, events, read models).
  const { HttpServer, json } = await import("../../gateway/http.ts");
  const floorBackend = (await openBackend(cfg.backend, cfg.natsUrl, join(cfg.dataDir, "floor"), "bench_floor")).backend;
  const floor = new HttpServer({ corsOrigins: [] });
  // the same receive buffers as the service's body routes (part of the HTTP layer, not of the service logic)
  const received = bodyBuffers();
  const reads = readBuffers();
  floor.route("put", "/floor/:id", async (req) => json(201, await floorBackend.put(req.bodyStream!, { release: received.release })), {
    bodyMode: "stream",
    bodyLimit: cfg.maxBlobBytes,
    bodyChunk: received.copy,
  });
  floor.route("get", "/floor/:id", async (req) => {
    const o = await floorBackend.open(req.params[0], undefined, { inlineBelow: MiB, alloc: reads.take });
    if (!o) return json(404, { error: "not found" });
    const bytes = o.bytes;
    return bytes ? { status: 200, body: bytes, sent: () => reads.release(bytes) } : { status: 200, stream: o.stream, length: o.size };
  });
  const floorPort = await floor.listen("127.0.0.1", 0);
  process.stdout.write(`READY ${svc.url} http://127.0.0.1:${floorPort}\n`);
  const stop = () => void svc.stop().finally(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
