// Black-box: restore, with its rate limit, its replay and the operator command, over HTTP against the started stack
// (test/support/relayer-maintenance-suite.ts).
import { describe, expect, it, vi } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { MEMORY_INDEX } from "../projections/relayer/memory-index.ts";
import { readCheckpoint, resetProjection } from "../projections/runtime.ts";
import { writeCredentials } from "../cli/credentials.ts";
import { restoreCommand } from "../cli/restore.ts";
import { b64, newUser, ok, post, remember, settled, t, unitVector, useRelayerMaintenanceSuite } from "./support/relayer-maintenance-suite.ts";

useRelayerMaintenanceSuite();

const texts = (r: { results: { text: string }[] }) => r.results.map((x) => x.text).sort();

async function until(cond: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Loses the index rows of a namespace behind the log's back. */
async function dropRows(owner: string, namespace: string): Promise<void> {
  await settled();
  await t.stack.db.query("DELETE FROM memories WHERE owner = $1 AND namespace = $2", [owner, namespace]);
}

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
