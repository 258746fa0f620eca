// Black-box over HTTP ("done means recallable", README: done memories dropped by recall after a NATS node kill): the
// aggregator routes answer from the blobs read model, which may be behind the event log (a stalled projection). A
// blob registered in the log but not yet in the read model is not "not found": the blob store answers 503 with
// Retry-After (an outage, which the relayer retries) until the read model has caught up, then 200; 404 only for an id
// the caught-up read model does not hold. The projection is held back as a stall leaves it: its checkpoint row is
// locked by another transaction, so its runner cannot commit. Two processes read: the one running the projections
// and a replica that runs none (it judges the lag from the stored checkpoint).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash, randomBytes } from "node:crypto";
import pg from "pg";
import { holdBlobsReadModelBehind } from "./support/blobstore-read-models.ts";
import { startTestBlobstore, type TestBlobstore } from "./support/blobstore.ts";
import { httpClient, type HttpClient } from "./support/blobstore-testkit.ts";
import { startBlobstore } from "../runtime/blobstore.ts";
import type { BlobstoreHandle } from "../gateway/blobstore/options.ts";
import { encodeQuiltPatchId } from "../adapters/blobs/quilt-codec.ts";
import { blobstoreCommand } from "../cli/blobstore.ts";

let bs: TestBlobstore;
let replica: BlobstoreHandle;
let replicaHttp: HttpClient;
let apiKey: string;

beforeAll(async () => {
  // A write answers after a short settle wait when its read model is held back, instead of 10 s.
  bs = await startTestBlobstore("bs_lag", { settleTimeoutMs: 300, quiltShards: 10 });
  replica = await startBlobstore({ natsUrl: bs.nats.url, databaseUrl: bs.db.url, port: 0, dataDir: bs.dataDir, gc: { intervalMs: 0 }, runProjections: false, quiltShards: 10 });
  replicaHttp = httpClient(replica.url);
  const out: string[] = [];
  expect(await blobstoreCommand(["admin-key", "issue", "--app", "lag", "--json"], bs.env, { out: (l) => out.push(l), err: () => undefined })).toBe(0);
  apiKey = (await bs.http("POST", "/accounts", { bearer: JSON.parse(out[0]).secret, body: {} })).json().api_key.secret;
  expect((await bs.http("POST", "/api/v1/buckets", { bearer: apiKey, body: { name: "lagging" } })).status).toBe(201);
}, 60_000);
afterAll(async () => {
  replicaHttp?.close();
  await replica?.stop();
  await bs?.stop();
});

/** Holds the blobs read model's projection back until `release`: its runner blocks on the locked checkpoint row. */
async function holdBlobsProjection(): Promise<{ release(): Promise<void> }> {
  const c = new pg.Client({ connectionString: bs.db.url });
  await c.connect();
  await c.query("BEGIN");
  await c.query("SELECT seq FROM projection_checkpoints WHERE name = 'blobstore_blobs' FOR UPDATE");
  return {
    async release() {
      await c.query("ROLLBACK");
      await c.end();
    },
  };
}

const blobIdOf = (b: Buffer) => createHash("sha256").update(b).digest("base64url");

async function until<T>(probe: () => Promise<T>, done: (v: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (done(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function expectBehind(r: { status: number; headers: Record<string, unknown>; json(): any }) {
  expect(r.status).toBe(503);
  expect(Number(r.headers["retry-after"])).toBeGreaterThan(0);
  expect(r.json().error).toMatch(/not caught up|retry/i);
}

describe("blob reads while the blobs read model is behind the event log", () => {
  it("answers 503 with Retry-After (not 404) for a blob registered meanwhile, and 200 once the read model caught up", async () => {
    const bytes = randomBytes(777);
    const quiltPart = randomBytes(300);
    const hold = await holdBlobsProjection();
    let stored: any;
    let quiltPatchId: string;
    let quiltId: string;
    try {
      const put = await bs.http("PUT", "/v1/blobs?epochs=1", { body: bytes });
      expect(put.status, put.text()).toBe(200);
      stored = put.json().newlyCreated.blobObject;
      expect(stored.blobId).toBe(blobIdOf(bytes));
      const form = new FormData();
      form.append("memory", new Blob([quiltPart]), "memory");
      const q = await fetch(`${bs.svc.url}/v1/quilts?epochs=1`, { method: "PUT", body: form });
      expect(q.status).toBe(200);
      const quilt: any = await q.json();
      quiltPatchId = quilt.storedQuiltBlobs[0].quiltPatchId;
      quiltId = quilt.blobStoreResult.newlyCreated.blobObject.blobId;
      expect((await bs.http("PUT", "/api/v1/buckets/lagging/blobs/notes/today", { bearer: apiKey, body: bytes })).status).toBe(201);

      for (const h of [bs.http, replicaHttp]) {
        for (const path of [`/v1/blobs/${stored.blobId}`, `/api/v1/blobs/by-blob-id/${stored.blobId}`, `/v1/blobs/by-object-id/${stored.id}`, "/api/v1/buckets/lagging/blobs/notes/today"]) {
          const began = Date.now();
          expectBehind(await h("GET", path));
          // a miss waits a moment for the read model, never a client's whole patience
          expect(Date.now() - began).toBeLessThan(5_000);
        }
        expect((await h("HEAD", `/v1/blobs/${stored.blobId}`)).status).toBe(503);
      }
      // the replica has not cached the quilt (the process that stored it serves it from memory)
      expectBehind(await replicaHttp("GET", `/v1/blobs/by-quilt-patch-id/${quiltPatchId}`));
      expectBehind(await replicaHttp("GET", `/v1/quilts/${quiltId}/patches`));
    } finally {
      await hold.release();
    }

    for (const h of [bs.http, replicaHttp]) {
      const r = await until(() => h("GET", `/v1/blobs/${stored.blobId}`), (x) => x.status !== 503, 15_000);
      expect(r.status).toBe(200);
      expect(Buffer.compare(r.body, bytes)).toBe(0);
      expect((await h("GET", `/v1/blobs/by-object-id/${stored.id}`)).status).toBe(200);
      expect((await h("GET", "/api/v1/buckets/lagging/blobs/notes/today")).status).toBe(200);
      const p = await h("GET", `/v1/blobs/by-quilt-patch-id/${quiltPatchId!}`);
      expect(p.status).toBe(200);
      expect(Buffer.compare(p.body, quiltPart)).toBe(0);
    }
  });

  it("answers 503 at once, not 404, when another process has just rewound the read model (a replay)", async () => {
    const bytes = randomBytes(500);
    const put = await bs.http("PUT", "/v1/blobs?epochs=1", { body: bytes });
    expect(put.status).toBe(200);
    const rewound = await holdBlobsReadModelBehind(bs.db.url);
    try {
      // before the serving process's runner has noticed the rewind (it polls the checkpoint every second)
      for (const h of [bs.http, replicaHttp]) expectBehind(await h("GET", `/v1/blobs/${blobIdOf(bytes)}`));
    } finally {
      await rewound.release();
    }
    const r = await until(() => bs.http("GET", `/v1/blobs/${blobIdOf(bytes)}`), (x) => x.status !== 503, 15_000);
    expect(r.status).toBe(200);
  });

  /** Blobs whose only object was deleted: their bytes stay stored (no sweep here), nothing references them. */
  async function unreferencedBlobs(n: number): Promise<string[]> {
    return Promise.all(Array.from({ length: n }, async (_, i) => {
      const bytes = randomBytes(1000);
      expect((await bs.http("PUT", `/api/v1/buckets/lagging/blobs/gone/${i}`, { bearer: apiKey, body: bytes })).status).toBe(201);
      expect((await bs.http("DELETE", `/api/v1/buckets/lagging/blobs/gone/${i}`, { bearer: apiKey })).status).toBe(204);
      return blobIdOf(bytes);
    }));
  }

  it("answers 404 once the read model is caught up: for ids never registered, and for blobs no longer referenced", async () => {
    const [gone] = await unreferencedBlobs(1);
    expect(await bs.svc.caughtUp(10_000)).toBe(true);
    const never = randomBytes(32).toString("base64url");
    const neverObject = "0x" + randomBytes(32).toString("hex");
    const neverPatch = encodeQuiltPatchId({ quiltId: never, startIndex: 1, endIndex: 2 });
    for (const h of [bs.http, replicaHttp]) {
      for (const id of [never, gone]) {
        expect((await h("GET", `/v1/blobs/${id}`)).status).toBe(404);
        expect((await h("HEAD", `/v1/blobs/${id}`)).status).toBe(404);
        expect((await h("GET", `/api/v1/blobs/by-blob-id/${id}`)).status).toBe(404);
        expect((await h("GET", `/v1/quilts/${id}/patches`)).status).toBe(404);
      }
      expect((await h("GET", `/v1/blobs/by-object-id/${neverObject}`)).status).toBe(404);
      expect((await h("GET", `/v1/blobs/by-quilt-patch-id/${neverPatch}`)).status).toBe(404);
      expect((await h("GET", "/api/v1/buckets/lagging/blobs/never/written")).status).toBe(404);
      expect((await h("GET", "/api/v1/buckets/lagging/blobs/gone/0")).status).toBe(404);
      expect((await h("GET", `/api/v1/buckets/no-such-bucket/blobs/x`)).status).toBe(404);
    }
  });

  it("answers 404, not 503, for unreferenced blobs while other blobs are being written (a busy read model is not a stalled one)", async () => {
    const gone = await unreferencedBlobs(20);
    const writes = Promise.all(Array.from({ length: 40 }, () => bs.http("PUT", "/v1/blobs?epochs=1", { body: randomBytes(2048) })));
    const misses = await Promise.all(gone.map(async (id, i) => {
      await new Promise((r) => setTimeout(r, i * 10));
      return (await bs.http("GET", `/v1/blobs/${id}`)).status;
    }));
    expect((await writes).map((r) => r.status)).toEqual(Array(40).fill(200));
    expect(misses).toEqual(Array(20).fill(404));
  });
});
