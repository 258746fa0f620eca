// Black-box tests of the blob storage service (spec/blobstore.md, issue 3): HTTP in, HTTP out, against the started
// service on a private nats-server and a fresh database; operator commands through their command function.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import { Readable } from "node:stream";
import type { NatsServerHandle } from "./support/nats-server.ts";
import type { TestDatabase } from "./support/postgres.ts";
import { startBlobstore, type BlobstoreHandle } from "../gateway/blobstore/service.ts";
import { blobstoreCommand } from "../cli/blobstore.ts";
import { httpClient, type HttpClient } from "./support/blobstore-testkit.ts";
import type { FsBlobBackend } from "../adapters/blob-bytes/backend.ts";
import { blobstoreReadModels } from "./support/blobstore-read-models.ts";
import { startTestBlobstore, type TestBlobstore } from "./support/blobstore.ts";

const MAX_BLOB = 4 * 1024 * 1024;

let nats: NatsServerHandle;
let tdb: TestDatabase;
let dataDir: string;
let svc: BlobstoreHandle;
let http: HttpClient;
let env: Record<string, string>;

let bs: TestBlobstore | undefined;
beforeAll(async () => {
  bs = await startTestBlobstore("bs_test", { maxBlobBytes: MAX_BLOB });
  ({ nats, db: tdb, dataDir, svc, http } = bs);
  env = bs.env;
}, 60_000);
afterAll(() => bs?.stop());

// ------------------------------------------------------------------ helpers

async function cli(...args: string[]): Promise<{ rc: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const rc = await blobstoreCommand(args, env, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { rc, out, err };
}

async function issueAdminKey(app: string): Promise<{ secret: string; keyId: string }> {
  const r = await cli("admin-key", "issue", "--app", app, "--json");
  expect(r.rc, r.err.join("\n")).toBe(0);
  const j = JSON.parse(r.out[0]);
  return { secret: j.secret, keyId: j.key_id };
}

async function listAdminKeys(app: string): Promise<any[]> {
  const r = await cli("admin-key", "list", "--app", app, "--json");
  expect(r.rc, r.err.join("\n")).toBe(0);
  return JSON.parse(r.out[0]);
}

async function newAccount(adminKey: string): Promise<{ accountId: string; apiKey: string; apiKeyId: string }> {
  const r = await http("POST", "/accounts", { bearer: adminKey, body: { name: "acct" } });
  expect(r.status, r.text()).toBe(201);
  const j = r.json();
  return { accountId: j.account_id, apiKey: j.api_key.secret, apiKeyId: j.api_key.id };
}

async function newBucket(apiKey: string, name = `b-${randomBytes(5).toString("hex")}`): Promise<string> {
  const r = await http("POST", "/api/v1/buckets", { bearer: apiKey, body: { name } });
  expect(r.status, r.text()).toBe(201);
  return name;
}

const put = (apiKey: string, bucket: string, key: string, body: Buffer | string, headers: Record<string, string> = {}) =>
  http("PUT", `/api/v1/buckets/${bucket}/blobs/${key}`, { bearer: apiKey, body, headers });

const sha256Id = (b: Buffer | string) => createHash("sha256").update(b).digest("base64url");
const md5 = (b: Buffer | string) => createHash("md5").update(b).digest("hex");
const hex64 = () => randomBytes(32).toString("hex");

function expectError(r: { status: number; json(): any; headers: Record<string, unknown> }, status: number, match?: RegExp) {
  expect(r.status).toBe(status);
  expect(String(r.headers["content-type"])).toContain("application/json");
  const body = r.json();
  expect(typeof body.error).toBe("string");
  if (match) expect(body.error).toMatch(match);
}

// ------------------------------------------------------------------ the issue's "Done when" walk

describe("operator walk: admin key from the command line to public reads, with rotation", () => {
  it("issues a key, creates an account, stores and reads a blob, rotates the admin key", async () => {
    // Given an admin key issued from the command line (the secret on stdout, id and prefix on stderr)
    const issued = await cli("admin-key", "issue", "--app", "walk-app");
    expect(issued.rc).toBe(0);
    expect(issued.out).toHaveLength(1);
    const adminKey = issued.out[0];
    expect(adminKey).toMatch(/^[0-9a-f]{64}$/);
    expect(issued.err.join("\n")).toContain(adminKey.slice(0, 8));
    expect(issued.err.join("\n")).not.toContain(adminKey);

    // When an account is created over HTTP, its first API key is returned once
    const created = await http("POST", "/accounts", { bearer: adminKey, body: { name: "walk" } });
    expect(created.status).toBe(201);
    const acct = created.json();
    expect(acct.account_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(acct.app_id).toBe("walk-app");
    expect(acct.api_key.secret).toMatch(/^[0-9a-f]{64}$/);
    expect(acct.api_key.prefix).toBe(acct.api_key.secret.slice(0, 8));
    const apiKey = acct.api_key.secret;
    // ... and never again: listings carry no secret
    const listed = await http("GET", `/accounts/${acct.account_id}/api-keys`, { bearer: adminKey });
    expect(listed.status).toBe(200);
    expect(listed.text()).not.toContain(apiKey);
    expect(listed.json()).toEqual([expect.objectContaining({ id: acct.api_key.id, prefix: apiKey.slice(0, 8), state: "active" })]);

    // Then the account creates a bucket and writes a blob
    const bucket = await newBucket(apiKey, "walk-photos");
    const bytes = Buffer.from("a picture, honestly");
    const w = await put(apiKey, bucket, "2026/cat.jpg", bytes, { "content-type": "image/jpeg" });
    expect(w.status).toBe(201);
    const stored = w.json();
    expect(stored).toMatchObject({ key: "2026/cat.jpg", blob_id: sha256Id(bytes), size: bytes.length, md5: md5(bytes) });
    expect(Date.parse(stored.created_at)).not.toBeNaN();

    // ... which anyone can read by bucket and key, and by blob id, without a credential
    const byKey = await http("GET", `/api/v1/buckets/${bucket}/blobs/2026/cat.jpg`);
    expect(byKey.status).toBe(200);
    expect(byKey.body.equals(bytes)).toBe(true);
    expect(byKey.headers["content-type"]).toBe("image/jpeg");
    expect(byKey.headers["content-length"]).toBe(String(bytes.length));
    const byId = await http("GET", `/api/v1/blobs/by-blob-id/${stored.blob_id}`);
    expect(byId.status).toBe(200);
    expect(byId.body.equals(bytes)).toBe(true);
    expect(byId.headers["content-length"]).toBe(String(bytes.length));

    // Rotation: issue a second key alongside the first, switch callers, confirm the old one is unused, revoke it
    const second = await issueAdminKey("walk-app");
    const firstId = (await listAdminKeys("walk-app")).find((k) => k.prefix === adminKey.slice(0, 8))!.key_id;
    const beforeSwitch = (await listAdminKeys("walk-app")).find((k) => k.key_id === firstId)!;
    expect(beforeSwitch.last_used_at).not.toBeNull();
    expect((await http("POST", "/accounts", { bearer: second.secret })).status).toBe(201);
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await http("GET", `/accounts/${acct.account_id}`, { bearer: second.secret })).status).toBe(200);
    const keys = await listAdminKeys("walk-app");
    expect(keys).toHaveLength(2);
    const oldK = keys.find((k) => k.key_id === firstId)!;
    const newK = keys.find((k) => k.key_id === second.keyId)!;
    expect(oldK.last_used_at).toBe(beforeSwitch.last_used_at);
    expect(Date.parse(newK.last_used_at)).toBeGreaterThan(Date.parse(oldK.last_used_at));
    const revoked = await cli("admin-key", "revoke", firstId);
    expect(revoked.rc).toBe(0);
    expect(revoked.out[0]).toMatch(/^revoked admin key/);
    // the very next request with the old key is refused; the new key keeps working
    expectError(await http("POST", "/accounts", { bearer: adminKey }), 401);
    expect((await http("GET", `/accounts/${acct.account_id}`, { bearer: second.secret })).status).toBe(200);
    const after = await listAdminKeys("walk-app");
    expect(after.find((k) => k.key_id === firstId)).toMatchObject({ state: "revoked" });
    expect(after.find((k) => k.key_id === second.keyId)).toMatchObject({ state: "active" });
    // human-readable listing shows prefix, state, created and last-used columns
    const table = await cli("admin-key", "list", "--app", "walk-app");
    expect(table.out[0]).toBe("KEY ID\tPREFIX\tSTATE\tCREATED\tLAST USED\tREVOKED\tLABEL");
    expect(table.out.some((l) => l.startsWith(firstId) && l.includes("\trevoked\t"))).toBe(true);

    // Every unauthorised attempt is refused with the spec's status
    const other = await issueAdminKey("walk-other-app");
    const attempts: [string, string, string | undefined, number][] = [
      ["POST", "/accounts", undefined, 401],
      ["POST", "/accounts", apiKey, 401],
      ["POST", "/accounts", adminKey, 401],
      ["GET", `/accounts/${acct.account_id}/api-keys`, other.secret, 403],
      ["POST", `/accounts/${acct.account_id}/api-keys`, other.secret, 403],
      ["POST", `/accounts/${acct.account_id}/access-keys`, other.secret, 403],
      ["POST", "/api/v1/buckets", undefined, 401],
      ["POST", "/api/v1/buckets", second.secret, 401],
      ["GET", "/api/v1/buckets", hex64(), 401],
      ["PUT", `/api/v1/buckets/${bucket}/blobs/x`, second.secret, 401],
      ["DELETE", `/api/v1/buckets/${bucket}/blobs/2026/cat.jpg`, undefined, 401],
    ];
    for (const [method, path, bearer, status] of attempts) {
      const r = await http(method, path, { bearer, body: method === "GET" || method === "DELETE" ? undefined : method === "PUT" ? "x" : { name: "zzz" } });
      expectError(r, status);
      if (status === 403) expect(r.json().error).toBe("account does not belong to this app");
      if (status === 401) expect(r.headers["www-authenticate"]).toContain("Bearer");
    }
    // nothing was written by the refused attempts
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/x`)).status).toBe(404);
    expect((await http("GET", `/api/v1/buckets/${bucket}/blobs/2026/cat.jpg`)).status).toBe(200);
  });
});

// ------------------------------------------------------------------ credentials

describe("credentials", () => {
  let admin: string;
  let otherAdmin: string;
  let acct: { accountId: string; apiKey: string; apiKeyId: string };

  beforeAll(async () => {
    admin = (await issueAdminKey("cred-app")).secret;
    otherAdmin = (await issueAdminKey("cred-other")).secret;
    acct = await newAccount(admin);
  });

  const malformed = ["Bearer", "Bearer abc", `Bearer ${"g".repeat(64)}`, `Bearer ${"a".repeat(63)}`, `Bearer ${"a".repeat(65)}`, `Basic ${"a".repeat(64)}`, "a".repeat(64), `Bearer ${"a".repeat(32)} ${"a".repeat(32)}`];

  it("admin routes: missing, malformed, unknown, revoked admin keys and API keys are 401", async () => {
    expectError(await http("POST", "/accounts"), 401, /missing admin key/);
    for (const h of malformed) expectError(await http("POST", "/accounts", { headers: { authorization: h } }), 401, /admin key/);
    expectError(await http("POST", "/accounts", { bearer: hex64() }), 401, /unknown or revoked admin key/);
    expectError(await http("GET", `/accounts/${acct.accountId}/api-keys`, { bearer: acct.apiKey }), 401);
    const k = await issueAdminKey("cred-app");
    expect((await http("GET", "/accounts", { bearer: k.secret })).status).toBe(200);
    expect((await cli("admin-key", "revoke", k.keyId)).rc).toBe(0);
    expectError(await http("GET", "/accounts", { bearer: k.secret }), 401, /unknown or revoked/);
    // uppercase hex of a valid key is the same key
    expect((await http("GET", "/accounts", { bearer: admin.toUpperCase() })).status).toBe(200);
  });

  it("data routes: missing, malformed, unknown, revoked API keys and admin keys are 401", async () => {
    expectError(await http("GET", "/api/v1/buckets"), 401, /missing API key/);
    for (const h of malformed) expectError(await http("GET", "/api/v1/buckets", { headers: { authorization: h } }), 401, /API key/);
    expectError(await http("GET", "/api/v1/buckets", { bearer: hex64() }), 401);
    expectError(await http("GET", "/api/v1/buckets", { bearer: admin }), 401);
    expectError(await http("PUT", "/api/v1/buckets/abc/blobs/k", { bearer: admin, body: "x" }), 401);
    expect((await http("GET", "/api/v1/buckets", { bearer: acct.apiKey })).status).toBe(200);
  });

  it("revoking an API key takes effect on the very next request", async () => {
    for (let i = 0; i < 5; i++) {
      const issued = await http("POST", `/accounts/${acct.accountId}/api-keys`, { bearer: admin });
      expect(issued.status).toBe(201);
      const { id, secret, prefix } = issued.json();
      expect(secret).toMatch(/^[0-9a-f]{64}$/);
      expect(prefix).toBe(secret.slice(0, 8));
      expect((await http("GET", "/api/v1/buckets", { bearer: secret })).status).toBe(200);
      expect((await http("DELETE", `/accounts/${acct.accountId}/api-keys/${id}`, { bearer: admin })).status).toBe(204);
      expectError(await http("GET", "/api/v1/buckets", { bearer: secret }), 401);
    }
    const keys = (await http("GET", `/accounts/${acct.accountId}/api-keys`, { bearer: admin })).json();
    expect(keys.filter((k: any) => k.state === "revoked")).toHaveLength(5);
    expect(JSON.stringify(keys)).not.toMatch(/secret|hash/);
  });

  it("another app's account is 403 with the spec's message; unknown accounts and keys are 404", async () => {
    const base = `/accounts/${acct.accountId}`;
    for (const [m, p] of [
      ["GET", base],
      ["GET", `${base}/api-keys`],
      ["POST", `${base}/api-keys`],
      ["DELETE", `${base}/api-keys/${acct.apiKeyId}`],
      ["GET", `${base}/access-keys`],
      ["POST", `${base}/access-keys`],
      ["DELETE", `${base}/access-keys/MRAKAAAAAAAAAAAAAAAA`],
    ] as const) {
      const r = await http(m, p, { bearer: otherAdmin });
      expectError(r, 403);
      expect(r.json()).toEqual({ error: "account does not belong to this app" });
    }
    // the refused revoke did nothing
    expect((await http("GET", "/api/v1/buckets", { bearer: acct.apiKey })).status).toBe(200);
    expectError(await http("GET", `/accounts/${"0".repeat(8)}-0000-4000-8000-${"0".repeat(12)}`, { bearer: admin }), 404);
    expectError(await http("GET", "/accounts/not-a-uuid", { bearer: admin }), 404);
    expectError(await http("DELETE", `${base}/api-keys/${"1".repeat(8)}-0000-4000-8000-${"0".repeat(12)}`, { bearer: admin }), 404);
    // accounts listing shows only the app's own accounts
    const mine = (await http("GET", "/accounts", { bearer: admin })).json();
    expect(mine.data.every((a: any) => a.app_id === "cred-app")).toBe(true);
    const theirs = (await http("GET", "/accounts", { bearer: otherAdmin })).json();
    expect(theirs.data.some((a: any) => a.account_id === acct.accountId)).toBe(false);
  });

  it("S3-style access keys: issue (secret once), list without secrets, revoke, at most 3 active", async () => {
    const a = await newAccount(admin);
    const issued: any[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await http("POST", `/accounts/${a.accountId}/access-keys`, { bearer: admin });
      expect(r.status).toBe(201);
      issued.push(r.json());
    }
    expect(issued[0].access_key_id).toMatch(/^MRAK[A-Z0-9]{16}$/);
    expect(issued[0].secret_access_key).toMatch(/^[0-9a-f]{40}$/);
    expectError(await http("POST", `/accounts/${a.accountId}/access-keys`, { bearer: admin }), 409, /limit/);
    const listed = await http("GET", `/accounts/${a.accountId}/access-keys`, { bearer: admin });
    expect(listed.json()).toHaveLength(3);
    for (const k of issued) expect(listed.text()).not.toContain(k.secret_access_key);
    expect((await http("DELETE", `/accounts/${a.accountId}/access-keys/${issued[0].access_key_id}`, { bearer: admin })).status).toBe(204);
    expectError(await http("DELETE", `/accounts/${a.accountId}/access-keys/MRAKZZZZZZZZZZZZZZZZ`, { bearer: admin }), 404);
    const after = (await http("GET", `/accounts/${a.accountId}/access-keys`, { bearer: admin })).json();
    expect(after.find((k: any) => k.access_key_id === issued[0].access_key_id).state).toBe("revoked");
    expect((await http("POST", `/accounts/${a.accountId}/access-keys`, { bearer: admin })).status).toBe(201);
    // an access key id is not a bearer token anywhere
    expectError(await http("GET", "/api/v1/buckets", { bearer: issued[1].secret_access_key.padEnd(64, "0") }), 401);
  });

  it("the wallet route answers the account's derived address with its API key", async () => {
    const r = await http("GET", "/api/v1/wallet", { bearer: acct.apiKey });
    expect(r.status).toBe(200);
    expect(r.json().wallet.address).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await http("GET", "/api/v1/wallet", { bearer: acct.apiKey })).json()).toEqual(r.json());
    expectError(await http("GET", "/api/v1/wallet", { bearer: admin }), 401);
  });
});

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
    const { BlobstoreLog } = await import("../actors/blobstore/log.ts");
    const { openEventLog } = await import("../eventlog/connection.ts");
    const { KIND, EVT, newEvent, objectAggregateId } = await import("../schemas/blobstore/events.ts");
    const admin = (await issueAdminKey("orphan-app")).secret;
    const acct = await newAccount(admin);
    const created = (await http("POST", "/api/v1/buckets", { bearer: acct.apiKey, body: { name: "orphanage" } })).json();
    expect((await http("DELETE", "/api/v1/buckets/orphanage", { bearer: acct.apiKey })).status).toBe(204);
    // Given a write appended to the dead generation by a process that died before undoing it
    const bytes = randomBytes(700);
    const stored = await svc.backend.put(bytes);
    const el = await openEventLog({ servers: nats.url, name: "crashed-writer" });
    try {
      const log = new BlobstoreLog(el);
      const t = new Date().toISOString();
      const objectId = objectAggregateId(created.bucket_id, "lost");
      await log.appendAny(KIND.blob, objectId, [newEvent(EVT.blobWritten, { object_id: objectId, bucket: "orphanage", bucket_id: created.bucket_id, account_id: acct.accountId, key: "lost", blob_id: stored.blobId, size: 700, md5: md5(bytes), content_type: "application/octet-stream", created_at: t, updated_at: t })], { correlationId: "crash" });
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

// ------------------------------------------------------------------ operator command edge cases

describe("operator command", () => {
  it("prints help and refuses bad usage", async () => {
    const help = await cli("--help");
    expect(help.rc).toBe(0);
    expect(help.out.join("\n")).toContain("admin-key");
    expect((await cli("admin-key", "--help")).rc).toBe(0);
    expect((await cli("admin-key", "issue")).rc).toBe(2);
    expect((await cli("admin-key", "issue", "--app", "bad app!")).rc).toBe(2);
    expect((await cli("admin-key", "revoke")).rc).toBe(2);
    expect((await cli("admin-key", "revoke", "not-a-key-id")).rc).toBe(2);
    expect((await cli("admin-key", "frobnicate")).rc).toBe(2);
    const missing = await cli("admin-key", "revoke", "00000000-0000-4000-8000-000000000000");
    expect(missing.rc).toBe(1);
    expect(missing.err[0]).toContain("no admin key");
    const empty = await cli("admin-key", "list", "--app", "nobody");
    expect(empty.rc).toBe(0);
    const out: string[] = [];
    expect(await blobstoreCommand(["admin-key", "list", "--app", "x"], { NATS_URL: nats.url }, { out: (l) => out.push(l), err: (l) => out.push(l) })).toBe(2);
    expect(out.join("\n")).toContain("DATABASE_URL");
  });

  it("revoking twice is reported, and an API key id is not an admin key id", async () => {
    const k = await issueAdminKey("twice-app");
    expect((await cli("admin-key", "revoke", k.keyId)).rc).toBe(0);
    const again = await cli("admin-key", "revoke", k.keyId);
    expect(again.rc).toBe(0);
    expect(again.out[0]).toContain("already revoked");
    const admin = (await issueAdminKey("twice-app")).secret;
    const acct = await newAccount(admin);
    expect((await cli("admin-key", "revoke", acct.apiKeyId)).rc).toBe(1);
    expect((await http("GET", "/api/v1/buckets", { bearer: acct.apiKey })).status).toBe(200);
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
