// The blob store's Walrus-compatible publisher and aggregator routes (REFERENCE.md, "Walrus HTTP API"): what the
// relayer's and the console's blob ports talk to when no Walrus network is configured. Black-box over HTTP.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash, randomBytes } from "node:crypto";
import type { BlobstoreHandle } from "../gateway/blobstore/options.ts";
import type { HttpClient } from "./support/blobstore-testkit.ts";
import { WalrusHttpBlobs } from "../adapters/blobs/walrus-http.ts";
import { startTestBlobstore, type TestBlobstore } from "./support/blobstore.ts";

let svc: BlobstoreHandle;
let http: HttpClient;

let bs: TestBlobstore | undefined;
beforeAll(async () => {
  bs = await startTestBlobstore("bs_walrus", { maxBlobBytes: 2 * 1024 * 1024, walrusEpoch: 7 });
  ({ svc, http } = bs);
}, 60_000);
afterAll(() => bs?.stop());

const blobIdOf = (b: Buffer | string) => createHash("sha256").update(b).digest("base64url");
const store = (query: string, body: Buffer | string) => http("PUT", `/v1/blobs${query}`, { body });

describe("Walrus publisher: PUT /v1/blobs", () => {
  it("answers newlyCreated in Walrus's shape, then alreadyCertified for the same bytes", async () => {
    const bytes = randomBytes(1234);
    const first = await store("?epochs=2", bytes);
    expect(first.status).toBe(200);
    expect(first.headers["content-type"]).toContain("application/json");
    const nc = first.json().newlyCreated;
    expect(Object.keys(first.json())).toEqual(["newlyCreated"]);
    expect(nc).toEqual({
      blobObject: {
        id: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        registeredEpoch: 7,
        blobId: blobIdOf(bytes),
        size: 1234,
        encodingType: expect.any(String),
        certifiedEpoch: 7,
        storage: { id: expect.stringMatching(/^0x[0-9a-f]{64}$/), startEpoch: 7, endEpoch: 9, storageSize: expect.any(Number) },
        deletable: false,
      },
      resourceOperation: { registerFromScratch: { encodedLength: expect.any(Number), epochsAhead: 2 } },
      cost: expect.any(Number),
    });
    // 32 bytes, URL-safe base64 without padding
    expect(nc.blobObject.blobId).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(nc.blobObject.blobId, "base64url")).toHaveLength(32);

    const again = await store("?epochs=2", bytes);
    expect(again.status).toBe(200);
    expect(again.json()).toEqual({ alreadyCertified: { blobId: blobIdOf(bytes), object: nc.blobObject.id, endEpoch: 9 } });
    // a shorter lifetime is covered too
    expect(Object.keys((await store("?epochs=1", bytes)).json())).toEqual(["alreadyCertified"]);
    // a longer one needs a new blob object
    const longer = (await store("?epochs=5", bytes)).json();
    expect(longer.newlyCreated.blobObject.storage.endEpoch).toBe(12);
    expect(longer.newlyCreated.blobObject.id).not.toBe(nc.blobObject.id);
    expect((await store("?epochs=5", bytes)).json().alreadyCertified.object).toBe(longer.newlyCreated.blobObject.id);
  });

  it("creates a new deletable blob object every time; permanent and send_object_to are accepted", async () => {
    const bytes = Buffer.from("deletable payload");
    const a = (await store("?epochs=1&deletable=true", bytes)).json();
    const b = (await store("?epochs=1&deletable=true", bytes)).json();
    expect(a.newlyCreated.blobObject.deletable).toBe(true);
    expect(b.newlyCreated.blobObject.deletable).toBe(true);
    expect(a.newlyCreated.blobObject.id).not.toBe(b.newlyCreated.blobObject.id);
    expect(a.newlyCreated.blobObject.blobId).toBe(b.newlyCreated.blobObject.blobId);
    const p = (await store(`?permanent=true&send_object_to=0x${"ab".repeat(32)}`, bytes)).json();
    expect(p.newlyCreated.blobObject.deletable).toBe(false);
    expect(p.newlyCreated.blobObject.storage.endEpoch).toBe(8); // default 1 epoch
    expect((await store("?epochs=max", "max epochs")).json().newlyCreated.blobObject.storage.endEpoch).toBe(7 + 53);
    // an empty blob is a blob
    const empty = (await store("", Buffer.alloc(0))).json();
    expect(empty.newlyCreated.blobObject.size).toBe(0);
    expect((await http("GET", `/v1/blobs/${empty.newlyCreated.blobObject.blobId}`)).body.length).toBe(0);
  });

  it("refuses bad parameters with 400 and oversized bodies with 413", async () => {
    for (const q of ["?epochs=0", "?epochs=-1", "?epochs=1.5", "?epochs=abc", "?epochs=54", "?deletable=maybe", "?deletable=true&permanent=true", "?send_object_to=xyz", `?send_object_to=0x${"a".repeat(65)}`]) {
      const r = await store(q, "x");
      expect(r.status, q).toBe(400);
      expect(typeof r.json().error).toBe("string");
    }
    // answered from Content-Length while the body is still being sent: a client losing that race sees a reset
    const big = await store("?epochs=1", Buffer.alloc(2 * 1024 * 1024 + 1)).catch((err) => err as Error);
    if (big instanceof Error) expect(big.message).toMatch(/EPIPE|ECONNRESET|socket hang up/);
    else {
      expect(big.status).toBe(413);
      expect(big.json().error).toContain(String(2 * 1024 * 1024));
    }
    expect((await http("GET", "/health")).status).toBe(200);
  });
});

describe("Walrus aggregator: GET /v1/blobs/{blob_id} and /v1/blobs/by-object-id/{id}", () => {
  it("streams the bytes back, by blob id and by object id, with ranges", async () => {
    const bytes = randomBytes(200_000);
    const nc = (await store("?epochs=3", bytes)).json().newlyCreated.blobObject;
    const byId = await http("GET", `/v1/blobs/${nc.blobId}`);
    expect(byId.status).toBe(200);
    expect(byId.headers["content-type"]).toBe("application/octet-stream");
    expect(byId.headers["content-length"]).toBe("200000");
    expect(byId.body.equals(bytes)).toBe(true);
    const byObject = await http("GET", `/v1/blobs/by-object-id/${nc.id}`);
    expect(byObject.status).toBe(200);
    expect(byObject.body.equals(bytes)).toBe(true);
    const part = await http("GET", `/v1/blobs/${nc.blobId}`, { headers: { range: "bytes=1000-1999" } });
    expect(part.status).toBe(206);
    expect(part.body.equals(bytes.subarray(1000, 2000))).toBe(true);
    // the same bytes are readable through the bucket API's public blob-id route
    expect((await http("GET", `/api/v1/blobs/by-blob-id/${nc.blobId}`)).body.equals(bytes)).toBe(true);
  });

  it("answers 404 {error} for unknown ids and 400 for malformed ones", async () => {
    for (const path of [`/v1/blobs/${blobIdOf("never stored")}`, `/v1/blobs/by-object-id/0x${"0".repeat(64)}`]) {
      const r = await http("GET", path);
      expect(r.status, path).toBe(404);
      expect(typeof r.json().error).toBe("string");
    }
    for (const path of ["/v1/blobs/short", `/v1/blobs/${"A".repeat(44)}`, "/v1/blobs/by-object-id/0x12", "/v1/blobs/by-object-id/nothex"]) {
      const r = await http("GET", path);
      expect(r.status, path).toBe(400);
      expect(typeof r.json().error).toBe("string");
    }
  });
});

describe("the relayer's blob port against the blob store", () => {
  it("stores and reads ciphertext through the Walrus routes, unmodified", async () => {
    const port = new WalrusHttpBlobs({ publisherUrl: svc.url, aggregatorUrl: svc.url, cacheTtlSecs: 0, cacheMaxBytes: 0 });
    try {
      const ciphertext = randomBytes(4096);
      const stored = await port.store(ciphertext, { epochs: 2 });
      expect(stored).toMatchObject({ blobId: blobIdOf(ciphertext), size: 4096, alreadyCertified: false });
      expect(stored.objectId).toMatch(/^0x[0-9a-f]{64}$/);
      const again = await port.store(ciphertext, { epochs: 2 });
      expect(again).toMatchObject({ blobId: stored.blobId, alreadyCertified: true, objectId: stored.objectId });
      expect(Buffer.from(await port.read(stored.blobId)).equals(ciphertext)).toBe(true);
      const concurrent = await Promise.all(Array.from({ length: 32 }, () => randomBytes(512)).map(async (b) => ({ b, r: await port.store(b, { deletable: true }) })));
      for (const { b, r } of concurrent) expect(Buffer.from(await port.read(r.blobId)).equals(b)).toBe(true);
      await expect(port.read(blobIdOf("missing"))).rejects.toMatchObject({ kind: "not_found" });
    } finally {
      await port.close();
    }
  });
});
