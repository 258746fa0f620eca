// Black-box tests of the blob storage service (spec/blobstore.md, issue 3), credentials: admin keys from the
// operator command to rotation, API keys and access keys over HTTP, and the command's own edge cases. HTTP in, HTTP
// out, against the started service on a private nats-server and a fresh database (test/support/blobstore-suite.ts).
import { beforeAll, describe, expect, it } from "vitest";
import { blobstoreCommand } from "../cli/blobstore.ts";
import { cli, expectError, hex64, http, issueAdminKey, listAdminKeys, md5, nats, newAccount, newBucket, put, sha256Id, useBlobstoreSuite } from "./support/blobstore-suite.ts";

useBlobstoreSuite();

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
