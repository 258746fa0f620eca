// Black-box: manual mode, forget, stats, restore (with its rate limit and the operator command) and the public
// account-existence check, over HTTP against the started stack (real NATS JetStream, Postgres with pgvector, chain
// ledger, key servers, blob store). Plus the shared rate limiter and the client-address rule against real Postgres.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { request } from "undici";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes, randomUUID } from "node:crypto";
import { startTestStack, type TestStack } from "./support/stack.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";
import type { DevIdentity } from "../runtime/local-stack.ts";
import { createDelegateSession } from "../adapters/encryption/session.ts";
import { deactivate } from "../adapters/chain/local/accounts.ts";
import { MEMORY_INDEX } from "../projections/relayer/memory-index.ts";
import { readCheckpoint, resetProjection } from "../projections/runtime.ts";
import { PgRateLimiter, canonicalIp, clientIp, ipBucket } from "../gateway/rate-limit.ts";
import type { Request } from "../gateway/http.ts";
import { writeCredentials } from "../cli/credentials.ts";
import { restoreCommand } from "../cli/restore.ts";
import { IndexLog } from "../projections/relayer/index-log.ts";

let t: TestStack;
const ENV = { MEMRELAY_RESTORE_CANDIDATE_CAP: "6", ACCOUNT_EXISTS_GLOBAL_PER_MINUTE: "60" };
const ORIGIN = "https://app.example";

beforeAll(async () => {
  // Settings these routes read from the process environment (the spec's variables go through startTestStack too).
  Object.assign(process.env, ENV);
  t = await startTestStack({ TRUSTED_PROXY_HOPS: "1", CORS_ALLOWED_ORIGINS: ORIGIN });
}, 120_000);
afterAll(async () => {
  await t?.teardown();
  for (const k of Object.keys(ENV)) delete process.env[k];
});

interface User {
  readonly id: DevIdentity;
  readonly client: MemrelayClient;
  readonly session: string;
}

async function newUser(): Promise<User> {
  const id = await t.stack.createIdentity();
  const client = await t.client(id);
  const s = await createDelegateSession({ delegateSecretKey: id.delegateSecretKey, packageId: t.stack.encryptionStack.packageId, rpcUrl: t.stack.encryptionStack.rpcUrl });
  return { id, client, session: s.header };
}

interface Res { status: number; headers: Record<string, string | string[] | undefined>; body: any }

/** A signed POST that reports any status (raw body string, so malformed payloads can be sent). */
async function post(u: User, path: string, payload: unknown, opts: { session?: boolean } = {}): Promise<Res> {
  const raw = typeof payload === "string" ? payload : JSON.stringify(payload);
  const headers: Record<string, string> = { ...u.client.signer.headers("POST", path, raw), "content-type": "application/json" };
  if (opts.session) headers["x-encryption-session"] = u.session;
  const res = await request(t.stack.relayerUrl + path, { method: "POST", headers, body: raw || undefined });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

async function ok(u: User, path: string, payload: unknown, opts: { session?: boolean } = {}): Promise<any> {
  const r = await post(u, path, payload, opts);
  if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

async function remember(u: User, texts: string[], namespace: string): Promise<void> {
  for (const text of texts) {
    // One at a time, so chain creation order (newest first on restore) follows the list.
    const a = await u.client.remember(text, namespace);
    expect((await u.client.waitForJob(a.job_id)).status).toBe("done");
  }
}

const dims = () => t.stack.embedder.dims;
function unitVector(seed = Math.random()): number[] {
  const v = Array.from({ length: dims() }, (_, i) => Math.sin(seed * 1000 + i * 12.9898));
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const texts = (r: { results: { text: string }[] }) => r.results.map((x) => x.text).sort();

async function until(cond: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the memory index has applied every event so far (a job reported done may still be on its way to it). */
async function settled(): Promise<void> {
  const index = new IndexLog(t.stack.log, t.stack.db);
  expect(await index.waitApplied(await index.lastIndexSeq(), 10_000)).toBe(true);
}

/** Loses the index rows of a namespace behind the log's back. */
async function dropRows(owner: string, namespace: string): Promise<void> {
  await settled();
  await t.stack.db.query("DELETE FROM memories WHERE owner = $1 AND namespace = $2", [owner, namespace]);
}

describe("manual mode", () => {
  it("uploads the bytes, records the blob on chain, indexes the vector, and recalls it by vector", async () => {
    const u = await newUser();
    const bytes = randomBytes(300);
    const vector = unitVector(0.1);
    const m = await ok(u, "/api/remember/manual", { encrypted_data: b64(bytes), vector, namespace: "manual" });
    expect(m).toMatchObject({ owner: u.id.owner, namespace: "manual" });
    expect(m.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(m.blob_id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // The blob object is on chain with the namespace, and the blob store serves the exact bytes.
    expect(await t.stack.chain.getBlob(u.id.owner, m.blob_id)).toMatchObject({ owner: u.id.owner, namespace: "manual", size: 300 });
    const stored = await request(`${t.stack.blobstoreUrl}/v1/blobs/${m.blob_id}`);
    expect(Buffer.from(await stored.body.arrayBuffer()).equals(bytes)).toBe(true);
    // Recallable on the next request, owner- and namespace-scoped.
    await ok(u, "/api/remember/manual", { encrypted_data: b64(randomBytes(50)), vector: unitVector(0.7), namespace: "manual" });
    const r = await ok(u, "/api/recall/manual", { vector, namespace: "manual", limit: 1000 });
    expect(r.total).toBe(2);
    expect(r.results[0]).toMatchObject({ blob_id: m.blob_id, importance: 0.5 });
    expect(r.results[0].distance).toBeLessThan(0.01);
    expect(r.results[0].distance).toBeLessThan(r.results[1].distance);
    expect(new Date(r.results[0].created_at).toISOString()).toBe(r.results[0].created_at);
    expect(r.results[0].score).toBeUndefined();
    const composite = await ok(u, "/api/recall/manual", { vector, namespace: "manual", scoring_weights: { semantic: 1, importance: 1 } });
    expect(typeof composite.results[0].score).toBe("number");
    const other = await newUser();
    expect((await ok(other, "/api/recall/manual", { vector, namespace: "manual" })).total).toBe(0);
    expect((await ok(u, "/api/recall/manual", { vector, namespace: "elsewhere" })).total).toBe(0);
  });

  it("registering the same ciphertext again names the same memory, once", async () => {
    const u = await newUser();
    const payload = { encrypted_data: b64(randomBytes(64)), vector: unitVector(0.2), namespace: "dup" };
    const a = await ok(u, "/api/remember/manual", payload);
    const b = await ok(u, "/api/remember/manual", payload);
    expect(b).toEqual(a);
    expect((await ok(u, "/api/stats", { namespace: "dup" })).memory_count).toBe(1);
    const elsewhere = await post(u, "/api/remember/manual", { ...payload, namespace: "other" });
    expect(elsewhere.status).toBe(409);
  });

  const zeros = () => new Array(dims()).fill(0);
  it.each([
    ["encrypted_data not base64", () => ({ encrypted_data: "not base64!", vector: unitVector() })],
    ["encrypted_data with a stray padding", () => ({ encrypted_data: "QU=JD", vector: unitVector() })],
    ["encrypted_data empty", () => ({ encrypted_data: "", vector: unitVector() })],
    ["encrypted_data missing", () => ({ vector: unitVector() })],
    ["vector of the wrong dimension", () => ({ encrypted_data: "QUJD", vector: unitVector().slice(1) })],
    ["vector too long", () => ({ encrypted_data: "QUJD", vector: [...unitVector(), 0.5] })],
    ["vector with a string", () => ({ encrypted_data: "QUJD", vector: ["1", ...unitVector().slice(1)] })],
    ["vector all zeros", () => ({ encrypted_data: "QUJD", vector: zeros() })],
    ["vector out of halfvec range", () => ({ encrypted_data: "QUJD", vector: [1e6, ...unitVector().slice(1)] })],
    ["vector missing", () => ({ encrypted_data: "QUJD" })],
  ])("manual remember: %s → 400 with {error}", async (_name, payload) => {
    const u = await newUser();
    const r = await post(u, "/api/remember/manual", payload());
    expect(r.status).toBe(400);
    expect(typeof r.body.error).toBe("string");
    expect((await ok(u, "/api/stats", {})).memory_count).toBe(0);
  });

  it("manual remember and recall: non-finite values, wrong dimension and bad limits → 400", async () => {
    const u = await newUser();
    const nonFinite = `{"encrypted_data":"QUJD","vector":[1e999${",0.1".repeat(dims() - 1)}]}`;
    expect((await post(u, "/api/remember/manual", nonFinite)).status).toBe(400);
    expect((await post(u, "/api/recall/manual", `{"vector":[1e999${",0.1".repeat(dims() - 1)}]}`)).status).toBe(400);
    expect((await post(u, "/api/recall/manual", { vector: unitVector().slice(2) })).status).toBe(400);
    expect((await post(u, "/api/recall/manual", { vector: unitVector(), limit: 0 })).status).toBe(400);
    expect((await post(u, "/api/recall/manual", { vector: unitVector(), limit: 2.5 })).status).toBe(400);
    const r = await post(u, "/api/recall/manual", { vector: unitVector(), scoring_weights: { recency: -1 } });
    expect(r.status).toBe(400);
    expect(typeof r.body.error).toBe("string");
  });
});

describe("forget and stats", () => {
  it("answer zero for an empty or unknown namespace", async () => {
    const u = await newUser();
    expect(await ok(u, "/api/stats", { namespace: "nothing-here" })).toEqual({ memory_count: 0, storage_bytes: 0, namespace: "nothing-here", owner: u.id.owner });
    expect(await ok(u, "/api/forget", { namespace: "nothing-here" })).toEqual({ deleted: 0, namespace: "nothing-here", owner: u.id.owner });
    // No body at all means the default namespace.
    expect(await ok(u, "/api/stats", "")).toMatchObject({ memory_count: 0, namespace: "default" });
    expect(await ok(u, "/api/forget", "")).toMatchObject({ deleted: 0, namespace: "default" });
  });

  it("stats counts the owner's namespace; forget deletes its rows only, and the blobs persist", async () => {
    const [u, other] = [await newUser(), await newUser()];
    await remember(u, ["I keep bees on the roof", "The hive produced 12 kg of honey"], "bees");
    await remember(u, ["keep me: I live in Porto"], "kept");
    await remember(other, ["someone else's bees"], "bees");
    await settled();
    const manual = await ok(u, "/api/remember/manual", { encrypted_data: b64(randomBytes(100)), vector: unitVector(0.3), namespace: "bees" });
    const stats = await ok(u, "/api/stats", { namespace: "bees" });
    expect(stats).toMatchObject({ memory_count: 3, namespace: "bees", owner: u.id.owner });
    expect(stats.storage_bytes).toBeGreaterThan(100);
    expect(await ok(u, "/api/forget", { namespace: "bees" })).toEqual({ deleted: 3, namespace: "bees", owner: u.id.owner });
    expect((await ok(u, "/api/stats", { namespace: "bees" })).memory_count).toBe(0);
    expect((await u.client.recall("bees", { namespace: "bees" })).total).toBe(0);
    expect((await ok(u, "/api/stats", { namespace: "kept" })).memory_count).toBe(1);
    expect((await ok(other, "/api/stats", { namespace: "bees" })).memory_count).toBe(1);
    expect(await t.stack.chain.getBlob(u.id.owner, manual.blob_id)).not.toBeNull();
    expect((await t.stack.chain.listBlobs(u.id.owner, { namespace: "bees", limit: 10 })).length).toBe(3);
  });

  it("forget and stats: malformed body or namespace → 400", async () => {
    const u = await newUser();
    for (const path of ["/api/forget", "/api/stats"]) {
      expect((await post(u, path, "{nope")).status).toBe(400);
      expect((await post(u, path, { namespace: 7 })).status).toBe(400);
      expect((await post(u, path, { namespace: "é".repeat(128) })).status).toBe(400);
    }
  });
});

describe("restore", () => {
  it("forget then restore does not bring forgotten memories back, unless asked to", async () => {
    const u = await newUser();
    await remember(u, ["My sister is called Ines", "Ines lives in Berlin"], "family");
    await ok(u, "/api/remember/manual", { encrypted_data: b64(randomBytes(80)), vector: unitVector(0.4), namespace: "family" });
    expect((await ok(u, "/api/forget", { namespace: "family" })).deleted).toBe(3);

    // Default restore: what was forgotten stays forgotten.
    const quiet = await ok(u, "/api/restore", { namespace: "family" }, { session: true });
    expect(quiet).toEqual({ restored: 0, skipped: 3, total: 3, namespace: "family", owner: u.id.owner, truncated: false, forgotten: 3, failed: 0 });
    expect((await u.client.recall("sister", { namespace: "family" })).total).toBe(0);

    // Memories made after the forget are indexed, not restored; the forgotten ones still stay out.
    await remember(u, ["Ines has a new job"], "family");
    const after = await ok(u, "/api/restore", { namespace: "family" }, { session: true });
    expect(after).toMatchObject({ restored: 0, skipped: 4, total: 4, forgotten: 3, truncated: false });

    // Asked explicitly: the forgotten blobs come back (the client-encrypted manual one cannot be re-embedded).
    const back = await ok(u, "/api/restore", { namespace: "family", include_forgotten: true }, { session: true });
    expect(back).toMatchObject({ restored: 2, skipped: 1, failed: 1, total: 4, forgotten: 0, truncated: false });
    expect(texts(await u.client.recall("Ines", { namespace: "family" }))).toEqual(["Ines has a new job", "Ines lives in Berlin", "My sister is called Ines"]);
    const again = await ok(u, "/api/restore", { namespace: "family", include_forgotten: true }, { session: true });
    expect(again).toMatchObject({ restored: 0, skipped: 3, failed: 1 });
  });

  it("re-indexes lost rows newest first, bounded by limit, and reports truncated", async () => {
    const u = await newUser();
    await remember(u, ["first: the boat is blue", "second: the boat is called Aurora", "third: the boat sleeps four"], "boat");
    await dropRows(u.id.owner, "boat");
    const one = await ok(u, "/api/restore", { namespace: "boat", limit: 1 }, { session: true });
    expect(one).toMatchObject({ restored: 1, skipped: 0, total: 1, truncated: true, namespace: "boat", owner: u.id.owner });
    expect(texts(await u.client.recall("boat", { namespace: "boat" }))).toEqual(["third: the boat sleeps four"]);
    const rest = await ok(u, "/api/restore", { namespace: "boat" }, { session: true });
    expect(rest).toMatchObject({ restored: 2, skipped: 1, total: 3, truncated: false });
    expect(await ok(u, "/api/stats", { namespace: "boat" })).toMatchObject({ memory_count: 3 });
    // Restored rows carry keyed term hashes like remembered ones, so hybrid recall ranks them lexically too.
    const lexicalDocs = async () =>
      Number((await t.stack.db.query("SELECT count(*) AS n FROM lexical_docs d JOIN memories m ON m.id = d.memory_id WHERE m.owner = $1 AND m.namespace = 'boat'", [u.id.owner])).rows[0].n);
    await until(async () => (await lexicalDocs()) === 3, 10_000, "the lexical index");
    const r = await u.client.recall("what is the boat called?", { namespace: "boat", limit: 3 });
    expect(texts(r)).toEqual(["first: the boat is blue", "second: the boat is called Aurora", "third: the boat sleeps four"]);
  });

  it("reports truncated with total 0 when the per-owner candidate cap is spent on other namespaces", async () => {
    const u = await newUser();
    await remember(u, ["an old note"], "old");
    await remember(u, Array.from({ length: 6 }, (_, i) => `newer note ${i}`), "new");
    await dropRows(u.id.owner, "old");
    // The cap (6 here) holds the owner's newest blob objects, all in "new": "old" has no candidate at all.
    const r = await ok(u, "/api/restore", { namespace: "old", limit: 100 }, { session: true });
    expect(r).toEqual({ restored: 0, skipped: 0, total: 0, namespace: "old", owner: u.id.owner, truncated: true, forgotten: 0, failed: 0 });
    expect(await ok(u, "/api/restore", { namespace: "new" }, { session: true })).toMatchObject({ restored: 0, skipped: 6, total: 6, truncated: true });
  });

  it("answers a valid zero for an empty or unknown namespace, even without a decrypt credential", async () => {
    const u = await newUser();
    expect(await ok(u, "/api/restore", { namespace: "never-used" })).toEqual({ restored: 0, skipped: 0, total: 0, namespace: "never-used", owner: u.id.owner, truncated: false, forgotten: 0, failed: 0 });
    expect(await ok(u, "/api/restore", "")).toMatchObject({ total: 0, namespace: "default" });
  });

  it("needs a decrypt credential when something must be re-embedded", async () => {
    const u = await newUser();
    await remember(u, ["needs a key"], "keyed");
    await dropRows(u.id.owner, "keyed");
    const r = await post(u, "/api/restore", { namespace: "keyed" });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/x-encryption-session/);
  });

  it.each([
    ["zero", 0],
    ["negative", -3],
    ["fractional", 1.5],
    ["a string", "5"],
    ["a boolean", true],
  ])("limit %s → 400", async (_name, limit) => {
    const u = await newUser();
    const r = await post(u, "/api/restore", { namespace: "x", limit }, { session: true });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/limit/);
  });

  it("clamps a limit above the upper bound (500) and refuses other bad bodies", async () => {
    const u = await newUser();
    expect((await post(u, "/api/restore", { limit: 1_000_000 }, { session: true })).status).toBe(200);
    expect((await post(u, "/api/restore", { include_forgotten: "yes" })).status).toBe(400);
    expect((await post(u, "/api/restore", "[1]")).status).toBe(400);
  });

  it("is rate limited per owner: the 11th restore in a minute is a 429 with Retry-After", async () => {
    const [u, other] = [await newUser(), await newUser()];
    for (let i = 0; i < 10; i++) expect((await post(u, "/api/restore", { namespace: "rl" })).status).toBe(200);
    const r = await post(u, "/api/restore", { namespace: "rl" });
    expect(r.status).toBe(429);
    expect(Number(r.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(Number(r.headers["retry-after"])).toBeLessThanOrEqual(60);
    expect(r.body).toEqual({ error: expect.any(String), layer: "restore_owner", limit: "10 requests/minute", retry_after_seconds: Number(r.headers["retry-after"]) });
    // Another owner has its own window.
    expect((await post(other, "/api/restore", { namespace: "rl" })).status).toBe(200);
  });

  it("replay of the event log rebuilds the same rows after manual, forget and restore", async () => {
    const u = await newUser();
    await remember(u, ["replayed one", "replayed two"], "replay");
    await ok(u, "/api/remember/manual", { encrypted_data: b64(randomBytes(40)), vector: unitVector(0.5), namespace: "replay" });
    await ok(u, "/api/forget", { namespace: "replay" });
    await remember(u, ["replayed three, after the forget"], "replay");
    // Newest first: "three" is indexed, the manual blob cannot be re-embedded (it uses up one of the 2), "two" comes back.
    expect(await ok(u, "/api/restore", { namespace: "replay", include_forgotten: true, limit: 2 }, { session: true })).toMatchObject({ restored: 1, failed: 1, skipped: 1, truncated: true });
    await remember(u, ["kept elsewhere"], "replay-other");
    await settled();
    const snapshot = async () => ({
      rows: (await t.stack.db.query("SELECT id, blob_id, namespace, vector::text AS v, created_at, importance, size FROM memories WHERE owner = $1 ORDER BY id", [u.id.owner])).rows,
      horizons: (await t.stack.db.query("SELECT namespace, horizon FROM memory_forget_horizons WHERE owner = $1", [u.id.owner])).rows,
    });
    const before = await snapshot();
    expect(before.rows.length).toBe(3); // "three", the restored "two", "kept elsewhere"
    expect(before.horizons.length).toBe(1);
    const cp = await readCheckpoint(t.stack.db, MEMORY_INDEX);
    const runner = t.stack.relayer.projections.find((p) => p.projection.name === MEMORY_INDEX)!;
    await resetProjection(t.stack.db, runner.projection);
    const reset = await snapshot();
    expect(reset.rows.length).toBe(0);
    // Forget horizons only move forward and survive a rebuild (even from another log): forgotten stays forgotten.
    expect(reset.horizons).toEqual(before.horizons);
    await until(async () => (await readCheckpoint(t.stack.db, MEMORY_INDEX)) >= cp, 60_000, "the replay");
    expect(await snapshot()).toEqual(before);
  }, 90_000);
});

describe("operator restore command", () => {
  it("rebuilds a namespace from chain blobs with the owner's key; dry runs decrypt nothing", async () => {
    const u = await newUser();
    await remember(u, ["the garage code is 1234", "the garage is behind the house"], "garage");
    await dropRows(u.id.owner, "garage");
    const dir = mkdtempSync(join(tmpdir(), "memrelay-restore-"));
    try {
      const path = join(dir, "credentials.json");
      writeCredentials({
        delegatePrivateKey: Buffer.from(u.id.delegateSecretKey).toString("hex"),
        delegatePublicKeyHex: u.id.delegatePublicKeyHex,
        delegateAddress: u.id.delegateAddress,
        walletAddress: u.id.owner,
        accountId: u.id.accountId,
        packageId: t.stack.encryptionStack.packageId,
        relayerUrl: t.stack.relayerUrl,
        label: "test",
        createdAt: new Date().toISOString(),
        version: 1,
      }, path);
      const env = { ...t.stack.workerEnv, MEMORY_CREDENTIALS_FILE: join(dir, "none.json") };
      const log = vi.spyOn(console, "log").mockImplementation(() => undefined);
      const err = vi.spyOn(console, "error").mockImplementation(() => undefined);
      try {
        expect(await restoreCommand(["--owner", u.id.owner.toUpperCase().replace("0X", "0x"), "--namespace", "garage", "--dry-run"], env)).toBe(0);
        expect(log.mock.calls.flat().join("\n")).toMatch(/garage: 2 blob objects on chain, 0 indexed, 0 forgotten, 2 missing/);
        expect((await ok(u, "/api/stats", { namespace: "garage" })).memory_count).toBe(0);
        // Without a key of that owner nothing is decrypted.
        expect(await restoreCommand(["--owner", u.id.owner, "--namespace", "garage"], env)).toBe(1);
        const stranger = (await newUser()).id.owner;
        expect(await restoreCommand(["--owner", stranger, "--namespace", "garage", "--credentials", path], env)).toBe(0); // nothing missing there
        expect(await restoreCommand(["--owner", u.id.owner, "--namespace", "garage", "--credentials", path], env)).toBe(0);
        expect(await restoreCommand(["--owner", "0x1234", "--namespace", "garage"], env)).toBe(2);
      } finally {
        log.mockRestore();
        err.mockRestore();
      }
      expect(texts(await u.client.recall("garage", { namespace: "garage" }))).toEqual(["the garage code is 1234", "the garage is behind the house"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe("GET /api/accounts/{owner}/exists", () => {
  const exists = async (owner: string, ip: string, headers: Record<string, string> = {}) => {
    const res = await request(`${t.stack.relayerUrl}/api/accounts/${owner}/exists`, { headers: { "x-forwarded-for": ip, ...headers } });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };

  it("is true for any account ever created (also deactivated), false otherwise, whatever the case", async () => {
    const u = await newUser();
    expect(await exists(u.id.owner, "198.51.100.1")).toMatchObject({ status: 200, body: { exists: true } });
    expect((await exists("0x" + u.id.owner.slice(2).toUpperCase(), "198.51.100.1")).body).toEqual({ exists: true });
    expect((await exists("0X" + u.id.owner.slice(2), "198.51.100.1")).body).toEqual({ exists: true });
    expect((await exists("0x" + "ab".repeat(32), "198.51.100.1")).body).toEqual({ exists: false });
    // The delegate's own address is not an account owner.
    expect((await exists(u.id.delegateAddress, "198.51.100.1")).body).toEqual({ exists: false });
    await deactivate(t.stack.chain, { signerKey: u.id.ownerSecretKey, accountId: u.id.accountId });
    expect((await exists(u.id.owner, "198.51.100.1")).body).toEqual({ exists: true });
  });

  it("answers 400 to a malformed address without looking anything up", async () => {
    const spy = vi.spyOn(t.stack.chain, "accountExists");
    try {
      for (const bad of ["0x1234", "ab".repeat(32), "0x" + "g".repeat(64), "0x" + "a".repeat(65), "0x" + "a".repeat(63), "%zz", "0x%20" + "a".repeat(62)]) {
        const r = await exists(bad, "198.51.100.2");
        expect(r.status, bad).toBe(400);
        expect(typeof r.body.error).toBe("string");
      }
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  it("follows the origin allow-list for browsers", async () => {
    const owner = "0x" + "cd".repeat(32);
    const allowed = await exists(owner, "198.51.100.3", { origin: ORIGIN });
    expect(allowed.status).toBe(200);
    expect(allowed.headers["access-control-allow-origin"]).toBe(ORIGIN);
    const denied = await exists(owner, "198.51.100.3", { origin: "https://evil.example" });
    expect(denied.status).toBe(403);
    expect(denied.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("limits 20 per minute per client IP, taken from the right of X-Forwarded-For, with 429 and Retry-After", async () => {
    const owner = "0x" + "ef".repeat(32);
    for (let i = 0; i < 20; i++) {
      // Client-supplied entries to the left of the trusted one change nothing.
      expect((await exists(owner, `10.9.${i}.1, 203.0.113.7`)).status).toBe(200);
    }
    const r = await exists(owner, "203.0.113.7");
    expect(r.status).toBe(429);
    expect(r.body).toEqual({ error: expect.any(String), layer: "exists_ip_minute", limit: "20 requests/minute", retry_after_seconds: Number(r.headers["retry-after"]) });
    expect(Number(r.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect((await exists(owner, "spoofed, 203.0.113.7")).status).toBe(429);
    // Malformed requests count too, and another client is not affected.
    expect((await exists("0x12", "203.0.113.7")).status).toBe(429);
    expect((await exists(owner, "203.0.113.8")).status).toBe(200);
  });

  it("has a deployment-wide cap across client IPs", async () => {
    const owner = "0x" + "aa".repeat(32);
    let refused: Res | undefined;
    for (let i = 0; i < 80 && !refused; i++) {
      const r = await exists(owner, `192.0.2.${i}`);
      if (r.status === 429) refused = r;
      else expect(r.status).toBe(200);
    }
    expect(refused?.body).toMatchObject({ layer: "exists_global", limit: "60 requests/minute" });
    expect(Number(refused!.headers["retry-after"])).toBeGreaterThanOrEqual(1);
  });
});

describe("shared rate limiter (Postgres)", () => {
  const limiter = () => new PgRateLimiter(t.stack.db);
  const MIN = 60_000, HOUR = 3_600_000;

  it("holds 20 per minute and 120 per hour on one key, and refuses without recording", async () => {
    const rl = limiter();
    const key = `test:${randomUUID()}`;
    const limits = [
      { layer: "minute", key, limit: 20, windowMs: MIN },
      { layer: "hour", key, limit: 120, windowMs: HOUR },
    ];
    const t0 = 1_800_000_000_000;
    for (let m = 0; m < 6; m++) {
      for (let i = 0; i < 20; i++) expect((await rl.take(limits, t0 + m * MIN + i)).allowed).toBe(true);
      const over = await rl.take(limits, t0 + m * MIN + 500);
      // Refused by the limit that takes longest to admit again: the minute, until the hour is full as well.
      expect(over).toMatchObject({ allowed: false, layer: m < 5 ? "minute" : "hour" });
    }
    const hour = await rl.take(limits, t0 + 6 * MIN + 1_000);
    expect(hour).toMatchObject({ allowed: false, layer: "hour", limit: 120 });
    // The first minute's requests leave the hour window after an hour: allowed again then, not before.
    expect(hour.allowed === false && hour.retryAfterSeconds).toBeGreaterThan(3_000);
    expect((await rl.take(limits, t0 + HOUR - 2 * MIN)).allowed).toBe(false);
    expect((await rl.take(limits, t0 + HOUR + MIN)).allowed).toBe(true);
  });

  it("slides: a full window admits again as its oldest slots leave", async () => {
    const rl = limiter();
    const l = [{ layer: "x", key: `test:${randomUUID()}`, limit: 3, windowMs: MIN }];
    const t0 = 1_800_000_000_000;
    for (const dt of [0, 20_000, 40_000]) expect((await rl.take(l, t0 + dt)).allowed).toBe(true);
    const refused = await rl.take(l, t0 + 50_000);
    expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 10 });
    expect((await rl.take(l, t0 + 60_500)).allowed).toBe(true);
    expect((await rl.take(l, t0 + 61_000)).allowed).toBe(false);
  });

  it("is exact under concurrency and all-or-nothing across limits", async () => {
    const rl = limiter();
    const key = `test:${randomUUID()}`;
    const results = await Promise.all(Array.from({ length: 25 }, () => rl.take([{ layer: "c", key, limit: 10, windowMs: MIN }])));
    expect(results.filter((r) => r.allowed).length).toBe(10);
    const a = `test:${randomUUID()}`, b = `test:${randomUUID()}`;
    const now = Date.now();
    expect((await rl.take([{ layer: "b", key: b, limit: 1, windowMs: MIN }], now)).allowed).toBe(true);
    // Refused by b: a records nothing either.
    expect((await rl.take([{ layer: "a", key: a, limit: 1, windowMs: MIN }, { layer: "b", key: b, limit: 1, windowMs: MIN }], now)).allowed).toBe(false);
    expect((await rl.take([{ layer: "a", key: a, limit: 1, windowMs: MIN }], now)).allowed).toBe(true);
    // A limit of 0 is off.
    expect((await rl.take([{ layer: "z", key: a, limit: 0, windowMs: MIN }], now)).allowed).toBe(true);
  });
});

describe("client address per TRUSTED_PROXY_HOPS", () => {
  const req = (remoteAddress: string, xff?: string) => ({ remoteAddress, headers: xff === undefined ? {} : { "x-forwarded-for": xff } }) as unknown as Request;

  it("uses the TCP peer with 0 hops, whatever X-Forwarded-For says", () => {
    expect(clientIp(req("10.0.0.5", "198.51.100.7"), 0)).toBe("10.0.0.5");
    expect(clientIp(req("0000:0000:0000:0000:0000:ffff:0a00:0005"), 0)).toBe("10.0.0.5");
  });

  it("takes the N-th entry from the right and falls back to the peer, never to another entry", () => {
    expect(clientIp(req("10.0.0.5", "192.0.2.66, 192.0.2.67, 198.51.100.7"), 1)).toBe("198.51.100.7");
    expect(clientIp(req("10.0.0.5", "192.0.2.66, 198.51.100.7, 10.0.0.9"), 2)).toBe("198.51.100.7");
    expect(clientIp(req("10.0.0.5", "not-an-ip, 198.51.100.7"), 1)).toBe("198.51.100.7");
    expect(clientIp(req("10.0.0.5", "198.51.100.7, also-invalid"), 1)).toBe("10.0.0.5");
    expect(clientIp(req("10.0.0.5", "198.51.100.7"), 2)).toBe("10.0.0.5");
    expect(clientIp(req("10.0.0.5"), 1)).toBe("10.0.0.5");
  });

  it("canonicalises addresses and buckets IPv6 by /64", () => {
    expect(canonicalIp("2001:DB8::1")).toBe("2001:0db8:0000:0000:0000:0000:0000:0001");
    expect(canonicalIp("::ffff:192.0.2.1")).toBe("192.0.2.1");
    expect(canonicalIp("[2001:db8::1]")).toBe(canonicalIp("2001:0db8:0:0::1"));
    expect(canonicalIp("999.1.1.1")).toBeNull();
    expect(ipBucket(canonicalIp("2001:db8:0:1:aaaa::1")!)).toBe(ipBucket(canonicalIp("2001:db8:0:1:bbbb::2")!));
    expect(ipBucket("192.0.2.1")).toBe("192.0.2.1");
  });
});
