// The black-box blob store suites (test/blobstore-*.test.ts of spec/blobstore.md, issue 3): each file calls
// useBlobstoreSuite() and so gets its own service on a private nats-server and a fresh database, started before its
// tests and stopped after them; the bindings below follow that file's service. Plus the calls those files share:
// the operator command, HTTP calls that make what a test needs, and the error check.
import { afterAll, beforeAll, expect } from "vitest";
import { createHash, randomBytes } from "node:crypto";
import type { NatsServerHandle } from "./nats-server.ts";
import type { TestDatabase } from "./postgres.ts";
import type { BlobstoreHandle } from "../../gateway/blobstore/options.ts";
import { blobstoreCommand } from "../../cli/blobstore.ts";
import type { HttpClient } from "./blobstore-testkit.ts";
import { startTestBlobstore, type TestBlobstore } from "./blobstore.ts";

export const MAX_BLOB = 4 * 1024 * 1024;

export let nats: NatsServerHandle;
export let tdb: TestDatabase;
export let dataDir: string;
export let svc: BlobstoreHandle;
export let http: HttpClient;
let env: Record<string, string>;

/** Starts this file's blob store before its tests and stops it after them. */
export function useBlobstoreSuite(): void {
  let bs: TestBlobstore | undefined;
  beforeAll(async () => {
    bs = await startTestBlobstore("bs_test", { maxBlobBytes: MAX_BLOB });
    ({ nats, db: tdb, dataDir, svc, http } = bs);
    env = bs.env;
  }, 60_000);
  afterAll(() => bs?.stop());
}

export async function cli(...args: string[]): Promise<{ rc: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const rc = await blobstoreCommand(args, env, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { rc, out, err };
}

export async function issueAdminKey(app: string): Promise<{ secret: string; keyId: string }> {
  const r = await cli("admin-key", "issue", "--app", app, "--json");
  expect(r.rc, r.err.join("\n")).toBe(0);
  const j = JSON.parse(r.out[0]);
  return { secret: j.secret, keyId: j.key_id };
}

export async function listAdminKeys(app: string): Promise<any[]> {
  const r = await cli("admin-key", "list", "--app", app, "--json");
  expect(r.rc, r.err.join("\n")).toBe(0);
  return JSON.parse(r.out[0]);
}

export async function newAccount(adminKey: string): Promise<{ accountId: string; apiKey: string; apiKeyId: string }> {
  const r = await http("POST", "/accounts", { bearer: adminKey, body: { name: "acct" } });
  expect(r.status, r.text()).toBe(201);
  const j = r.json();
  return { accountId: j.account_id, apiKey: j.api_key.secret, apiKeyId: j.api_key.id };
}

export async function newBucket(apiKey: string, name = `b-${randomBytes(5).toString("hex")}`): Promise<string> {
  const r = await http("POST", "/api/v1/buckets", { bearer: apiKey, body: { name } });
  expect(r.status, r.text()).toBe(201);
  return name;
}

export const put = (apiKey: string, bucket: string, key: string, body: Buffer | string, headers: Record<string, string> = {}) =>
  http("PUT", `/api/v1/buckets/${bucket}/blobs/${key}`, { bearer: apiKey, body, headers });

export const sha256Id = (b: Buffer | string) => createHash("sha256").update(b).digest("base64url");
export const md5 = (b: Buffer | string) => createHash("md5").update(b).digest("hex");
export const hex64 = () => randomBytes(32).toString("hex");

export function expectError(r: { status: number; json(): any; headers: Record<string, unknown> }, status: number, match?: RegExp) {
  expect(r.status).toBe(status);
  expect(String(r.headers["content-type"])).toContain("application/json");
  const body = r.json();
  expect(typeof body.error).toBe("string");
  if (match) expect(body.error).toMatch(match);
}
