// The blob store's Walrus quilt routes (docs: "Quilt HTTP APIs"): PUT /v1/quilts as curl -F sends it, each patch read
// back by its quilt patch id and by quilt id + identifier, the patch list, and the refusals. Black-box over HTTP.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash, randomBytes } from "node:crypto";
import type { BlobstoreHandle } from "../gateway/blobstore/options.ts";
import { startTestBlobstore, type TestBlobstore } from "./support/blobstore.ts";
import { encodeQuiltPatchId, parseQuiltPatchId } from "../adapters/blobs/quilt-codec.ts";
import { WalrusHttpBlobs } from "../adapters/blobs/walrus-http.ts";
import { QuiltWriter, type QuiltSealer } from "../adapters/blobs/quilt-writer.ts";
import { sha256BlobIds } from "../adapters/blobs/blob-ids.ts";

const SHARDS = 10; // a small committee: at most 6 patches per quilt, up to 1.8 MB
const MAX_BODY = 64 * 1024;
let svc: BlobstoreHandle;
let bs: TestBlobstore | undefined;
beforeAll(async () => {
  bs = await startTestBlobstore("bs_quilts", { maxBlobBytes: MAX_BODY, walrusEpoch: 3, quiltShards: SHARDS });
  ({ svc } = bs);
}, 60_000);
afterAll(() => bs?.stop());

type Patch = { identifier: string; bytes: Uint8Array };
function form(patches: Patch[], metadata?: unknown): FormData {
  const f = new FormData();
  for (const p of patches) f.append(p.identifier, new Blob([p.bytes]), p.identifier);
  if (metadata !== undefined) f.append("_metadata", JSON.stringify(metadata));
  return f;
}
const putQuilt = (body: FormData | string, query = "?epochs=2", headers: Record<string, string> = {}) => fetch(`${svc.url}/v1/quilts${query}`, { method: "PUT", body, headers });
const get = (path: string) => fetch(`${svc.url}${path}`);
const jsonOf = async (r: Response): Promise<any> => r.json();
const bytesOf = async (r: Response) => new Uint8Array(await r.arrayBuffer());

describe("Walrus publisher: PUT /v1/quilts", () => {
  const patches: Patch[] = [
    { identifier: "memory-b", bytes: randomBytes(3000) },
    { identifier: "memory-a", bytes: randomBytes(17) },
    { identifier: "memory-c", bytes: new Uint8Array(0) },
  ];
  let stored: { identifier: string; quiltPatchId: string }[];
  let quiltId: string;

  it("stores the patches as one blob and answers blobStoreResult and storedQuiltBlobs", async () => {
    const res = await putQuilt(form(patches, [{ identifier: "memory-a", tags: { owner: "0xabc" } }]));
    expect(res.status).toBe(200);
    const body = await jsonOf(res);
    expect(Object.keys(body)).toEqual(["blobStoreResult", "storedQuiltBlobs"]);
    const obj = body.blobStoreResult.newlyCreated.blobObject;
    quiltId = obj.blobId;
    expect(obj.storage.endEpoch).toBe(5);
    stored = body.storedQuiltBlobs;
    expect(stored.map((s) => s.identifier)).toEqual(["memory-a", "memory-b", "memory-c"]);
    for (const s of stored) expect(parseQuiltPatchId(s.quiltPatchId)?.quiltId).toBe(quiltId);
    // one blob: the quilt itself is readable as a blob, and hashes to its id
    const whole = await bytesOf(await get(`/v1/blobs/${quiltId}`));
    expect(createHash("sha256").update(whole).digest("base64url")).toBe(quiltId);
  });

  it("serves each patch by its quilt patch id and by quilt id and identifier, with its identifier header", async () => {
    for (const p of patches) {
      const id = stored.find((s) => s.identifier === p.identifier)!.quiltPatchId;
      const byId = await get(`/v1/blobs/by-quilt-patch-id/${id}`);
      expect(byId.status).toBe(200);
      expect(byId.headers.get("x-quilt-patch-identifier")).toBe(p.identifier);
      expect(Buffer.from(await bytesOf(byId)).equals(Buffer.from(p.bytes))).toBe(true);
      const byName = await get(`/v1/blobs/by-quilt-id/${quiltId}/${p.identifier}`);
      expect(byName.status).toBe(200);
      expect(Buffer.from(await bytesOf(byName)).equals(Buffer.from(p.bytes))).toBe(true);
    }
  });

  it("lists the patches with their ids and tags", async () => {
    const res = await get(`/v1/quilts/${quiltId}/patches`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([
      { identifier: "memory-a", patch_id: stored[0].quiltPatchId, tags: { owner: "0xabc" } },
      { identifier: "memory-b", patch_id: stored[1].quiltPatchId, tags: {} },
      { identifier: "memory-c", patch_id: stored[2].quiltPatchId, tags: {} },
    ]);
  });

  it("answers the same bytes again as alreadyCertified, with the same patch ids", async () => {
    const body = await jsonOf(await putQuilt(form(patches, [{ identifier: "memory-a", tags: { owner: "0xabc" } }])));
    expect(body.blobStoreResult.alreadyCertified.blobId).toBe(quiltId);
    expect(body.storedQuiltBlobs).toEqual(stored);
  });

  it("refuses bad quilts with 400: empty, duplicate, reserved or empty identifiers, bad metadata, not multipart, too many patches", async () => {
    const one = (identifier: string) => ({ identifier, bytes: randomBytes(5) });
    const cases: [string, FormData | string][] = [
      ["empty", form([])],
      ["duplicate", form([one("x"), one("x")])],
      ["reserved", form([one("_x")])],
      ["metadata for no patch", form([one("x")], [{ identifier: "y", tags: {} }])],
      ["metadata not a list", form([one("x")], { identifier: "x" })],
      ["too many patches for the committee", form(Array.from({ length: 7 }, (_, i) => one(`p${i}`)))],
    ];
    for (const [what, body] of cases) {
      const res = await putQuilt(body);
      expect(res.status, what).toBe(400);
      expect((await jsonOf(res)).error, what).toEqual(expect.any(String));
    }
    expect((await putQuilt("x=1", "", { "content-type": "application/x-www-form-urlencoded" })).status).toBe(400);
    expect((await putQuilt(form([one("x")]), "?epochs=0")).status).toBe(400);
  });

  it("refuses a body over the limit with 413", async () => {
    const res = await putQuilt(form([{ identifier: "big", bytes: randomBytes(MAX_BODY + 1) }]));
    expect(res.status).toBe(413);
  });
});

describe("Walrus aggregator: quilt reads", () => {
  it("answers 400 for malformed ids and 404 for unknown quilts, patches and identifiers", async () => {
    const res = await putQuilt(form([{ identifier: "only", bytes: randomBytes(10) }]));
    const body = await jsonOf(res);
    const quiltId = body.blobStoreResult.newlyCreated.blobObject.blobId;
    const ref = parseQuiltPatchId(body.storedQuiltBlobs[0].quiltPatchId)!;
    const unknownQuilt = createHash("sha256").update("no such quilt").digest("base64url");
    expect((await get(`/v1/blobs/by-quilt-patch-id/not-a-patch-id`)).status).toBe(400);
    expect((await get(`/v1/blobs/by-quilt-patch-id/${quiltId}`)).status).toBe(400); // a blob id is not a patch id
    expect((await get(`/v1/blobs/by-quilt-patch-id/${encodeQuiltPatchId({ ...ref, quiltId: unknownQuilt })}`)).status).toBe(404);
    expect((await get(`/v1/blobs/by-quilt-patch-id/${encodeQuiltPatchId({ ...ref, endIndex: ref.endIndex + 1 })}`)).status).toBe(404);
    expect((await get(`/v1/blobs/by-quilt-id/${quiltId}/nope`)).status).toBe(404);
    expect((await get(`/v1/blobs/by-quilt-id/${unknownQuilt}/only`)).status).toBe(404);
    expect((await get(`/v1/blobs/by-quilt-id/bad!/only`)).status).toBe(400);
    expect((await get(`/v1/quilts/${unknownQuilt}/patches`)).status).toBe(404);
    expect((await get(`/v1/quilts/bad/patches`)).status).toBe(400);
    // a plain blob is not a quilt
    const plain = await jsonOf(await fetch(`${svc.url}/v1/blobs`, { method: "PUT", body: randomBytes(100) }));
    expect((await get(`/v1/quilts/${plain.newlyCreated.blobObject.blobId}/patches`)).status).toBe(400);
  });
});

describe("quilt writer and readers against the blob store", () => {
  /** Seals in memory (the relayer seals in the event log, actors/relayer/remember-job.quilts.ts). */
  const sealer: QuiltSealer = { seal: async () => undefined, stored: async () => undefined };
  let jobs = 0;
  /** Reserve and join, as a remember job does; answers the stored patch or throws the reason it was not. */
  const write = async (w: QuiltWriter, contents: Uint8Array) => {
    const o = await w.join(w.reserve(contents.byteLength), `job${jobs++}`, contents)!;
    if (o.kind !== "stored") throw new Error(o.reason);
    return o;
  };
  const port = (o: { verify?: boolean } = {}) =>
    new WalrusHttpBlobs({ publisherUrl: svc.url, aggregatorUrl: svc.url, cacheTtlSecs: 0, cacheMaxBytes: 0, quiltShards: SHARDS, verify: o.verify ? sha256BlobIds : undefined });

  it("gathers concurrent blobs into one quilt; each reads back by its patch id through the blob port, trusted or checked", async () => {
    const writerPort = port();
    const writer = new QuiltWriter((patches) => writerPort.storeQuilt(patches), sealer, { maxPatches: 5, maxBytes: 32 * 1024, maxWaitMs: 20, maxInFlight: 4 });
    const blobs = Array.from({ length: 5 }, (_, i) => randomBytes(100 + i * 500));
    const stored = await Promise.all(blobs.map((b) => write(writer, b)));
    expect(new Set(stored.map((s) => s.quiltId)).size).toBe(1);
    const patches = await jsonOf(await get(`/v1/quilts/${stored[0].quiltId}/patches`));
    expect(patches).toHaveLength(5);
    for (const verify of [false, true]) {
      const reader = port({ verify }); // no cache: every read goes to the aggregator
      for (const [i, s] of stored.entries()) expect(Buffer.from(await reader.read(s.quiltPatchId)).equals(blobs[i])).toBe(true);
      // a plain blob id (the quilt's own) still reads as a blob
      expect(Buffer.from(await reader.read(stored[0].quiltId)).length).toBeGreaterThan(0);
      await reader.close();
    }
    await writerPort.close();
  });

  it("fails every caller with the publisher's reason when the quilt is refused", async () => {
    const writerPort = port();
    // 7 patches do not fit a 10-shard committee's quilt: the publisher answers 400, and all seven callers hear it
    const writer = new QuiltWriter((patches) => writerPort.storeQuilt(patches), sealer, { maxPatches: 7, maxBytes: 32 * 1024, maxWaitMs: 20, maxInFlight: 4 });
    const results = await Promise.allSettled(Array.from({ length: 7 }, () => write(writer, randomBytes(10))));
    expect(results.every((r) => r.status === "rejected")).toBe(true);
    for (const r of results) expect(String((r as PromiseRejectedResult).reason.message)).toMatch(/400.*Too many blobs/);
    await writerPort.close();
  });

  it("a checked read of a quilt laid out for another committee is refused as invalid, not misread", async () => {
    const writerPort = port();
    const { patchIds } = await writerPort.storeQuilt([{ identifier: "x", contents: randomBytes(50) }]);
    const reader = new WalrusHttpBlobs({ publisherUrl: svc.url, aggregatorUrl: svc.url, cacheTtlSecs: 0, cacheMaxBytes: 0, quiltShards: 1000, verify: sha256BlobIds });
    await expect(reader.read(patchIds.get("x")!)).rejects.toMatchObject({ kind: "invalid" });
    await reader.close();
    await writerPort.close();
  });

  it("a missing patch reads as not_found through the blob port", async () => {
    const reader = port();
    const unknown = encodeQuiltPatchId({ quiltId: createHash("sha256").update("gone").digest("base64url"), startIndex: 1, endIndex: 2 });
    await expect(reader.read(unknown)).rejects.toMatchObject({ kind: "not_found" });
    await reader.close();
  });
});
