// Black-box, against the whole local stack (issue 11): text that cannot be stored (U+0000, lone surrogates) is refused
// at every service's edge with a 400 that names the field, and a fuzz over every route of the relayer, the blob store
// and the console — bad bodies, types, Unicode, sizes, content types, paths, queries and credentials — gets only 4xx
// answers (never a 5xx, never a dropped connection), after which ordinary work still completes.
//   FUZZ_CASES (per service, default 400) and FUZZ_SEED; `npm run fuzz` runs the full count.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes, randomUUID } from "node:crypto";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { httpClient, type HttpClient } from "./support/blobstore-testkit.ts";
import { RequestSigner } from "../client/signer.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";
import { ConsoleClient } from "../client/console-client.ts";
import { blobstoreCommand } from "../cli/blobstore.ts";
import { consoleCommand } from "../cli/console.ts";
import { badRequest, prng, type FuzzCase, type Target } from "./support/fuzz.ts";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { TOOL } from "../schemas/mcp-tools.ts";
import { longText } from "./support/long-text.ts";

const CASES = Number(process.env.FUZZ_CASES ?? 400);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);

let t: TestStack;
let relayer: HttpClient, blobs: HttpClient, consoleHttp: HttpClient;
let signer: RequestSigner;
let adminKey: string, apiKey: string, accountId: string;
let consoleKey: string, serviceKey: string, spaceId: string, bucketId: string;
let agent: MemrelayClient;

async function cliJson(cmd: typeof blobstoreCommand, args: string[]): Promise<any> {
  const out: string[] = [];
  const code = await cmd([...args, "--json"], { NATS_URL: t.stack.config.natsUrl, DATABASE_URL: t.database.url, MEMRELAY_DATA_DIR: t.stack.config.dataDir }, { out: (l) => out.push(l), err: () => undefined });
  if (code !== 0) throw new Error(`${args.join(" ")} exited ${code}`);
  return JSON.parse(out.join("\n"));
}

beforeAll(async () => {
  t = await startTestStack({ MCP_OAUTH_DELEGATE_ENCRYPTION_KEY: randomBytes(32).toString("base64url") });
  relayer = httpClient(t.stack.relayerUrl, 8);
  blobs = httpClient(t.stack.blobstoreUrl, 8);
  consoleHttp = httpClient(t.stack.consoleUrl, 8);
  const who = await t.stack.createIdentity("fuzz");
  signer = new RequestSigner(who.delegateSecretKey, who.accountId);
  agent = await t.client();
  adminKey = (await cliJson(blobstoreCommand, ["admin-key", "issue", "--app", "fuzz-app"])).secret;
  const acct = (await blobs("POST", "/accounts", { bearer: adminKey, body: { name: "fuzz" } })).json();
  apiKey = acct.api_key.secret;
  accountId = acct.account_id;
  expect((await blobs("POST", "/api/v1/buckets", { bearer: apiKey, body: { name: "fuzz-bucket" } })).status).toBe(201);
  expect((await blobs("PUT", "/api/v1/buckets/fuzz-bucket/blobs/known", { bearer: apiKey, body: "known bytes" })).status).toBe(201);
  const user = await cliJson(consoleCommand, ["signup", "--email", "fuzz@example.com", "--name", "Fuzz"]);
  const key = await cliJson(consoleCommand, ["key", "mint", "--user", user.user_id, "--role", "read_write"]);
  consoleKey = key.secret;
  serviceKey = key.service_key.secret_key;
  const c = new ConsoleClient(t.stack.consoleUrl, consoleKey);
  spaceId = (await c.spaces("personal"))[0].id;
  bucketId = (await c.createPrivateBucket(spaceId, "Fuzz Notes", serviceKey)).bucket_id;
}, 180_000);
afterAll(async () => {
  for (const h of [relayer, blobs, consoleHttp]) h?.close();
  await t?.teardown();
});

const signedHeaders = (method: string, target: string, body?: Buffer) => ({ ...signer.headers(method, target, body ?? ""), ...(body ? { "content-type": "application/json" } : {}) });

async function signed(method: string, target: string, body?: unknown) {
  const bytes = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const r = await relayer(method, target, { headers: signedHeaders(method, target, bytes), body: bytes });
  return { status: r.status, error: r.body.length ? (r.json().error as string) : "" };
}

describe("text that cannot be stored is refused at the edge with the field named", () => {
  const NUL = "team\u0000a";
  const LONE = "team\ud800a";
  it.each([
    ["POST", "/api/remember", { text: "hello", namespace: NUL }, /namespace contains U\+0000/],
    ["POST", "/api/remember", { text: "hello", namespace: LONE }, /namespace contains a lone surrogate/],
    ["POST", "/api/remember", { text: "he\u0000llo", namespace: "ok" }, /text contains U\+0000/],
    ["POST", "/api/remember", { text: "he\udfffllo" }, /text contains a lone surrogate/],
    ["POST", "/api/remember/bulk", { items: [{ text: "fine" }, { text: "x", namespace: NUL }] }, /items\[1\]\.namespace contains U\+0000/],
    ["POST", "/api/recall", { query: "q\u0000", namespace: "ok" }, /query contains U\+0000/],
    ["POST", "/api/recall", { query: "q", namespace: LONE }, /namespace contains a lone surrogate/],
    ["POST", "/api/stats", { namespace: NUL }, /namespace contains U\+0000/],
    ["POST", "/api/forget", { namespace: NUL }, /namespace contains U\+0000/],
    ["POST", "/api/restore", { namespace: NUL }, /namespace contains U\+0000/],
  ])("relayer %s %s %j → 400", async (method, path, body, message) => {
    const r = await signed(method, path, body);
    expect(r.status).toBe(400);
    expect(r.error).toMatch(message);
  });

  it("blob store: account names, bucket descriptions and metadata, object keys and list queries", async () => {
    const cases: [string, string, unknown, RegExp, string][] = [
      ["POST", "/accounts", { name: "acme\u0000" }, /name contains U\+0000/, adminKey],
      ["POST", "/api/v1/buckets", { name: "fine-name", description: "d\ud800" }, /description contains a lone surrogate/, apiKey],
      ["PATCH", "/api/v1/buckets/fuzz-bucket", { metadata: { "k\u0000": "v" } }, /field name in metadata contains U\+0000/, apiKey],
      ["PATCH", "/api/v1/buckets/fuzz-bucket", { metadata: { k: "v\u0000" } }, /metadata\.k contains U\+0000/, apiKey],
      ["GET", "/api/v1/buckets/fuzz-bucket/blobs?prefix=a%00b", undefined, /query parameter "prefix" contains U\+0000/, apiKey],
      ["PUT", "/api/v1/buckets/fuzz-bucket/blobs/a%00b", "bytes", /control characters/, apiKey],
    ];
    for (const [method, path, body, message, bearer] of cases) {
      const r = await blobs(method, path, { bearer, body: body as string });
      expect(r.status, `${method} ${path}`).toBe(400);
      expect(r.json().error, `${method} ${path}`).toMatch(message);
    }
  });

  it("console: bucket names, sponsorship fields, file metadata and list queries", async () => {
    const c = new ConsoleClient(t.stack.consoleUrl, consoleKey);
    const r1 = await c.call("POST", `/api/v1/spaces/${spaceId}/buckets`, { json: { name: "Notes\u0000", scope: "private" }, throwOnError: false });
    expect(r1.status).toBe(400);
    expect(r1.body).toMatchObject({ code: "bad_request", error: expect.stringMatching(/name contains U\+0000/) });
    const r2 = await c.call("POST", "/encryption/sponsor", { json: { kind: "share_admin", groupId: "0x1", member: "\ud800" }, throwOnError: false });
    expect(r2.status).toBe(400);
    expect(r2.body.error).toMatch(/member contains a lone surrogate/);
    const r3 = await c.call("GET", `/api/v1/spaces/${spaceId}/files?q=a%00b`, { throwOnError: false });
    expect(r3.status).toBe(400);
    expect(r3.body.error).toMatch(/query parameter "q" contains U\+0000/);
    await expect(c.upload(bucketId, { bytes: Buffer.from("x"), metadata: JSON.stringify({ note: "a\u0000" }) })).rejects.toMatchObject({ status: 400 });
  });
});

/** Every route of the three services, with a valid request the fuzzer breaks. */
function targets(): Target[] {
  const job = randomUUID();
  const relayerTargets: Target[] = [
    { service: "relayer", method: "POST", path: "/api/remember", body: { text: "a fact", namespace: "fz" }, fields: { text: "str", namespace: "optstr" }, authed: true },
    { service: "relayer", method: "POST", path: "/api/remember/bulk", body: { items: [{ text: "a" }] }, fields: { items: "arr" }, authed: true },
    { service: "relayer", method: "POST", path: "/api/remember/bulk/status", body: { job_ids: [job] }, fields: { job_ids: "arr" }, authed: true },
    { service: "relayer", method: "POST", path: "/api/recall", body: { query: "q", limit: 3, namespace: "fz" }, fields: { query: "str", limit: "num", namespace: "optstr" }, authed: true },
    { service: "relayer", method: "POST", path: "/api/remember/manual", body: { encrypted_data: "AAAA", vector: [0.1], namespace: "fz" }, fields: { encrypted_data: "str", vector: "arr", namespace: "optstr" }, authed: true },
    { service: "relayer", method: "POST", path: "/api/recall/manual", body: { vector: [0.1], limit: 2, namespace: "fz" }, fields: { vector: "arr", limit: "num", namespace: "optstr" }, authed: true },
    { service: "relayer", method: "POST", path: "/api/forget", body: { namespace: "fz-none" }, fields: { namespace: "optstr" }, authed: true },
    { service: "relayer", method: "POST", path: "/api/stats", body: { namespace: "fz" }, fields: { namespace: "optstr" }, authed: true },
    { service: "relayer", method: "POST", path: "/api/restore", body: { namespace: "fz", limit: 1 }, fields: { namespace: "optstr", limit: "num" }, authed: true },
    { service: "relayer", method: "POST", path: "/api/analyze", body: { text: "I like tea", namespace: "fz", occurred_at: "2026-01-01T00:00:00Z" }, fields: { text: "str", namespace: "optstr", occurred_at: "optstr" }, authed: true },
    { service: "relayer", method: "POST", path: "/api/ask", body: { question: "q", limit: 2, namespace: "fz" }, fields: { question: "str", limit: "num", namespace: "optstr" }, authed: true },
    { service: "relayer", method: "POST", path: "/api/embed", body: { text: "hello" }, fields: { text: "str" }, authed: true },
    { service: "relayer", method: "GET", path: `/api/remember/${job}`, params: [3], authed: true },
    { service: "relayer", method: "GET", path: `/api/accounts/0x${"1".repeat(64)}/exists`, params: [3], authed: false },
    { service: "relayer", method: "GET", path: "/health", authed: false },
    // agent transports (bearer credentials; the signed headers the fuzzer sends are no credential there) and OAuth
    { service: "relayer", method: "POST", path: "/api/mcp", body: { jsonrpc: "2.0", id: 1, method: "tools/list" }, fields: { jsonrpc: "str", method: "str" }, authed: true },
    { service: "relayer", method: "POST", path: "/api/mcp/messages", query: true, body: { jsonrpc: "2.0", id: 1, method: "tools/list" }, fields: { jsonrpc: "str", method: "str" }, authed: true },
    { service: "relayer", method: "DELETE", path: "/api/mcp", authed: true },
    // sponsorship: valid shapes (the signature is no signature of the request, so the sidecar refuses them too)
    { service: "relayer", method: "POST", path: "/sponsor", body: { sender: `0x${"2".repeat(64)}`, transactionBlockKindBytes: Buffer.alloc(40, 1).toString("base64"), authTimestamp: Math.floor(Date.now() / 1000), authNonce: randomUUID(), authSignature: Buffer.alloc(97, 1).toString("base64") }, fields: { sender: "str", transactionBlockKindBytes: "str", authTimestamp: "num", authNonce: "str", authSignature: "str" }, authed: false },
    { service: "relayer", method: "POST", path: "/sponsor/execute", body: { digest: "4".repeat(44), signature: Buffer.alloc(97, 1).toString("base64"), sender: `0x${"2".repeat(64)}` }, fields: { digest: "str", signature: "str", sender: "str" }, authed: false },
    { service: "relayer", method: "POST", path: "/oauth/register", body: { client_name: "fz", redirect_uris: ["http://127.0.0.1:9/cb"] }, fields: { client_name: "optstr", redirect_uris: "arr" }, authed: false },
    { service: "relayer", method: "POST", path: "/oauth/token", body: { grant_type: "authorization_code", code: "mrc.x", client_id: job, code_verifier: "v" }, fields: { grant_type: "str", code: "str", client_id: "str", code_verifier: "str" }, authed: false },
    { service: "relayer", method: "POST", path: "/oauth/revoke", body: { token: "mra.x" }, fields: { token: "str" }, authed: false },
    { service: "relayer", method: "POST", path: "/oauth/consent", body: { grant_id: job, account_id: `0x${"1".repeat(64)}`, decision: "approve" }, fields: { grant_id: "str", account_id: "str", decision: "str" }, authed: false },
    { service: "relayer", method: "GET", path: "/oauth/authorize", query: true, authed: false },
    { service: "relayer", method: "GET", path: `/oauth/consent/${job}`, params: [3], authed: false },
  ];
  const B = "/api/v1/buckets/fuzz-bucket";
  const blobTargets: Target[] = [
    { service: "blobstore", method: "POST", path: "/accounts", body: { name: "n" }, fields: { name: "optstr" }, authed: true },
    { service: "blobstore", method: "GET", path: `/accounts/${accountId}`, params: [2], authed: true },
    { service: "blobstore", method: "GET", path: "/accounts", query: true, authed: true },
    { service: "blobstore", method: "POST", path: `/accounts/${accountId}/api-keys`, params: [2], body: { label: "l" }, fields: { label: "optstr" }, authed: true },
    { service: "blobstore", method: "POST", path: "/api/v1/buckets", body: { name: "new-bucket", description: "d", metadata: { a: "b" } }, fields: { name: "str", description: "optstr", metadata: "obj" }, authed: true },
    { service: "blobstore", method: "GET", path: "/api/v1/buckets", query: true, authed: true },
    { service: "blobstore", method: "PATCH", path: B, params: [4], body: { description: "d", metadata: { a: "b" } }, fields: { description: "optstr", metadata: "obj" }, authed: true },
    { service: "blobstore", method: "GET", path: `${B}/blobs`, params: [4], query: true, authed: true },
    // public read: no credentials needed, so none are fuzzed
    { service: "blobstore", method: "GET", path: `${B}/blobs/known`, params: [4, 6], authed: false },
    { service: "blobstore", method: "GET", path: "/api/v1/wallet", authed: true },
    { service: "blobstore", method: "GET", path: "/v1/blobs/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", params: [3], authed: false },
    { service: "blobstore", method: "GET", path: "/health", authed: false },
  ];
  const P = "/api/v1";
  const consoleTargets: Target[] = [
    { service: "console", method: "GET", path: `${P}/spaces`, query: true, authed: true },
    { service: "console", method: "GET", path: `${P}/spaces/${spaceId}/buckets`, params: [4], query: true, authed: true },
    { service: "console", method: "POST", path: `${P}/spaces/${spaceId}/buckets`, params: [4], body: { name: "Fresh", scope: "private" }, fields: { name: "str", scope: "str" }, authed: true },
    { service: "console", method: "GET", path: `${P}/spaces/${spaceId}/files`, params: [4], query: true, authed: true },
    { service: "console", method: "GET", path: `${P}/buckets/${bucketId}`, params: [4], authed: true },
    { service: "console", method: "PUT", path: `${P}/buckets/${bucketId}`, params: [4], body: { name: "Renamed", visibility: "private" }, fields: { name: "str", visibility: "optstr" }, authed: true },
    { service: "console", method: "POST", path: `${P}/buckets/${bucketId}/finalize`, params: [4], body: { signature: "AAAA" }, fields: { signature: "str" }, authed: true },
    { service: "console", method: "GET", path: `${P}/buckets/${bucketId}/files`, params: [4], query: true, authed: true },
    { service: "console", method: "GET", path: `${P}/buckets/${bucketId}/files/${randomUUID()}`, params: [4, 6], authed: true },
    { service: "console", method: "POST", path: "/encryption/sponsor", body: { kind: "share_admin", groupId: `0x${"a".repeat(64)}`, member: `0x${"b".repeat(64)}` }, fields: { kind: "str", groupId: "str", member: "str" }, authed: true },
    { service: "console", method: "POST", path: `/encryption/sponsor/${"1".repeat(44)}/execute`, params: [3], body: { signature: "AAAA" }, fields: { signature: "str" }, authed: true },
  ];
  return [...relayerTargets, ...blobTargets, ...consoleTargets];
}

async function send(c: FuzzCase, service: string): Promise<number> {
  const client = service === "relayer" ? relayer : service === "blobstore" ? blobs : consoleHttp;
  let headers = c.headers;
  if (c.withAuth) {
    if (service === "relayer") headers = { ...signer.headers(c.method, c.target, c.body ?? ""), ...headers };
    else headers = { authorization: `Bearer ${service === "console" ? consoleKey : c.target.startsWith("/accounts") ? adminKey : apiKey}`, ...headers };
  }
  const r = await client(c.method, c.target, { headers, body: c.body });
  return r.status;
}

describe(`fuzz: ${CASES} bad requests per service (seed ${SEED})`, () => {
  it("answers every one with a 4xx, never a 5xx or a dropped connection", async () => {
    const all = targets();
    const failures: string[] = [];
    const statuses: Record<string, number> = {};
    const started = Date.now();
    for (const service of ["relayer", "blobstore", "console"]) {
      const mine = all.filter((x) => x.service === service);
      const r = prng(SEED + service.length);
      for (let i = 0; i < CASES; i++) {
        const target = mine[Math.floor(r() * mine.length)];
        const c = badRequest(r, target);
        let status: number;
        try {
          status = await send(c, service);
        } catch (err) {
          failures.push(`${service} #${i} ${c.method} ${c.target.slice(0, 80)} (${c.what}): connection error ${(err as Error).message}`);
          continue;
        }
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status < 400 || status >= 500) failures.push(`${service} #${i} ${c.method} ${c.target.slice(0, 80)} (${c.what}): ${status}`);
      }
    }
    console.log(`fuzz seed ${SEED}: ${CASES * 3} cases in ${((Date.now() - started) / 1000).toFixed(1)} s, statuses ${JSON.stringify(statuses)}`);
    expect(failures.slice(0, 20), `seed ${SEED}`).toEqual([]);
  }, 1_800_000);

  it("afterwards an ordinary remember becomes recallable, a console upload completes and a blob reads back", async () => {
    const accepted = await agent.remember("The lighthouse keeper feeds the gulls at dawn", "after-fuzz");
    expect((await agent.waitForJob(accepted.job_id)).status).toBe("done");
    const r = await agent.recall("who feeds the gulls?", { namespace: "after-fuzz", limit: 1 });
    expect(r.results[0]?.text).toBe("The lighthouse keeper feeds the gulls at dawn");

    const c = new ConsoleClient(t.stack.consoleUrl, consoleKey);
    const file = await c.uploadWithRetry(bucketId, () => ({ bytes: Buffer.from("after the storm"), name: `after-${randomUUID()}.txt` }), { everyMs: 100 });
    expect((await c.waitForUpload(bucketId, file.id)).status).toBe("completed");

    expect((await blobs("PUT", "/api/v1/buckets/fuzz-bucket/blobs/after", { bearer: apiKey, body: "still here" })).status).toBe(201);
    const back = await blobs("GET", "/api/v1/buckets/fuzz-bucket/blobs/after", { bearer: apiKey });
    expect(back.status).toBe(200);
    expect(back.text()).toBe("still here");
  }, 120_000);
});

describe("liveness under long texts (64 KiB – 1 MiB) through every text route and the MCP tools", () => {
  it("answers each with a 2xx or a 4xx, and ordinary work of another owner completes meanwhile; every long remember settles", async () => {
    const KIB = 1024;
    const sizes = [64 * KIB, 256 * KIB, 1024 * KIB];
    const owner = await t.stack.createIdentity("long-texts");
    const longClient = await t.client(owner);
    const statuses: string[] = [];
    const expectHandled = (what: string, status: number) => {
      statuses.push(`${what} ${status}`);
      expect(status, what).toBeLessThan(500);
    };
    const call = async (what: string, method: "POST", path: string, body: unknown) => {
      try {
        const r = await longClient.call<{ job_id?: string; job_ids?: string[] }>(method, path, body);
        expectHandled(what, 200);
        return r;
      } catch (err) {
        const status = (err as { status?: number }).status;
        expect(status, `${what}: ${(err as Error).message}`).toBeDefined();
        expectHandled(what, status!);
        return {};
      }
    };
    const jobs: string[] = [];
    const traffic = (async () => {
      for (const size of sizes) {
        const text = longText(size, "", size);
        const r = await call(`remember ${size}`, "POST", "/api/remember", { text, namespace: "long" });
        if (r.job_id) jobs.push(r.job_id);
        await call(`embed ${size}`, "POST", "/api/embed", { text });
        await call(`analyze ${size}`, "POST", "/api/analyze", { text, namespace: "long-facts" });
      }
      const bulk = await call("bulk 1 MiB + 64 KiB", "POST", "/api/remember/bulk", { items: [{ text: longText(1_000_000 - 2 * KIB, "", 5), namespace: "long" }, { text: longText(64 * KIB, "", 6), namespace: "long" }] });
      jobs.push(...(bulk.job_ids ?? []));
      const query = longText(64 * KIB - 1, "", 9);
      expectHandled("recall 64 KiB query", await longClient.recall(query, { namespace: "long", limit: 3 }).then(() => 200, (e) => e.status ?? 599));
      expectHandled("ask 64 KiB question", await longClient.ask(query, { namespace: "long", limit: 3 }).then(() => 200, (e) => e.status ?? 599));
      const mcp = new Client({ name: "fuzz-long", version: "1.0.0" });
      await mcp.connect(new StreamableHTTPClientTransport(new URL("/api/mcp", t.stack.relayerUrl), { requestInit: { headers: { authorization: `Bearer ${Buffer.from(owner.delegateSecretKey).toString("hex")}`, "x-memory-account-id": owner.accountId } } }));
      try {
        for (const [name, args] of [
          [TOOL.remember, { text: longText(256 * KIB, "", 11), namespace: "long-mcp" }],
          [TOOL.rememberBulk, { facts: [longText(64 * KIB, "", 12), longText(128 * KIB, "", 13)], namespace: "long-mcp" }],
          [TOOL.recall, { query: longText(64 * KIB - 1, "", 14), namespace: "long-mcp", limit: 3 }],
          [TOOL.analyze, { text: longText(128 * KIB, "", 15), namespace: "long-mcp" }],
        ] as const) {
          // A tool answers with a result (isError for refused input), never a transport failure.
          const r = await mcp.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
          statuses.push(`mcp ${name} ${r.isError ? "error result" : "ok"}`);
        }
      } finally {
        await mcp.close();
      }
    })();

    // Meanwhile another owner's ordinary remember → done and recall keep answering promptly.
    const slowest: number[] = [];
    for (let i = 0; i < 5; i++) {
      const s = performance.now();
      const j = await agent.rememberAndWait(`Ordinary note ${i}: the ferry timetable changes in May`, "ordinary", 30_000);
      expect(j.status).toBe("done");
      expect((await agent.recall("ferry timetable", { namespace: "ordinary", limit: 1 })).results.length).toBe(1);
      slowest.push((performance.now() - s) / 1000);
    }
    await traffic;
    console.log(`long texts: ${statuses.join(", ")}; ordinary remember+recall ${slowest.map((x) => x.toFixed(2)).join(", ")} s`);
    expect(Math.max(...slowest)).toBeLessThan(15);
    for (const id of jobs) expect(["done", "failed"], id).toContain((await longClient.waitForJob(id, 120_000)).status);
  }, 300_000);
});
