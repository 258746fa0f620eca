// Public reads: the service recycles the buffers of whole-blob reads and of write bodies
// (gateway/recycled-buffers.ts), and under concurrent reads, ranged reads, HEADs and writes of distinct blobs every
// answer carries exactly its own bytes; a HEAD leaves its keep-alive connection usable for the next request.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createHash, randomBytes } from "node:crypto";
import { blobstoreCommand } from "../cli/blobstore.ts";
import { httpClient } from "./support/blobstore-testkit.ts";
import { startTestBlobstore, type TestBlobstore } from "./support/blobstore.ts";

const KiB = 1024;
let bs: TestBlobstore;
let apiKey: string;

beforeAll(async () => {
  bs = await startTestBlobstore("bs_recycled");
  const out: string[] = [];
  expect(await blobstoreCommand(["admin-key", "issue", "--app", "recycled", "--json"], bs.env, { out: (l) => out.push(l), err: () => undefined })).toBe(0);
  const acct = await bs.http("POST", "/accounts", { bearer: JSON.parse(out[0]).secret, body: {} });
  apiKey = acct.json().api_key.secret;
  expect((await bs.http("POST", "/api/v1/buckets", { bearer: apiKey, body: { name: "recycled" } })).status).toBe(201);
}, 60_000);
afterAll(() => bs?.stop());

it("serves every blob's own bytes while reads, ranges, HEADs and writes interleave", async () => {
  const blobs = Array.from({ length: 8 }, (_, i) => randomBytes(70 * KiB + i * 120 * KiB));
  const put = (key: string, body: Buffer) => bs.http("PUT", `/api/v1/buckets/recycled/blobs/${key}`, { bearer: apiKey, body });
  await Promise.all(blobs.map(async (b, i) => expect((await put(`k${i}`, b)).status).toBe(201)));
  const fresh = Array.from({ length: 8 }, () => randomBytes(600 * KiB));
  const checks: Promise<void>[] = [];
  for (let round = 0; round < 5; round++) {
    blobs.forEach((b, i) => {
      checks.push(
        (async () => {
          const r = await bs.http("GET", `/api/v1/buckets/recycled/blobs/k${i}`);
          expect(r.status).toBe(200);
          expect(r.body.equals(b), `k${i} round ${round}`).toBe(true);
        })(),
        (async () => {
          const id = createHash("sha256").update(b).digest("base64url");
          const r = await bs.http("GET", `/api/v1/blobs/by-blob-id/${id}`, { headers: { range: "bytes=1000-70000" } });
          expect(r.status).toBe(206);
          expect(r.body.equals(b.subarray(1000, 70001))).toBe(true);
        })(),
        (async () => {
          const r = await bs.http("HEAD", `/api/v1/buckets/recycled/blobs/k${i}`);
          expect(r.headers["content-length"]).toBe(String(b.length));
        })(),
      );
    });
    checks.push((async () => expect((await put(`new${round}`, fresh[round])).status).toBe(201))());
  }
  await Promise.all(checks);
  for (let round = 0; round < 5; round++) {
    expect((await bs.http("GET", `/api/v1/buckets/recycled/blobs/new${round}`)).body.equals(fresh[round])).toBe(true);
  }
});

it("a HEAD keeps its keep-alive connection usable (one socket: GET, HEAD, GET, HEAD, HEAD, GET)", async () => {
  const body = randomBytes(70 * KiB);
  expect((await bs.http("PUT", "/api/v1/buckets/recycled/blobs/head", { bearer: apiKey, body })).status).toBe(201);
  const one = httpClient(bs.svc.url, 1);
  try {
    for (const method of ["GET", "HEAD", "GET", "HEAD", "HEAD", "GET"]) {
      const r = await one(method, "/api/v1/buckets/recycled/blobs/head");
      expect(r.status, method).toBe(200);
      expect(r.headers["content-length"]).toBe(String(body.length));
      expect(r.body.length).toBe(method === "HEAD" ? 0 : body.length);
    }
  } finally {
    one.close();
  }
});
