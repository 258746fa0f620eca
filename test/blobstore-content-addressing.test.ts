// Black-box tests of the blob storage service (spec/blobstore.md, issue 3), content-addressed storage: identical
// bytes stored once, released with their last reference, and swept by the garbage collector, also after a crashed
// writer. HTTP in, HTTP out, against the started service on a private nats-server and a fresh database
// (test/support/blobstore-suite.ts).
import { beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import type { FsBlobBackend } from "../adapters/blob-bytes/backend.ts";
import { expectError, http, issueAdminKey, md5, nats, newAccount, newBucket, put, sha256Id, svc, useBlobstoreSuite } from "./support/blobstore-suite.ts";

useBlobstoreSuite();

// ------------------------------------------------------------------ content addressing

describe("content-addressed storage", () => {
  let apiKey: string;
  beforeAll(async () => {
    const admin = (await issueAdminKey("cas-app")).secret;
    apiKey = (await newAccount(admin)).apiKey;
  });

  it("stores identical bytes once and deletes them with their last reference", async () => {
    const bucket = await newBucket(apiKey);
    const bytes = randomBytes(5000);
    const id = sha256Id(bytes);
    const w1 = (await put(apiKey, bucket, "one", bytes)).json();
    const w2 = (await put(apiKey, bucket, "two", bytes)).json();
    expect(w1.blob_id).toBe(id);
    expect(w2.blob_id).toBe(id);
    expect(w1.deduplicated).toBe(false);
    expect(w2.deduplicated).toBe(true);
    const backend = svc.backend as FsBlobBackend;
    let files = 0;
    for await (const b of backend.list()) if (b === id) files++;
    expect(files).toBe(1);

    expect((await http("DELETE", `/api/v1/buckets/${bucket}/blobs/one`, { bearer: apiKey })).status).toBe(204);
    await svc.gc({ graceMs: 0 });
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/two`)).body.equals(bytes)).toBe(true);
    expect((await http("GET", `/api/v1/blobs/by-blob-id/${id}`)).status).toBe(200);
    expect(await backend.stat(id)).not.toBeNull();

    expect((await http("DELETE", `/api/v1/buckets/${bucket}/blobs/two`, { bearer: apiKey })).status).toBe(204);
    expectError(await http("GET", `/api/v1/blobs/by-blob-id/${id}`), 404);
    const swept = await svc.gc({ graceMs: 0 });
    expect(swept.deferred).toBe(false);
    expect(await backend.stat(id)).toBeNull();
    // storing it again brings it back
    expect((await put(apiKey, bucket, "three", bytes)).status).toBe(201);
    expect((await http("GET", `/api/v1/blobs/by-blob-id/${id}`)).body.equals(bytes)).toBe(true);
  });

  it("overwriting a key releases the old content; the grace period protects fresh bytes", async () => {
    const bucket = await newBucket(apiKey);
    const v1 = randomBytes(300);
    const v2 = randomBytes(300);
    await put(apiKey, bucket, "k", v1);
    await put(apiKey, bucket, "k", v2);
    expectError(await http("GET", `/api/v1/blobs/by-blob-id/${sha256Id(v1)}`), 404);
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/k`)).body.equals(v2)).toBe(true);
    // within the grace period nothing is removed
    await svc.gc({ graceMs: 60_000 });
    expect(await svc.backend.stat(sha256Id(v1))).not.toBeNull();
    await svc.gc({ graceMs: 0 });
    expect(await svc.backend.stat(sha256Id(v1))).toBeNull();
    expect(await svc.backend.stat(sha256Id(v2))).not.toBeNull();
  });

  it("bytes of refused writes do not stay behind", async () => {
    const bucket = await newBucket(apiKey);
    await put(apiKey, bucket, "x", "first");
    const orphan = randomBytes(2000);
    expectError(await put(apiKey, bucket, "x", orphan, { "if-match": `"${md5("other")}"` }), 412);
    expectError(await put(apiKey, bucket, "x", orphan, { "content-md5": Buffer.alloc(16).toString("base64") }), 400);
    await svc.gc({ graceMs: 0 });
    expect(await svc.backend.stat(sha256Id(orphan))).toBeNull();
    // a full sweep finds bytes nothing ever recorded
    const stray = await svc.backend.put(randomBytes(100));
    await svc.gc({ graceMs: 0, full: true });
    expect(await svc.backend.stat(stray.blobId)).toBeNull();
  });
});

describe("recovery", () => {
  it("a full sweep purges objects a crashed writer left in a deleted bucket", async () => {
    const { EventStore } = await import("../eventlog/event-store.ts");
    const { openEventLog } = await import("../eventlog/connection.ts");
    const { KIND, EVT, aggregateOf, newEvent, objectAggregateId } = await import("../schemas/blobstore/events.ts");
    const admin = (await issueAdminKey("orphan-app")).secret;
    const acct = await newAccount(admin);
    const created = (await http("POST", "/api/v1/buckets", { bearer: acct.apiKey, body: { name: "orphanage" } })).json();
    expect((await http("DELETE", "/api/v1/buckets/orphanage", { bearer: acct.apiKey })).status).toBe(204);
    // Given a write appended to the dead generation by a process that died before undoing it
    const bytes = randomBytes(700);
    const stored = await svc.backend.put(bytes);
    const el = await openEventLog({ servers: nats.url, name: "crashed-writer" });
    try {
      const events = new EventStore(el.js, el.jsm);
      const t = new Date().toISOString();
      const objectId = objectAggregateId(created.bucket_id, "lost");
      await events.append(aggregateOf(KIND.blob, objectId), [newEvent(EVT.blobWritten, { object_id: objectId, bucket: "orphanage", bucket_id: created.bucket_id, account_id: acct.accountId, key: "lost", blob_id: stored.blobId, size: 700, md5: md5(bytes), content_type: "application/octet-stream", created_at: t, updated_at: t })], "any", { correlationId: "crash", causationId: "crash" });
    } finally {
      await el.close();
    }
    expect(await svc.caughtUp()).toBe(true);
    expectError(await http("GET", "/api/v1/buckets/orphanage/blobs/lost"), 404);
    // When a full sweep runs, the object is deleted and its bytes released
    await svc.gc({ full: true, graceMs: 0 });
    await svc.gc({ graceMs: 0 });
    expectError(await http("GET", `/api/v1/blobs/by-blob-id/${stored.blobId}`), 404);
    expect(await svc.backend.stat(stored.blobId)).toBeNull();
  });
});
