// Black-box tests of the blob storage service (spec/blobstore.md, issue 3), running it: infrastructure routes, a
// second replica without projections, replay of the read models, and a NATS outage. HTTP in, HTTP out, against the
// started service on a private nats-server and a fresh database (test/support/blobstore-suite.ts).
import { describe, expect, it } from "vitest";
import { startBlobstore } from "../runtime/blobstore.ts";
import { httpClient } from "./support/blobstore-testkit.ts";
import { blobstoreReadModels } from "./support/blobstore-read-models.ts";
import { dataDir, expectError, http, issueAdminKey, nats, newAccount, newBucket, put, svc, tdb, useBlobstoreSuite } from "./support/blobstore-suite.ts";

useBlobstoreSuite();

describe("two replicas", () => {
  it("a gateway without projections serves writes, reads and revocations consistently with the other", async () => {
    const second = await startBlobstore({ natsUrl: nats.url, databaseUrl: tdb.url, port: 0, dataDir, gc: { intervalMs: 0 }, runProjections: false, dbPoolMax: 3 });
    const http2 = httpClient(second.url);
    try {
      const admin = (await issueAdminKey("replica-app")).secret;
      // an account created on one replica is usable on the other at once
      const created = await http2("POST", "/accounts", { bearer: admin, body: {} });
      expect(created.status).toBe(201);
      const apiKey = created.json().api_key.secret;
      const accountId = created.json().account_id;
      expect((await http("POST", "/api/v1/buckets", { bearer: apiKey, body: { name: "replicated" } })).status).toBe(201);
      const w = await http2("PUT", "/api/v1/buckets/replicated/blobs/k", { bearer: apiKey, body: "from replica two" });
      expect(w.status).toBe(201);
      expect((await http("GET", "/api/v1/buckets/replicated/blobs/k")).text()).toBe("from replica two");
      expect((await http2("GET", `/api/v1/blobs/by-blob-id/${w.json().blob_id}`)).text()).toBe("from replica two");
      // a key revoked on one replica is refused by the other on the next request
      const k = (await http("POST", `/accounts/${accountId}/api-keys`, { bearer: admin })).json();
      expect((await http2("GET", "/api/v1/buckets", { bearer: k.secret })).status).toBe(200);
      expect((await http("DELETE", `/accounts/${accountId}/api-keys/${k.id}`, { bearer: admin })).status).toBe(204);
      expectError(await http2("GET", "/api/v1/buckets", { bearer: k.secret }), 401);
      // and a bucket deleted on one is gone for writes on the other
      expect((await http("DELETE", "/api/v1/buckets/replicated?force=true", { bearer: apiKey })).status).toBe(204);
      expectError(await http2("PUT", "/api/v1/buckets/replicated/blobs/k2", { bearer: apiKey, body: "late" }), 404);
      expect((await http2("GET", "/ready")).status).toBe(200);
    } finally {
      http2.close();
      await second.stop();
    }
  });
});

// ------------------------------------------------------------------ infrastructure

describe("infrastructure routes", () => {
  it("health, ready, metrics and an OpenAPI document of every route", async () => {
    expect((await http("GET", "/health")).json()).toMatchObject({ status: "ok", service: "blobstore" });
    const ready = await http("GET", "/ready");
    expect(ready.status).toBe(200);
    expect(ready.json()).toMatchObject({ ready: true, checks: { nats: "ok", postgres: "ok" } });
    const metrics = await http("GET", "/metrics");
    expect(metrics.headers["content-type"]).toContain("text/plain");
    expect(metrics.text()).toMatch(/blobstore_http_requests_total\{route="GET \/health",status="200"\} \d+/);
    expect(metrics.text()).toContain("blobstore_projection_checkpoint");
    const doc = (await http("GET", "/api/docs")).json();
    expect(doc.openapi).toMatch(/^3\./);
    const expected: Record<string, string[]> = {
      "/health": ["get"],
      "/ready": ["get"],
      "/metrics": ["get"],
      "/api/docs": ["get"],
      "/v1/blobs": ["put"],
      "/v1/blobs/{blob_id}": ["get"],
      "/v1/blobs/by-object-id/{object_id}": ["get"],
      "/v1/quilts": ["put"],
      "/v1/quilts/{quilt_id}/patches": ["get"],
      "/v1/blobs/by-quilt-patch-id/{quilt_patch_id}": ["get"],
      "/v1/blobs/by-quilt-id/{quilt_id}/{identifier}": ["get"],
      "/api/v1/blobs/by-blob-id/{blob_id}": ["get"],
      "/api/v1/buckets": ["post", "get"],
      "/api/v1/buckets/{bucket_name}": ["get", "patch", "put", "delete"],
      "/api/v1/buckets/{bucket_name}/blobs": ["get"],
      "/api/v1/buckets/{bucket_name}/blobs/{key}": ["get", "put", "delete"],
      "/api/v1/wallet": ["get"],
      "/accounts": ["post", "get"],
      "/accounts/{account_id}": ["get"],
      "/accounts/{account_id}/api-keys": ["post", "get"],
      "/accounts/{account_id}/api-keys/{key_id}": ["delete"],
      "/accounts/{account_id}/access-keys": ["post", "get"],
      "/accounts/{account_id}/access-keys/{access_key_id}": ["delete"],
    };
    expect(Object.keys(doc.paths).sort()).toEqual(Object.keys(expected).sort());
    for (const [p, methods] of Object.entries(expected)) expect(Object.keys(doc.paths[p]).sort()).toEqual([...methods].sort());
    expect(doc.paths["/accounts"].post.security).toEqual([{ adminKey: [] }]);
    expect(doc.paths["/api/v1/buckets"].get.security).toEqual([{ apiKey: [] }]);
    expect(doc.paths["/api/v1/buckets/{bucket_name}/blobs/{key}"].get.security).toEqual([]);
  });
});

// ------------------------------------------------------------------ replay

describe("replay", () => {

  const snapshot = () => blobstoreReadModels(tdb.url);


  it("rebuilds every read model equal to before, and credentials keep their state", async () => {
    // Given some of everything, including a revoked key, a deleted blob, a deleted bucket and Walrus objects
    const admin = await issueAdminKey("replay-app");
    const acct = await newAccount(admin.secret);
    const revokedKey = (await http("POST", `/accounts/${acct.accountId}/api-keys`, { bearer: admin.secret })).json();
    await http("DELETE", `/accounts/${acct.accountId}/api-keys/${revokedKey.id}`, { bearer: admin.secret });
    const bucket = await newBucket(acct.apiKey);
    await put(acct.apiKey, bucket, "keep", "kept");
    await put(acct.apiKey, bucket, "gone", "deleted");
    await http("DELETE", `/api/v1/buckets/${bucket}/blobs/gone`, { bearer: acct.apiKey });
    const doomed = await newBucket(acct.apiKey);
    await put(acct.apiKey, doomed, "x", "x");
    await http("DELETE", `/api/v1/buckets/${doomed}?force=true`, { bearer: acct.apiKey });
    await http("PUT", "/v1/blobs?epochs=3", { body: "walrus" });
    expect(await svc.caughtUp()).toBe(true);
    const before = await snapshot();
    expect(before.bs_keys.length).toBeGreaterThan(3);
    expect(before.bs_objects.length).toBeGreaterThan(0);

    // When every projection is dropped and rebuilt from the log
    await svc.replay();

    // Then the read models are equal, and behaviour with them
    const after = await snapshot();
    expect(after).toEqual(before);
    expectError(await http("GET", "/api/v1/buckets", { bearer: revokedKey.secret }), 401);
    expect((await http("GET", "/api/v1/buckets", { bearer: acct.apiKey })).status).toBe(200);
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/keep`)).text()).toBe("kept");
    expectError(await http("GET", `/api/v1/buckets/${bucket}/blobs/gone`), 404);
    expectError(await http("GET", `/api/v1/buckets/${doomed}/blobs/x`), 404);
  });
});

// ------------------------------------------------------------------ outages (last: it stops the shared nats-server)

describe("a NATS outage", () => {
  it("is reported by /ready, answered with 503 on routes that need the log, and recovered from", async () => {
    const admin = (await issueAdminKey("outage-app")).secret;
    const acct = await newAccount(admin);
    const bucket = await newBucket(acct.apiKey);
    expect((await put(acct.apiKey, bucket, "k", "before")).status).toBe(201);
    await nats.stop();
    try {
      const ready = await http("GET", "/ready");
      expect(ready.status).toBe(503);
      expect(ready.json().checks.nats).toBe("down");
      // public reads come from the read models and the backend: they keep working
      expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/k`)).text()).toBe("before");
      // credential checks read the log: refused as unavailable, never let through, never a 500
      const r = await http("GET", "/api/v1/buckets", { bearer: acct.apiKey });
      expect(r.status).toBe(503);
      expect(typeof r.json().error).toBe("string");
    } finally {
      await nats.restart();
    }
    let ok = false;
    for (let i = 0; i < 100 && !ok; i++) {
      ok = (await http("GET", "/ready")).status === 200 && (await put(acct.apiKey, bucket, "k", "after")).status === 201;
      if (!ok) await new Promise((res) => setTimeout(res, 200));
    }
    expect(ok).toBe(true);
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/k`)).text()).toBe("after");
  });
});
