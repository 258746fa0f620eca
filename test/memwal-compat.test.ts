// Black-box compatibility with the MemWal clients (issue 12): requests built exactly as the released TypeScript SDK
// (packages/sdk/src/memwal.ts: signedRequest, buildSealSession, ensureCompatibleRelayer) and the Python SDK
// (memwal/client.py: compact JSON with ASCII escapes) build them — header names and case, canonical message, body
// bytes, `x-seal-session`, GET with an empty signed body, polling — against the started stack.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash, randomUUID } from "node:crypto";
import { request } from "undici";
import { ed25519 } from "@noble/curves/ed25519.js";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { createDelegateSession } from "../adapters/encryption/session.ts";
import type { DevIdentity } from "../runtime/local-stack.ts";

let t: TestStack;
let who: DevIdentity;
let session: string;

beforeAll(async () => {
  t = await startTestStack({ CORS_ALLOWED_ORIGINS: "https://app.example" });
  who = await t.stack.createIdentity("memwal-sdk");
  session = (await createDelegateSession({ delegateSecretKey: who.delegateSecretKey, packageId: t.stack.encryptionStack.packageId, rpcUrl: t.stack.encryptionStack.rpcUrl })).header;
}, 120_000);
afterAll(async () => t?.teardown());

/** Python's json.dumps(separators=(",", ":")) with its default ensure_ascii. */
const pythonJson = (v: unknown) => JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));

/** signedRequest as the SDKs do it: `${timestamp}.${METHOD}.${path}.${sha256(body)}.${nonce}.${accountId}`. */
async function sdk(method: "GET" | "POST", path: string, body: unknown = {}, opts: { python?: boolean; session?: boolean } = {}) {
  const bodyStr = method === "GET" ? "" : opts.python ? pythonJson(body) : JSON.stringify(body);
  const timestamp = Math.floor(Date.now() / 1000).toString();
  const nonce = randomUUID();
  const digest = createHash("sha256").update(bodyStr).digest("hex");
  const message = `${timestamp}.${method}.${path}.${digest}.${nonce}.${who.accountId}`;
  const signature = ed25519.sign(new TextEncoder().encode(message), who.delegateSecretKey);
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "x-public-key": Buffer.from(ed25519.getPublicKey(who.delegateSecretKey)).toString("hex"),
    "x-signature": Buffer.from(signature).toString("hex"),
    "x-timestamp": timestamp,
    "x-nonce": nonce,
    "x-account-id": who.accountId,
  };
  if (opts.session !== false) headers["x-seal-session"] = session;
  const res = await request(t.stack.relayerUrl + path, { method, headers, body: method === "GET" ? undefined : bodyStr });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

/** waitForRememberJob: poll GET /api/remember/{id} until a terminal state. */
async function waitForRememberJob(jobId: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const r = await sdk("GET", `/api/remember/${jobId}`);
    expect([200, 404]).toContain(r.status);
    if (r.body?.status === "done" || r.body?.status === "failed") return r.body;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`job ${jobId} did not finish`);
}

const semver = (v: string) => v.split(".").map(Number);
const atMost = (a: string, b: string) => {
  const [x, y] = [semver(a), semver(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] < y[i];
  return true;
};

describe("the MemWal clients' compatibility checks", () => {
  it("GET /version passes every released client's check (TS 0.0.4, Python 0.1.0, MCP 0.0.1 baselines)", async () => {
    const v = await (await request(t.stack.relayerUrl + "/version")).body.json() as any;
    expect(semver(v.apiVersion)[0]).toBe(1);
    expect(v.relayerVersion).toMatch(/^\d+\.\d+\.\d+$/);
    expect(atMost(v.minSupportedSdk.typescript, "0.0.4")).toBe(true);
    expect(atMost(v.minSupportedSdk.python, "0.1.0")).toBe(true);
    expect(atMost(v.minSupportedSdk.mcp, "0.0.1")).toBe(true);
  });

  it("GET /config carries packageId, network and suiRpcUrl (what the SDK needs to build its seal session)", async () => {
    const c = await (await request(t.stack.relayerUrl + "/config")).body.json() as any;
    expect(c.packageId).toBe(t.stack.encryptionStack.packageId);
    expect(c.network).toBeTruthy();
    expect(c.suiRpcUrl).toBe(c.chainRpcUrl);
    expect(c.suiRpcUrl).toMatch(/^http/);
  });

  it("CORS lets a browser send x-seal-session", async () => {
    const r = await request(t.stack.relayerUrl + "/api/recall", { method: "OPTIONS", headers: { origin: "https://app.example", "access-control-request-method": "POST" } });
    await r.body.text();
    expect(r.statusCode).toBe(204);
    const allowed = String(r.headers["access-control-allow-headers"]).split(/,\s*/);
    for (const h of ["x-seal-session", "x-encryption-session", "x-public-key", "x-signature", "x-timestamp", "x-nonce", "x-account-id"]) expect(allowed).toContain(h);
  });
});

describe("TypeScript SDK calls", () => {
  it("rememberAsync + waitForRememberJob, recall (with and without scoring weights), embed, restore", async () => {
    const accepted = await sdk("POST", "/api/remember", { text: "My sister Ana lives in Porto", namespace: "family" });
    expect(accepted.status).toBe(202);
    expect(accepted.body.job_id).toMatch(/^[0-9a-f-]{36}$/);
    const done = await waitForRememberJob(accepted.body.job_id);
    expect(done).toMatchObject({ status: "done", blob_id: expect.any(String) });

    const recall = await sdk("POST", "/api/recall", { query: "where does my sister live?", limit: 10, namespace: "family" });
    expect(recall.status).toBe(200);
    expect(recall.body.results[0]).toMatchObject({ text: "My sister Ana lives in Porto", blob_id: done.blob_id });
    expect(typeof recall.body.results[0].distance).toBe("number");
    const weighted = await sdk("POST", "/api/recall", { query: "sister", limit: 5, namespace: "family", scoring_weights: { semantic: 1, recency: 0.5, importance: 0.2 } });
    expect(weighted.status).toBe(200);
    expect(typeof weighted.body.results[0].score).toBe("number");

    const embedded = await sdk("POST", "/api/embed", { text: "hello world" });
    expect(embedded.status).toBe(200);
    expect(embedded.body.vector).toHaveLength(t.stack.embedder.dims);
    expect(await sdk("POST", "/api/embed", { text: "" })).toMatchObject({ status: 400 });

    const restored = await sdk("POST", "/api/restore", { namespace: "family", limit: 10 });
    expect(restored.status).toBe(200);
    expect(restored.body).toMatchObject({ restored: 0, skipped: 1, total: 1 });
  }, 60_000);

  it("rememberBulkAsync + getRememberBulkStatus", async () => {
    const accepted = await sdk("POST", "/api/remember/bulk", { items: [{ text: "Coffee with oat milk", namespace: "prefs" }, { text: "Allergic to peanuts", namespace: "prefs" }] });
    expect(accepted.status).toBe(202);
    expect(accepted.body.job_ids).toHaveLength(2);
    for (const id of accepted.body.job_ids) await waitForRememberJob(id);
    const status = await sdk("POST", "/api/remember/bulk/status", { job_ids: [...accepted.body.job_ids, randomUUID()] });
    expect(status.status).toBe(200);
    expect(JSON.stringify(status.body)).toContain("not_found");
  }, 60_000);

  it("analyze (occurred_at as the SDK sends it) and ask", async () => {
    const r = await sdk("POST", "/api/analyze", { text: "I moved to Lisbon last month.", namespace: "moves", occurred_at: new Date("2026-05-20T08:00:00Z").toISOString() });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ fact_count: 1, status: "pending", owner: who.owner, facts: [{ text: "User moved to Lisbon in April 2026.", id: r.body.job_ids[0], job_id: r.body.job_ids[0] }] });
    await waitForRememberJob(r.body.job_ids[0]);
    const a = await sdk("POST", "/api/ask", { question: "Where did I move?", namespace: "moves" });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ memories_used: 1, memories: [{ text: "User moved to Lisbon in April 2026." }] });
  }, 60_000);

  it("getRememberStatus of an unknown job is a 404 with an error the SDK maps to not_found", async () => {
    const r = await sdk("GET", `/api/remember/${randomUUID()}`);
    expect(r.status).toBe(404);
    expect(r.body.error).toBeTruthy();
  });

  it("a recall without any decrypt credential is refused (by design: no server key) with how to send the session", async () => {
    const r = await sdk("POST", "/api/recall", { query: "x", limit: 1, namespace: "family" }, { session: false });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/x-encryption-session header/);
    expect(r.body.error).toMatch(/x-seal-session/);
    expect(r.body.error).toMatch(/SessionKey.*export\(\)/);
  });

  it("an over-limit text answers 400 in MemWal's words (its server tests match 'exceeds maximum length')", async () => {
    const big = await sdk("POST", "/api/remember", { text: "x".repeat(1_048_577), namespace: "size" });
    expect(big).toMatchObject({ status: 400, body: { error: "Text exceeds maximum length of 1048576 bytes" } });
    const bulk = await sdk("POST", "/api/remember/bulk", { items: [{ text: "y".repeat(1_048_577) }] });
    expect(bulk).toMatchObject({ status: 400, body: { error: "items[0].text exceeds 1048576 bytes" } });
    const analyze = await sdk("POST", "/api/analyze", { text: "z".repeat(65_537) });
    expect(analyze).toMatchObject({ status: 400, body: { error: "Text exceeds maximum length of 65536 bytes" } });
    // exactly at the limit is accepted
    expect((await sdk("POST", "/api/remember", { text: "x".repeat(1_048_576), namespace: "size" })).status).toBe(202);
  }, 60_000);
});

describe("clients that sign the old four-field message (no x-nonce)", () => {
  /** What MemWal's SDKs before x-nonce sign: `${timestamp}.${METHOD}.${path}.${sha256(body)}`. */
  function oldSigned(path: string, bodyStr: string) {
    const timestamp = Math.floor(Date.now() / 1000).toString();
    const digest = createHash("sha256").update(bodyStr).digest("hex");
    const signature = ed25519.sign(new TextEncoder().encode(`${timestamp}.POST.${path}.${digest}`), who.delegateSecretKey);
    return {
      "content-type": "application/json",
      "x-public-key": Buffer.from(ed25519.getPublicKey(who.delegateSecretKey)).toString("hex"),
      "x-signature": Buffer.from(signature).toString("hex"),
      "x-timestamp": timestamp,
      "x-account-id": who.accountId,
    };
  }

  it("answers 426 Upgrade Required with the minimum versions, as MemWal does; an unsigned request stays 401", async () => {
    const bodyStr = JSON.stringify({ text: "test memory for rate limit check" });
    const res = await request(t.stack.relayerUrl + "/api/remember", { method: "POST", headers: oldSigned("/api/remember", bodyStr), body: bodyStr });
    const body = (await res.body.json()) as { error: string; minSupportedSdk: Record<string, string> };
    expect(res.statusCode).toBe(426);
    expect(res.headers["x-auth-error"]).toBe("ERR_UPGRADE_REQUIRED");
    expect(body.error).toMatch(/upgrade/);
    expect(body.minSupportedSdk).toEqual({ typescript: "0.0.4", python: "0.1.0", mcp: "0.0.1" });
    const unsigned = await request(t.stack.relayerUrl + "/api/remember", { method: "POST", headers: { "content-type": "application/json" }, body: bodyStr });
    await unsigned.body.text();
    expect(unsigned.statusCode).toBe(401);
  });

  it("the SDK the npm registry publishes (@mysten-incubation/memwal 0.0.1) reads /health and is told to upgrade on its first signed call", async () => {
    const { MemWal } = await import("@mysten-incubation/memwal");
    const client = MemWal.create({ key: Buffer.from(who.delegateSecretKey).toString("hex"), accountId: who.accountId, serverUrl: t.stack.relayerUrl } as never);
    expect(await client.health()).toMatchObject({ status: "ok" });
    await expect(client.remember("I like green tea", "npm-sdk")).rejects.toThrow(/MemWal API error \(426\).*minSupportedSdk.*"typescript":"0\.0\.4"/);
    await expect(client.recall("tea", 5, "npm-sdk")).rejects.toThrow(/\(426\)/);
  });
});

describe("Python SDK calls", () => {
  it("compact JSON with ASCII escapes signs and decodes (remember, recall)", async () => {
    const text = "Café in Lisbon — São Bento at 9";
    const accepted = await sdk("POST", "/api/remember", { text, namespace: "py" }, { python: true });
    expect(accepted.status).toBe(202);
    await waitForRememberJob(accepted.body.job_id);
    const recall = await sdk("POST", "/api/recall", { query: "café Lisbon", limit: 3, namespace: "py" }, { python: true });
    expect(recall.body.results[0].text).toBe(text);
  }, 60_000);
});
