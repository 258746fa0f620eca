// Black-box: manual mode (client-encrypted bytes and a vector of the caller's), forget and stats, over HTTP against
// the started stack (test/support/relayer-maintenance-suite.ts).
import { describe, expect, it } from "vitest";
import { request } from "undici";
import { randomBytes } from "node:crypto";
import { b64, dims, newUser, ok, post, remember, settled, t, unitVector, useRelayerMaintenanceSuite } from "./support/relayer-maintenance-suite.ts";

useRelayerMaintenanceSuite();

describe("manual mode", () => {
  it("uploads the bytes, records the blob on chain, indexes the vector, and recalls it by vector", async () => {
    const u = await newUser();
    const bytes = randomBytes(300);
    const vector = unitVector(0.1);
    const m = await ok(u, "/api/remember/manual", { encrypted_data: b64(bytes), vector, namespace: "manual" });
    expect(m).toMatchObject({ owner: u.id.owner, namespace: "manual" });
    expect(m.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(m.blob_id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // The blob object is on chain with the namespace, and the blob store serves the exact bytes.
    expect(await t.stack.chain.getBlob(u.id.owner, m.blob_id)).toMatchObject({ owner: u.id.owner, namespace: "manual", size: 300 });
    const stored = await request(`${t.stack.blobstoreUrl}/v1/blobs/${m.blob_id}`);
    expect(Buffer.from(await stored.body.arrayBuffer()).equals(bytes)).toBe(true);
    // Recallable on the next request, owner- and namespace-scoped.
    await ok(u, "/api/remember/manual", { encrypted_data: b64(randomBytes(50)), vector: unitVector(0.7), namespace: "manual" });
    const r = await ok(u, "/api/recall/manual", { vector, namespace: "manual", limit: 1000 });
    expect(r.total).toBe(2);
    expect(r.results[0]).toMatchObject({ blob_id: m.blob_id, importance: 0.5 });
    expect(r.results[0].distance).toBeLessThan(0.01);
    expect(r.results[0].distance).toBeLessThan(r.results[1].distance);
    expect(new Date(r.results[0].created_at).toISOString()).toBe(r.results[0].created_at);
    expect(r.results[0].score).toBeUndefined();
    const composite = await ok(u, "/api/recall/manual", { vector, namespace: "manual", scoring_weights: { semantic: 1, importance: 1 } });
    expect(typeof composite.results[0].score).toBe("number");
    const other = await newUser();
    expect((await ok(other, "/api/recall/manual", { vector, namespace: "manual" })).total).toBe(0);
    expect((await ok(u, "/api/recall/manual", { vector, namespace: "elsewhere" })).total).toBe(0);
  });

  it("registering the same ciphertext again names the same memory, once", async () => {
    const u = await newUser();
    const payload = { encrypted_data: b64(randomBytes(64)), vector: unitVector(0.2), namespace: "dup" };
    const a = await ok(u, "/api/remember/manual", payload);
    const b = await ok(u, "/api/remember/manual", payload);
    expect(b).toEqual(a);
    expect((await ok(u, "/api/stats", { namespace: "dup" })).memory_count).toBe(1);
    const elsewhere = await post(u, "/api/remember/manual", { ...payload, namespace: "other" });
    expect(elsewhere.status).toBe(409);
  });

  const zeros = () => new Array(dims()).fill(0);
  it.each([
    ["encrypted_data not base64", () => ({ encrypted_data: "not base64!", vector: unitVector() })],
    ["encrypted_data with a stray padding", () => ({ encrypted_data: "QU=JD", vector: unitVector() })],
    ["encrypted_data empty", () => ({ encrypted_data: "", vector: unitVector() })],
    ["encrypted_data missing", () => ({ vector: unitVector() })],
    ["vector of the wrong dimension", () => ({ encrypted_data: "QUJD", vector: unitVector().slice(1) })],
    ["vector too long", () => ({ encrypted_data: "QUJD", vector: [...unitVector(), 0.5] })],
    ["vector with a string", () => ({ encrypted_data: "QUJD", vector: ["1", ...unitVector().slice(1)] })],
    ["vector all zeros", () => ({ encrypted_data: "QUJD", vector: zeros() })],
    ["vector out of halfvec range", () => ({ encrypted_data: "QUJD", vector: [1e6, ...unitVector().slice(1)] })],
    ["vector missing", () => ({ encrypted_data: "QUJD" })],
  ])("manual remember: %s → 400 with {error}", async (_name, payload) => {
    const u = await newUser();
    const r = await post(u, "/api/remember/manual", payload());
    expect(r.status).toBe(400);
    expect(typeof r.body.error).toBe("string");
    expect((await ok(u, "/api/stats", {})).memory_count).toBe(0);
  });

  it("manual remember and recall: non-finite values, wrong dimension and bad limits → 400", async () => {
    const u = await newUser();
    const nonFinite = `{"encrypted_data":"QUJD","vector":[1e999${",0.1".repeat(dims() - 1)}]}`;
    expect((await post(u, "/api/remember/manual", nonFinite)).status).toBe(400);
    expect((await post(u, "/api/recall/manual", `{"vector":[1e999${",0.1".repeat(dims() - 1)}]}`)).status).toBe(400);
    expect((await post(u, "/api/recall/manual", { vector: unitVector().slice(2) })).status).toBe(400);
    expect((await post(u, "/api/recall/manual", { vector: unitVector(), limit: 0 })).status).toBe(400);
    expect((await post(u, "/api/recall/manual", { vector: unitVector(), limit: 2.5 })).status).toBe(400);
    const r = await post(u, "/api/recall/manual", { vector: unitVector(), scoring_weights: { recency: -1 } });
    expect(r.status).toBe(400);
    expect(typeof r.body.error).toBe("string");
  });
});

describe("forget and stats", () => {
  it("answer zero for an empty or unknown namespace", async () => {
    const u = await newUser();
    expect(await ok(u, "/api/stats", { namespace: "nothing-here" })).toEqual({ memory_count: 0, storage_bytes: 0, namespace: "nothing-here", owner: u.id.owner });
    expect(await ok(u, "/api/forget", { namespace: "nothing-here" })).toEqual({ deleted: 0, namespace: "nothing-here", owner: u.id.owner });
    // No body at all means the default namespace.
    expect(await ok(u, "/api/stats", "")).toMatchObject({ memory_count: 0, namespace: "default" });
    expect(await ok(u, "/api/forget", "")).toMatchObject({ deleted: 0, namespace: "default" });
  });

  it("stats counts the owner's namespace; forget deletes its rows only, and the blobs persist", async () => {
    const [u, other] = [await newUser(), await newUser()];
    await remember(u, ["I keep bees on the roof", "The hive produced 12 kg of honey"], "bees");
    await remember(u, ["keep me: I live in Porto"], "kept");
    await remember(other, ["someone else's bees"], "bees");
    await settled();
    const manual = await ok(u, "/api/remember/manual", { encrypted_data: b64(randomBytes(100)), vector: unitVector(0.3), namespace: "bees" });
    const stats = await ok(u, "/api/stats", { namespace: "bees" });
    expect(stats).toMatchObject({ memory_count: 3, namespace: "bees", owner: u.id.owner });
    expect(stats.storage_bytes).toBeGreaterThan(100);
    expect(await ok(u, "/api/forget", { namespace: "bees" })).toEqual({ deleted: 3, namespace: "bees", owner: u.id.owner });
    expect((await ok(u, "/api/stats", { namespace: "bees" })).memory_count).toBe(0);
    expect((await u.client.recall("bees", { namespace: "bees" })).total).toBe(0);
    expect((await ok(u, "/api/stats", { namespace: "kept" })).memory_count).toBe(1);
    expect((await ok(other, "/api/stats", { namespace: "bees" })).memory_count).toBe(1);
    expect(await t.stack.chain.getBlob(u.id.owner, manual.blob_id)).not.toBeNull();
    expect((await t.stack.chain.listBlobs(u.id.owner, { namespace: "bees", limit: 10 })).length).toBe(3);
  });

  it("forget and stats: malformed body or namespace → 400", async () => {
    const u = await newUser();
    for (const path of ["/api/forget", "/api/stats"]) {
      expect((await post(u, path, "{nope")).status).toBe(400);
      expect((await post(u, path, { namespace: 7 })).status).toBe(400);
      expect((await post(u, path, { namespace: "é".repeat(128) })).status).toBe(400);
    }
  });
});
