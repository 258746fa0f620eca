// A Walrus aggregator in front of the stack's blob store whose blob reads the test can make fail: answered with a
// status (5xx, 404), or cut (the connection reset before an answer). What passes is the blob store's own answer.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";
import { startTestStack, type TestStack } from "./stack.ts";

/** What one blob read gets: the blob store's answer, a status of the test's, or a reset connection. */
export type ReadFault = "pass" | "reset" | { readonly status: number };

export interface FaultAggregator {
  readonly url: string;
  /** Where passing reads go (the stack's blob store, known once it has started). */
  upstream: string;
  /** Decides each blob read (GET /v1/blobs/…); `n` counts the reads since the last `reset()`, from 1. */
  fault: (n: number) => ReadFault;
  /** How many blob reads arrived since the last `reset()`. */
  readonly reads: number;
  /** Lets every read pass and starts counting again. */
  reset(): void;
  close(): Promise<void>;
}

export async function startFaultAggregator(): Promise<FaultAggregator> {
  let reads = 0;
  const agg = {
    upstream: "",
    fault: (() => "pass") as FaultAggregator["fault"],
    get reads() {
      return reads;
    },
    reset() {
      reads = 0;
      agg.fault = () => "pass";
    },
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const isRead = req.method === "GET" && (req.url ?? "").startsWith("/v1/blobs/");
    const f = isRead ? agg.fault(++reads) : "pass";
    if (f === "reset") return void req.socket.destroy();
    if (f !== "pass") return void res.writeHead(f.status, { "content-type": "application/json" }).end(JSON.stringify({ error: `fault injected: ${f.status}` }));
    request(`${agg.upstream}${req.url}`, { method: req.method as "GET" }).then(
      async (up) => {
        const body = Buffer.from(await up.body.arrayBuffer());
        res.writeHead(up.statusCode, { "content-type": String(up.headers["content-type"] ?? "application/octet-stream") }).end(body);
      },
      () => req.socket.destroy(),
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return Object.assign(agg, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  });
}

/**
 * A started stack whose relayer reads blobs through a fault aggregator in front of its blob store, the ciphertext
 * cache off (BLOB_CACHE_TTL_SECS=0) so that every read goes through it.
 */
export async function startStackBehindFaultAggregator(): Promise<{ t: TestStack; aggregator: FaultAggregator }> {
  const aggregator = await startFaultAggregator();
  // local-stack.ts takes its aggregator from the process environment (the blob store's port is only known once it listens).
  process.env.BLOBSTORE_AGGREGATOR_URL = aggregator.url;
  try {
    const t = await startTestStack({ BLOB_CACHE_TTL_SECS: "0" });
    aggregator.upstream = t.stack.blobstoreUrl;
    return { t, aggregator };
  } catch (err) {
    await aggregator.close();
    throw err;
  } finally {
    delete process.env.BLOBSTORE_AGGREGATOR_URL;
  }
}
