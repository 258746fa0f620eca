// A store queued at the publisher is not given up (issue 31: under testnet, per-blob stores queued behind the
// publisher's 8 sub-wallets hit the relayer's 30 s limit, were sent again to the back of the same queue, and 11 of
// 256 finished in 600 s). A wire-level publisher that answers PUTs late, as a busy Walrus publisher does (it says
// nothing while a store waits for a sub-wallet): the blob port waits for it under its store limit, not its read limit,
// and sends it once; a store past the store limit still fails, as unavailable. The remember job gives an effect that
// waits on a store at least that limit.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WalrusHttpBlobs } from "../adapters/blobs/walrus-http.ts";
import { PortError } from "../adapters/ports.ts";
import { rememberJobActor, type RememberJobPorts } from "../actors/relayer/remember-job.actor.ts";
import type { RememberCommand } from "../schemas/relayer/remember-job.ts";

/** Answers each PUT /v1/blobs `answerAfterMs` after it came in; counts them. */
function slowPublisher(answerAfterMs: number) {
  let puts = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      puts++;
      setTimeout(() => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ newlyCreated: { blobObject: { id: "0x1", blobId: `blob${puts}`, size: 3 } } }));
      }, answerAfterMs);
    });
  });
  return { server, puts: () => puts };
}

describe("a store queued at the publisher", () => {
  // undici checks its timeouts on a coarse tick (about half a second): the figures leave room for it.
  const publisher = slowPublisher(4_000);
  let url = "";
  beforeAll(async () => {
    await new Promise<void>((r) => publisher.server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(publisher.server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => publisher.server.close(() => r())));
  const port = (o: { timeoutMs: number; storeTimeoutMs?: number }) => new WalrusHttpBlobs({ publisherUrl: url, aggregatorUrl: url, cacheTtlSecs: 0, cacheMaxBytes: 0, ...o });

  it("is waited for past the read limit, under the store limit, and sent once", async () => {
    const blobs = port({ timeoutMs: 1_000 });
    const before = publisher.puts();
    await expect(blobs.store(new Uint8Array([1, 2, 3]))).resolves.toMatchObject({ size: 3, alreadyCertified: false });
    expect(publisher.puts() - before).toBe(1);
    await blobs.close();
  });

  it("fails as unavailable once it outlasts the store limit", async () => {
    const blobs = port({ timeoutMs: 10_000, storeTimeoutMs: 1_000 });
    const err = await blobs.store(new Uint8Array([4])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PortError);
    expect((err as PortError).kind).toBe("unavailable");
    await blobs.close();
  });
});

describe("the remember job's effects that wait on a store", () => {
  it("are given the store's limit on top of their own time, so the host does not give up a queued store", () => {
    const storeTimeoutMs = 600_000;
    const actor = rememberJobActor({ storeTimeoutMs, embedder: { deadlineMsFor: () => 1_000 } } as unknown as RememberJobPorts);
    const command = { data: { text: "a memory" } } as RememberCommand;
    for (const effect of ["store", "gather", "quilt"]) expect(actor.effectBudgetMs!(effect, command), effect).toBeGreaterThan(storeTimeoutMs);
    expect(actor.effectBudgetMs!("record", command)).toBe(0);
  });
});
