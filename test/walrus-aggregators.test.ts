// The blob port's cold reads against several Walrus-compatible aggregators on loopback (real HTTP): one slow, one
// failing, one good; racing after BLOBSTORE_AGGREGATOR_RACE_AFTER_MS or all at once with 0; failover; not_found only
// when every aggregator says so; the losers' requests are cancelled. And the consistency check of what they answer.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { WalrusHttpBlobs } from "../adapters/blobs/walrus-http.ts";
import { PortError } from "../adapters/ports.ts";
import { createHash } from "node:crypto";
import { WalrusClient } from "@mysten/walrus";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { sha256BlobIds, walrusBlobId, walrusBlobIds } from "../adapters/blobs/blob-ids.ts";

interface Aggregator { url: string; hits: number; aborted: number; server: Server }

/** An aggregator answering `GET /v1/blobs/{id}` after `delayMs` with `status` (200: the blob's bytes). */
async function aggregator(name: string, status: number, delayMs = 0): Promise<Aggregator> {
  const a: Aggregator = { url: "", hits: 0, aborted: 0, server: undefined as never };
  a.server = createServer((req, res) => {
    a.hits++;
    const timer = setTimeout(() => {
      res.statusCode = status;
      res.end(status === 200 ? `bytes of ${req.url?.split("/").pop()} from ${name}` : `${name} says ${status}`);
    }, delayMs);
    req.socket.once("close", () => {
      if (!res.writableEnded) {
        a.aborted++;
        clearTimeout(timer);
      }
    });
  });
  await new Promise<void>((r) => a.server.listen(0, "127.0.0.1", r));
  a.url = `http://127.0.0.1:${(a.server.address() as { port: number }).port}`;
  return a;
}

let slow: Aggregator, failing: Aggregator, good: Aggregator, missing: Aggregator, missing2: Aggregator;
beforeAll(async () => {
  [slow, failing, good, missing, missing2] = await Promise.all([aggregator("slow", 200, 3_000), aggregator("failing", 503), aggregator("good", 200, 20), aggregator("missing", 404), aggregator("missing2", 404)]);
});
afterAll(() => [slow, failing, good, missing, missing2].forEach((a) => a.server.close()));

const blobs = (urls: string[], raceAfterMs?: number) =>
  new WalrusHttpBlobs({ publisherUrl: "http://127.0.0.1:1", aggregatorUrl: urls[0], extraAggregatorUrls: urls.slice(1), raceAfterMs, cacheTtlSecs: 0, cacheMaxBytes: 0 });
const text = (b: Uint8Array) => Buffer.from(b).toString();
const reset = () => [slow, failing, good, missing, missing2].forEach((a) => ((a.hits = 0), (a.aborted = 0)));

describe("cold reads across aggregators", () => {
  it("races the next aggregator after the delay when the first is slow, and cancels the loser", async () => {
    reset();
    const port = blobs([slow.url, good.url], 100);
    const t0 = Date.now();
    expect(text(await port.read("b1"))).toBe("bytes of b1 from good");
    expect(Date.now() - t0).toBeLessThan(1_000);
    await new Promise((r) => setTimeout(r, 100));
    expect(slow.aborted).toBe(1);
    await port.close();
  });

  it("fails over at once from a failing aggregator, without waiting for the delay", async () => {
    reset();
    const port = blobs([failing.url, good.url], 10_000);
    const t0 = Date.now();
    expect(text(await port.read("b2"))).toBe("bytes of b2 from good");
    expect(Date.now() - t0).toBeLessThan(1_000);
    await port.close();
  });

  it("asks only the first when it answers in time", async () => {
    reset();
    const port = blobs([good.url, slow.url], 1_000);
    expect(text(await port.read("b3"))).toBe("bytes of b3 from good");
    expect(slow.hits).toBe(0);
    await port.close();
  });

  it("races all at once with 0", async () => {
    reset();
    const port = blobs([slow.url, failing.url, good.url], 0);
    expect(text(await port.read("b4"))).toBe("bytes of b4 from good");
    expect([slow.hits, failing.hits, good.hits]).toEqual([1, 1, 1]);
    await port.close();
  });

  it("reports not_found only when every aggregator says so, otherwise the outage", async () => {
    const none = blobs([missing.url, missing2.url], 10);
    await expect(none.read("b5")).rejects.toMatchObject({ kind: "not_found" });
    const mixed = blobs([missing.url, failing.url], 10);
    const err = await mixed.read("b6").catch((e) => e);
    expect(err).toBeInstanceOf(PortError);
    expect((err as PortError).kind).toBe("unavailable");
    await none.close();
    await mixed.close();
  });
});

describe("the consistency check of cold reads", () => {
  const real = Buffer.from("the real ciphertext");
  const realId = createHash("sha256").update(real).digest("base64url");
  /** An aggregator answering every blob with `body` after `delayMs`. */
  async function serving(body: Buffer, delayMs: number): Promise<Server> {
    const server = createServer((_req, res) => setTimeout(() => res.end(body), delayMs));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return server;
  }
  const urlOf = (s: Server) => `http://127.0.0.1:${(s.address() as { port: number }).port}`;

  it("takes the next aggregator's answer when the first answers other bytes, and trusts the first when skipped", async () => {
    const [tampering, honest] = await Promise.all([serving(Buffer.from("tampered bytes"), 0), serving(real, 50)]);
    try {
      const opts = { publisherUrl: "http://127.0.0.1:1", aggregatorUrl: urlOf(tampering), extraAggregatorUrls: [urlOf(honest)], raceAfterMs: 0, cacheTtlSecs: 0, cacheMaxBytes: 0 };
      const checked = new WalrusHttpBlobs({ ...opts, verify: sha256BlobIds });
      expect(text(await checked.read(realId))).toBe("the real ciphertext");
      const trusting = new WalrusHttpBlobs(opts);
      expect(text(await trusting.read(realId))).toBe("tampered bytes");
      const alone = new WalrusHttpBlobs({ ...opts, extraAggregatorUrls: [], verify: sha256BlobIds });
      await expect(alone.read(realId)).rejects.toMatchObject({ kind: "unavailable", message: /consistency check/ });
      await Promise.all([checked.close(), trusting.close(), alone.close()]);
    } finally {
      tampering.close();
      honest.close();
    }
  });

  it("computes Walrus blob ids as the Walrus SDK does (its encoder, the committee's shards)", async () => {
    const bytes = new TextEncoder().encode("a memory's ciphertext");
    const sdk = await new WalrusClient({ network: "testnet", suiClient: new SuiJsonRpcClient({ url: "http://127.0.0.1:1", network: "testnet" }) }).computeBlobMetadata({ bytes, numShards: 10 });
    expect(walrusBlobId(bytes, 10)).toBe(sdk.blobId);
    expect(walrusBlobIds(10)(sdk.blobId, bytes)).toBe(true);
    expect(walrusBlobIds(10)(sdk.blobId, new TextEncoder().encode("other bytes"))).toBe(false);
  });
});
