// The blob store's Walrus publisher and aggregator routes under a network profile (MEMRELAY_NETWORK_PROFILE): a new
// blob is answered after register + slivers + certify, a read after a storage node's read, and the answers are the
// same as without the profile. Black-box over HTTP, loose bounds (the waits are fixed here, jitter aside).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { startTestBlobstore, type TestBlobstore } from "./support/blobstore.ts";
import { NETWORK_PROFILES, type NetworkProfile } from "../config/network-profile.ts";

const fixed = (msv: number) => ({ minMs: msv, maxMs: msv });
// 2 sub-wallets (Walrus's publisher has 8): enough for one store at a time, few enough to see concurrent ones queue
const profile: NetworkProfile = { ...NETWORK_PROFILES.testnet, sharedTxFinality: fixed(200), storageNodeWrite: fixed(100), storageNodeRead: fixed(150), publisherSubWallets: 2 };

let bs: TestBlobstore | undefined;
beforeAll(async () => {
  bs = await startTestBlobstore("bs_walrus_profile", { networkProfile: profile });
}, 60_000);
afterAll(() => bs?.stop());

async function timed<T>(p: Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const v = await p;
  return [v, performance.now() - t0];
}

describe("the Walrus routes under a network profile", () => {
  it("answers a new blob after register, slivers and certify, and its reads after a node's read", async () => {
    const bytes = randomBytes(1000);
    const [stored, storeMs] = await timed(bs!.http("PUT", "/v1/blobs", { body: bytes }));
    expect(stored.status).toBe(200);
    const blobId = stored.json().newlyCreated.blobObject.blobId as string;
    expect(storeMs).toBeGreaterThanOrEqual(2 * 200 + 100 - 5);
    const [read, readMs] = await timed(bs!.http("GET", `/v1/blobs/${blobId}`));
    expect(read.status).toBe(200);
    expect(Buffer.compare(read.body, bytes)).toBe(0);
    expect(readMs).toBeGreaterThanOrEqual(150 - 5);
    expect(readMs).toBeLessThan(storeMs);
    // the same bytes again: a status read, not a new store
    const [again, againMs] = await timed(bs!.http("PUT", "/v1/blobs", { body: bytes }));
    expect(Object.keys(again.json())).toEqual(["alreadyCertified"]);
    expect(againMs).toBeGreaterThanOrEqual(150 - 5);
    expect(againMs).toBeLessThan(storeMs);
  });

  it("stores a quilt of many patches with one register, slivers and certify, and reads a patch after a node's read", async () => {
    const form = new FormData();
    for (let i = 0; i < 20; i++) form.append(`m${i}`, new Blob([randomBytes(300)]));
    const [res, storeMs] = await timed(fetch(`${bs!.svc.url}/v1/quilts`, { method: "PUT", body: form }));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { storedQuiltBlobs: { quiltPatchId: string }[] };
    expect(body.storedQuiltBlobs).toHaveLength(20);
    // one blob's store, not twenty: well under two
    expect(storeMs).toBeGreaterThanOrEqual(2 * 200 + 100 - 5);
    expect(storeMs).toBeLessThan(2 * (2 * 200 + 100));
    const [patch, readMs] = await timed(fetch(`${bs!.svc.url}/v1/blobs/by-quilt-patch-id/${body.storedQuiltBlobs[7].quiltPatchId}`));
    expect(patch.status).toBe(200);
    expect((await patch.arrayBuffer()).byteLength).toBe(300);
    expect(readMs).toBeGreaterThanOrEqual(150 - 5);
  });

  it("pays each register and certify from a sub-wallet carrying one transaction at a time: concurrent stores past them wait", async () => {
    // 4 stores, 2 sub-wallets: registers 1-2 at 0-200 ms, 3-4 at 200-400; certifies 1-2 wait for a free sub-wallet
    // (400-600), 3-4 follow (600-800). Alone, a store takes 500 ms.
    const stores = await Promise.all([0, 1, 2, 3].map(() => timed(bs!.http("PUT", "/v1/blobs", { body: randomBytes(500) }))));
    for (const [res] of stores) expect(res.status).toBe(200);
    const ms = stores.map(([, t]) => t).sort((a, b) => a - b);
    expect(ms[0]).toBeGreaterThanOrEqual(600 - 5);
    expect(ms[3]).toBeGreaterThanOrEqual(800 - 5);
  });

  it("still refuses bad input with a 4xx (a missing blob is a 404)", async () => {
    const missing = await bs!.http("GET", `/v1/blobs/${"A".repeat(43)}`);
    expect(missing.status).toBe(404);
    const bad = await bs!.http("PUT", "/v1/blobs?epochs=0", { body: "x" });
    expect(bad.status).toBe(400);
  });
});
