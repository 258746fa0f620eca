// Black-box tests of the blob storage service (spec/blobstore.md, issue 3), public reads with Range, HEAD and
// If-None-Match. HTTP in, HTTP out, against the started service on a private nats-server and a fresh database
// (test/support/blobstore-suite.ts).
import { beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { expectError, http, issueAdminKey, md5, newAccount, newBucket, put, sha256Id, useBlobstoreSuite } from "./support/blobstore-suite.ts";

useBlobstoreSuite();

// ------------------------------------------------------------------ ranges

describe("Range and conditional reads", () => {
  let bucket: string;
  const small = Buffer.from("0123456789abcdefghij");
  const large = randomBytes(300 * 1024);

  beforeAll(async () => {
    const admin = (await issueAdminKey("range-app")).secret;
    const apiKey = (await newAccount(admin)).apiKey;
    bucket = await newBucket(apiKey);
    await put(apiKey, bucket, "small", small, { "content-type": "text/plain" });
    await put(apiKey, bucket, "large", large);
    await put(apiKey, bucket, "empty", Buffer.alloc(0));
  });

  const get = (key: string, range?: string, extra: Record<string, string> = {}) => http("GET", `/api/v1/buckets/${bucket}/blobs/${key}`, { headers: { ...(range ? { range } : {}), ...extra } });

  it("serves single ranges with 206 and Content-Range, in memory and streamed", async () => {
    for (const [key, buf] of [["small", small], ["large", large]] as const) {
      const n = buf.length;
      const cases: [string, number, number][] = [
        ["bytes=0-9", 0, 9],
        ["bytes=5-", 5, n - 1],
        ["bytes=-4", n - 4, n - 1],
        [`bytes=3-${n + 100}`, 3, n - 1],
        [`bytes=${n - 1}-${n - 1}`, n - 1, n - 1],
      ];
      for (const [h, s, e] of cases) {
        const r = await get(key, h);
        expect(r.status, h).toBe(206);
        expect(r.headers["content-range"]).toBe(`bytes ${s}-${e}/${n}`);
        expect(r.headers["content-length"]).toBe(String(e - s + 1));
        expect(r.body.equals(buf.subarray(s, e + 1))).toBe(true);
      }
    }
    const mid = await http("GET", `/api/v1/blobs/by-blob-id/${sha256Id(large)}`, { headers: { range: "bytes=100000-200000" } });
    expect(mid.status).toBe(206);
    expect(mid.body.equals(large.subarray(100000, 200001))).toBe(true);
    const full = await get("large");
    expect(full.status).toBe(200);
    expect(full.headers["accept-ranges"]).toBe("bytes");
    expect(full.body.equals(large)).toBe(true);
  });

  it("answers 416 past the end; ignores malformed or multiple ranges", async () => {
    for (const h of [`bytes=${small.length}-`, "bytes=1000-2000", "bytes=-0"]) {
      const r = await get("small", h);
      expectError(r, 416);
      expect(r.headers["content-range"]).toBe(`bytes */${small.length}`);
    }
    expectError(await get("empty", "bytes=0-"), 416);
    for (const h of ["bytes=0-1,3-4", "items=0-1", "bytes=5-2", "bytes=x-y"]) {
      const r = await get("small", h);
      expect(r.status, h).toBe(200);
      expect(r.body.equals(small)).toBe(true);
    }
    const empty = await get("empty");
    expect(empty.status).toBe(200);
    expect(empty.body.length).toBe(0);
  });

  it("answers HEAD on the public reads with the GET's status and headers, and no body", async () => {
    for (const [path, size] of [[`/api/v1/buckets/${bucket}/blobs/large`, large.length], [`/api/v1/blobs/by-blob-id/${sha256Id(large)}`, large.length], [`/api/v1/buckets/${bucket}/blobs/small`, small.length]] as const) {
      const h = await http("HEAD", path);
      expect(h.status).toBe(200);
      expect(h.headers["content-length"]).toBe(String(size));
      expect(h.headers["etag"]).toBeTruthy();
      expect(h.body.length).toBe(0);
    }
    const r = await http("HEAD", `/api/v1/buckets/${bucket}/blobs/large`, { headers: { range: "bytes=10-19" } });
    expect(r.status).toBe(206);
    expect(r.headers["content-length"]).toBe("10");
    expect(r.headers["content-range"]).toBe(`bytes 10-19/${large.length}`);
    const missing = await http("HEAD", `/api/v1/buckets/${bucket}/blobs/nope`);
    expect(missing.status).toBe(404);
    expect(missing.body.length).toBe(0);
    // the connection stays usable after HEAD replies
    expect((await get("small")).body.equals(small)).toBe(true);
  });

  it("answers 304 to a matching If-None-Match", async () => {
    const r = await get("small");
    const etag = r.headers["etag"] as string;
    expect(etag).toBe(`"${md5(small)}"`);
    expect((await get("small", undefined, { "if-none-match": etag })).status).toBe(304);
    expect((await get("small", undefined, { "if-none-match": '"other"' })).status).toBe(200);
  });
});
