// Black-box tests of the blob storage service (spec/blobstore.md, issue 3), buckets and blobs: names and keys,
// conditional writes, ownership, size limits, bucket CRUD and listings. HTTP in, HTTP out, against the started
// service on a private nats-server and a fresh database (test/support/blobstore-suite.ts).
import { beforeAll, describe, expect, it } from "vitest";
import { Readable } from "node:stream";
import { MAX_BLOB, expectError, http, issueAdminKey, md5, newAccount, newBucket, put, sha256Id, useBlobstoreSuite } from "./support/blobstore-suite.ts";

useBlobstoreSuite();

// ------------------------------------------------------------------ buckets and blobs

describe("buckets and blobs", () => {
  let admin: string;
  let a: { accountId: string; apiKey: string };
  let b: { accountId: string; apiKey: string };

  beforeAll(async () => {
    admin = (await issueAdminKey("data-app")).secret;
    a = await newAccount(admin);
    b = await newAccount(admin);
  });

  it("invalid bucket names are 400, in bodies and in paths", async () => {
    const bad = ["", "ab", "a".repeat(64), "Upper", "a..b", "bad_name", "-abc", "abc-", "a--b", "with space", "ctl\u0001x", "dot.ted"];
    for (const name of bad) expectError(await http("POST", "/api/v1/buckets", { bearer: a.apiKey, body: { name } }), 400, /bucket name/);
    expectError(await http("POST", "/api/v1/buckets", { bearer: a.apiKey, body: { name: 42 } }), 400);
    expectError(await http("POST", "/api/v1/buckets", { bearer: a.apiKey, body: "{not json", headers: { "content-type": "application/json" } }), 400);
    for (const raw of ["ab", "a..b", "UP", "x%01y", "a".repeat(64), "%zz"]) {
      expectError(await http("GET", `/api/v1/buckets/${raw}`, { bearer: a.apiKey }), 400);
      expectError(await http("PUT", `/api/v1/buckets/${raw}/blobs/k`, { bearer: a.apiKey, body: "x" }), 400);
      expectError(await http("GET", `/api/v1/buckets/${raw}/blobs/k`), 400);
    }
  });

  it("invalid keys are 400: empty, too long, '..' segments, control characters", async () => {
    const bucket = await newBucket(a.apiKey);
    const bad = ["", "a/../b", "..", "../etc/passwd", "x/..", "%2e%2e", "a/%2E%2E/b", "./a", "ctl%01", "del%7f", "nl%0a", "a".repeat(1025), "%C3%A9".repeat(513), "%zz", "%ff"];
    for (const raw of bad) {
      expectError(await put(a.apiKey, bucket, raw, "x"), 400, /key/);
      expectError(await http("GET", `/api/v1/buckets/${bucket}/blobs/${raw}`), 400, /key/);
      expectError(await http("DELETE", `/api/v1/buckets/${bucket}/blobs/${raw}`, { bearer: a.apiKey }), 400, /key/);
    }
    // the limits are inclusive, and unicode and odd-but-legal keys work
    for (const raw of ["a".repeat(1024), "%C3%A9".repeat(512), "a..b", "dir/sub/file.txt", "sp%20ace", "%F0%9F%98%80"]) {
      const w = await put(a.apiKey, bucket, raw, "ok");
      expect(w.status, `${raw}: ${w.text()}`).toBe(201);
      expect(w.json().key).toBe(decodeURIComponent(raw));
      expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/${raw}`)).text()).toBe("ok");
    }
    expectError(await put(a.apiKey, bucket, "k", "x", { "content-type": "not-a-media-type" }), 400);
  });

  it("conditional writes: If-None-Match: * and If-Match give 412 on conflict", async () => {
    const bucket = await newBucket(a.apiKey);
    expect((await put(a.apiKey, bucket, "c", "v1", { "if-none-match": "*" })).status).toBe(201);
    expectError(await put(a.apiKey, bucket, "c", "v2", { "if-none-match": "*" }), 412);
    expectError(await put(a.apiKey, bucket, "c", "v2", { "if-match": `"${md5("nope")}"` }), 412);
    expectError(await put(a.apiKey, bucket, "missing", "v2", { "if-match": "*" }), 412);
    const ok = await put(a.apiKey, bucket, "c", "v2", { "if-match": `"${md5("v1")}"` });
    expect(ok.status).toBe(201);
    expect(ok.json().etag).toBe(`"${md5("v2")}"`);
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/c`)).text()).toBe("v2");
    expectError(await http("DELETE", `/api/v1/buckets/${bucket}/blobs/c`, { bearer: a.apiKey, headers: { "if-match": `"${md5("v1")}"` } }), 412);
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/c`)).text()).toBe("v2");
    expect((await http("DELETE", `/api/v1/buckets/${bucket}/blobs/c`, { bearer: a.apiKey, headers: { "if-match": `"${md5("v2")}"` } })).status).toBe(204);
    expectError(await put(a.apiKey, bucket, "c", "v3", { "if-none-match": `"${md5("v3")}"` }), 400);
  });

  it("concurrent If-None-Match: * writes to one key: exactly one wins", async () => {
    const bucket = await newBucket(a.apiKey);
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => put(a.apiKey, bucket, "race", `writer-${i}`, { "if-none-match": "*" })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 412)).toHaveLength(15);
    const winner = results.find((r) => r.status === 201)!.json();
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/race`)).json === undefined).toBe(false);
    expect(md5((await http("GET", `/api/v1/buckets/${bucket}/blobs/race`)).body)).toBe(winner.md5);
  });

  it("a Content-MD5 that does not match the body is 400 and stores nothing", async () => {
    const bucket = await newBucket(a.apiKey);
    const wrong = Buffer.from(md5("other"), "hex").toString("base64");
    expectError(await put(a.apiKey, bucket, "m", "body", { "content-md5": wrong }), 400, /Content-MD5/);
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/m`)).status).toBe(404);
    const right = Buffer.from(md5("body"), "hex").toString("base64");
    expect((await put(a.apiKey, bucket, "m", "body", { "content-md5": right })).status).toBe(201);
  });

  it("unknown buckets and blobs are 404; another account's bucket is indistinguishable from a missing one", async () => {
    const bucket = await newBucket(a.apiKey);
    await put(a.apiKey, bucket, "k", "mine");
    expectError(await put(a.apiKey, "no-such-bucket", "k", "x"), 404);
    expectError(await http("GET", "/api/v1/buckets/no-such-bucket", { bearer: a.apiKey }), 404);
    expectError(await http("GET", "/api/v1/buckets/no-such-bucket/blobs", { bearer: a.apiKey }), 404);
    expectError(await http("GET", "/api/v1/buckets/no-such-bucket/blobs/k"), 404);
    expectError(await http("GET", `/api/v1/buckets/${bucket}/blobs/nope`), 404);
    expectError(await http("DELETE", `/api/v1/buckets/${bucket}/blobs/nope`, { bearer: a.apiKey }), 404);
    expectError(await http("GET", `/api/v1/blobs/by-blob-id/${sha256Id("never stored")}`), 404);
    expectError(await http("GET", "/api/v1/blobs/by-blob-id/not-a-blob-id"), 400);
    // account b cannot see, write, list or delete a's bucket
    expectError(await http("GET", `/api/v1/buckets/${bucket}`, { bearer: b.apiKey }), 404);
    expectError(await http("GET", `/api/v1/buckets/${bucket}/blobs`, { bearer: b.apiKey }), 404);
    expectError(await put(b.apiKey, bucket, "k", "theirs"), 404);
    expectError(await http("DELETE", `/api/v1/buckets/${bucket}/blobs/k`, { bearer: b.apiKey }), 404);
    expectError(await http("DELETE", `/api/v1/buckets/${bucket}`, { bearer: b.apiKey }), 404);
    expectError(await http("PATCH", `/api/v1/buckets/${bucket}`, { bearer: b.apiKey, body: { description: "x" } }), 404);
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/k`)).text()).toBe("mine");
    // names are global: b cannot take a's name
    expectError(await http("POST", "/api/v1/buckets", { bearer: b.apiKey, body: { name: bucket } }), 409);
    expect((await http("GET", "/api/v1/buckets", { bearer: b.apiKey })).json().data.some((x: any) => x.name === bucket)).toBe(false);
    expectError(await http("GET", "/no/such/route"), 404);
  });

  it("oversized bodies are 413 with the limit in the error, declared or streamed", async () => {
    const bucket = await newBucket(a.apiKey);
    const count413 = async (route: string) =>
      Number(new RegExp(`blobstore_http_requests_total\\{route="${route.replace(/[/{}]/g, (c) => "\\" + c)}",status="413"\\} (\\d+)`).exec((await http("GET", "/metrics")).text())?.[1] ?? 0);
    // The server answers as soon as it knows (from Content-Length, or once a stream crosses the limit) while the
    // client may still be sending; a client whose write loses that race sees a reset instead of the answer. So each
    // refusal is checked on the server's side too, and the answer whenever the client got it.
    // A declared oversize is refused by the listener from the headers (before any route code, so no route metric):
    // retried until the client gets the answer, which must name the limit.
    const declared = async (send: () => Promise<Awaited<ReturnType<typeof http>>>, limit: number) => {
      for (let attempt = 0; attempt < 5; attempt++) {
        const r = await send().catch((err) => err as Error);
        if (r instanceof Error) {
          expect(r.message).toMatch(/EPIPE|ECONNRESET|socket hang up/);
          continue;
        }
        expectError(r, 413, new RegExp(String(limit)));
        expect(r.json().limit).toBe(limit);
        return;
      }
      throw new Error("never got the 413 answer");
    };
    // A stream crossing the limit is refused by the route: its metric proves the refusal whatever the client saw.
    const refused = async (route: string, send: () => Promise<Awaited<ReturnType<typeof http>>>, limit: number) => {
      const before = await count413(route);
      const r = await send().catch((err) => err as Error);
      if (r instanceof Error) expect(r.message).toMatch(/EPIPE|ECONNRESET|socket hang up/);
      else {
        expectError(r, 413, new RegExp(String(limit)));
        expect(r.json().limit).toBe(limit);
      }
      expect(await count413(route)).toBe(before + 1);
    };
    const blobRoute = "PUT /api/v1/buckets/{bucket_name}/blobs/{key}";
    await declared(() => put(a.apiKey, bucket, "big", Buffer.alloc(MAX_BLOB + 1)), MAX_BLOB);
    const chunked = () =>
      Readable.from((function* () {
        for (let i = 0; i < 4; i++) yield Buffer.alloc(1024 * 1024, i);
        yield Buffer.alloc(1024);
      })());
    await refused(blobRoute, () => http("PUT", `/api/v1/buckets/${bucket}/blobs/big`, { bearer: a.apiKey, body: chunked() }), MAX_BLOB);
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/big`)).status).toBe(404);
    await declared(() => http("POST", "/api/v1/buckets", { bearer: a.apiKey, body: { name: "x".repeat(100_000) } }), 65536);
    // exactly the limit is accepted
    expect((await put(a.apiKey, bucket, "max", Buffer.alloc(MAX_BLOB, 7))).status).toBe(201);
    // the service stays usable after refusals
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/max`, { headers: { range: "bytes=0-0" } })).status).toBe(206);
  });

  it("bucket create, read, update, list with pagination, delete (empty, or forced with its blobs)", async () => {
    const names = ["crud-a", "crud-b", "crud-c"];
    for (const n of names) await newBucket(b.apiKey, n);
    const got = await http("GET", "/api/v1/buckets/crud-a", { bearer: b.apiKey });
    expect(got.json()).toMatchObject({ name: "crud-a", account_id: b.accountId, description: "", metadata: {}, blob_count: 0, total_bytes: 0 });
    const upd = await http("PATCH", "/api/v1/buckets/crud-a", { bearer: b.apiKey, body: { description: "holiday", metadata: { team: "x" } } });
    expect(upd.status).toBe(200);
    expect(upd.json()).toMatchObject({ description: "holiday", metadata: { team: "x" } });
    expectError(await http("PATCH", "/api/v1/buckets/crud-a", { bearer: b.apiKey, body: { name: "renamed" } }), 400);
    expectError(await http("PATCH", "/api/v1/buckets/crud-a", { bearer: b.apiKey, body: { metadata: { k: 1 } } }), 400);
    expect((await http("PUT", "/api/v1/buckets/crud-a", { bearer: b.apiKey, body: { description: "again" } })).json().description).toBe("again");
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = (await http("GET", `/api/v1/buckets?limit=1${cursor ? `&cursor=${cursor}` : ""}`, { bearer: b.apiKey })).json();
      expect(page.data.length).toBeLessThanOrEqual(1);
      seen.push(...page.data.map((x: any) => x.name));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen.filter((n) => names.includes(n))).toEqual(names);
    expectError(await http("GET", "/api/v1/buckets?limit=0", { bearer: b.apiKey }), 400);

    await put(b.apiKey, "crud-b", "one", "1");
    await put(b.apiKey, "crud-b", "two", "22");
    expect((await http("GET", "/api/v1/buckets/crud-b", { bearer: b.apiKey })).json()).toMatchObject({ blob_count: 2, total_bytes: 3 });
    expectError(await http("DELETE", "/api/v1/buckets/crud-b", { bearer: b.apiKey }), 409, /not empty/);
    expect((await http("DELETE", "/api/v1/buckets/crud-c", { bearer: b.apiKey })).status).toBe(204);
    expectError(await http("GET", "/api/v1/buckets/crud-c", { bearer: b.apiKey }), 404);
    expect((await http("DELETE", "/api/v1/buckets/crud-b?force=true", { bearer: b.apiKey })).status).toBe(204);
    expectError(await http("GET", "/api/v1/buckets/crud-b/blobs/one"), 404);
    // the name is free again, and the new bucket starts empty
    await newBucket(a.apiKey, "crud-b");
    expect((await http("GET", "/api/v1/buckets/crud-b/blobs", { bearer: a.apiKey })).json().data).toEqual([]);
    expectError(await http("GET", "/api/v1/buckets/crud-b/blobs/one"), 404);
  });

  it("blob listing: key order, prefix, pagination", async () => {
    const bucket = await newBucket(a.apiKey);
    for (const k of ["b/2", "a/1", "b/1", "c", "b/10"]) await put(a.apiKey, bucket, k, k);
    const all = (await http("GET", `/api/v1/buckets/${bucket}/blobs`, { bearer: a.apiKey })).json();
    expect(all.data.map((x: any) => x.key)).toEqual(["a/1", "b/1", "b/10", "b/2", "c"]);
    expect(all.data[0]).toMatchObject({ key: "a/1", size: 3, md5: md5("a/1"), blob_id: sha256Id("a/1"), content_type: "application/octet-stream" });
    const pre = (await http("GET", `/api/v1/buckets/${bucket}/blobs?prefix=b/`, { bearer: a.apiKey })).json();
    expect(pre.data.map((x: any) => x.key)).toEqual(["b/1", "b/10", "b/2"]);
    const p1 = (await http("GET", `/api/v1/buckets/${bucket}/blobs?prefix=b/&limit=2`, { bearer: a.apiKey })).json();
    expect(p1.data.map((x: any) => x.key)).toEqual(["b/1", "b/10"]);
    const p2 = (await http("GET", `/api/v1/buckets/${bucket}/blobs?prefix=b/&limit=2&cursor=${p1.next_cursor}`, { bearer: a.apiKey })).json();
    expect(p2.data.map((x: any) => x.key)).toEqual(["b/2"]);
    expect(p2.next_cursor).toBeNull();
    // LIKE wildcards in a prefix are literal
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs?prefix=%25`, { bearer: a.apiKey })).json().data).toEqual([]);
  });
});
