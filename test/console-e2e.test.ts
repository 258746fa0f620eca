// Black-box, end to end (issue 5, "Done when"): the developer console as `memrelay start` composes it (the local
// stack: NATS JetStream, Postgres, the local ledger, the blob store, the console). Keys are minted with the operator
// command; everything else is HTTP against the console: list spaces, reserve a private bucket, sign its bytes with
// the service key, finalize, retry on mirror_missing_grant while the access index lags, upload a client-encrypted
// file, poll its status, list and search files across the space, download the same bytes, grant access through
// sponsorship, delete the file and then the bucket.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { consoleCommand } from "../cli/console.ts";
import { ConsoleApiError, ConsoleClient } from "../client/console-client.ts";
import { ProjectionRunner } from "../projections/runtime.ts";
import { accessIndexProjection } from "../projections/console/access-index.ts";
import { silentLogger } from "../config/logger.ts";

let t: TestStack;
const extraRunners: ProjectionRunner[] = [];

async function cli(...args: string[]): Promise<any> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await consoleCommand([...args, "--json"], { NATS_URL: t.stack.config.natsUrl, DATABASE_URL: t.database.url }, { out: (l) => out.push(l), err: (l) => err.push(l) });
  if (code !== 0) throw new Error(`memrelay console ${args.join(" ")} exited ${code}: ${err.join("\n")}`);
  return JSON.parse(out.join("\n"));
}

/** What a client does before uploading to a private bucket: AES-256-GCM under its own key. */
function encrypt(key: Buffer, plaintext: Buffer): Buffer {
  const iv = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([c.update(plaintext), c.final()]);
  return Buffer.concat([iv, body, c.getAuthTag()]);
}
function decrypt(key: Buffer, blob: Buffer): Buffer {
  const d = createDecipheriv("aes-256-gcm", key, blob.subarray(0, 12));
  d.setAuthTag(blob.subarray(blob.length - 16));
  return Buffer.concat([d.update(blob.subarray(12, blob.length - 16)), d.final()]);
}

beforeAll(async () => {
  t = await startTestStack();
}, 180_000);
afterAll(async () => {
  for (const r of extraRunners) await r.stop();
  await t?.teardown();
});

describe("developer console, end to end", () => {
  it("walks keys → spaces → private bucket handshake → encrypted upload → search → download → sponsorship → deletes", async () => {
    const base = t.stack.consoleUrl;
    // ---- operator: users, a team space, keys
    const alice = await cli("signup", "--email", "alice@example.com", "--name", "Alice");
    const bob = await cli("signup", "--email", "bob@example.com", "--name", "Bob");
    const team = await cli("space", "create", "--owner", alice.user_id, "--name", "Research", "--tier", "pro");
    await cli("member", "add", "--space", team.space_id, "--user", bob.user_id, "--role", "member");
    const aliceRw = await cli("key", "mint", "--user", alice.user_id, "--role", "read_write", "--label", "laptop");
    const aliceRo = await cli("key", "mint", "--user", alice.user_id, "--role", "read_only");
    const bobRw = await cli("key", "mint", "--user", bob.user_id, "--role", "read_write");
    expect(aliceRw.secret).toMatch(/^mrc_[0-9a-f]{64}$/);
    expect(aliceRw.service_key.secret_key).toMatch(/^suiprivkey1/);
    expect(Ed25519Keypair.fromSecretKey(aliceRw.service_key.secret_key).getPublicKey().toSuiAddress()).toBe(aliceRw.service_key.address);
    expect(aliceRo.service_key).toBeUndefined();

    const a = new ConsoleClient(base, aliceRw.secret);
    const ro = new ConsoleClient(base, aliceRo.secret);
    const b = new ConsoleClient(base, bobRw.secret);
    try {
      // ---- spaces
      const spaces = await a.spaces();
      expect(spaces.map((s) => s.type).sort()).toEqual(["personal", "team"]);
      expect(spaces.find((s) => s.type === "team")).toMatchObject({ id: team.space_id, name: "Research", role: "owner", member_count: 2, bucket_count: 0 });
      expect(await a.spaces("team")).toHaveLength(1);
      expect((await b.spaces("team"))[0]).toMatchObject({ id: team.space_id, role: "member" });

      // ---- reserve, sign with the service key, finalize
      const reserved = await a.reserveBucket(team.space_id, "Lab Notes");
      expect(reserved).toMatchObject({ state: "pending_policy" });
      expect(reserved.digest).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,64}$/);
      expect((await a.bucket(reserved.bucket_id)).state).toBe("pending_policy");
      // uploads wait for finalize
      await expect(a.upload(reserved.bucket_id, { bytes: Buffer.from("early") })).rejects.toMatchObject({ status: 409, code: "bucket_not_finalized" });

      // Pause the access index: right after finalize, the grant exists on chain but is not mirrored yet.
      await t.stack.console.runners.access!.stop();
      const signer = Ed25519Keypair.fromSecretKey(aliceRw.service_key.secret_key);
      const { signature } = await signer.signTransaction(Uint8Array.from(Buffer.from(reserved.bytes, "base64")));
      const finalized = await a.finalize(reserved.bucket_id, signature);
      expect(finalized).toMatchObject({ bucket_id: reserved.bucket_id, state: "active" });
      expect(finalized.encryption_policy_id).toMatch(/^0x[0-9a-f]{64}$/);

      // ---- upload a client-encrypted file, retrying on mirror_missing_grant until the index catches up
      const dataKey = randomBytes(32);
      const plaintext = Buffer.from("Field notes, day 1: the samples from site B glow faintly under UV. ".repeat(2_000));
      const ciphertext = encrypt(dataKey, plaintext);
      const retries: string[] = [];
      const accepted = await a.uploadWithRetry(
        reserved.bucket_id,
        () => ({ bytes: ciphertext, filename: "notes-day1.txt.enc", name: "Notes Day 1.enc", metadata: { enc: "aes-256-gcm", day: 1 }, contentType: "application/octet-stream" }),
        {
          everyMs: 100,
          onRetry: () => {
            retries.push("mirror_missing_grant");
            if (retries.length === 1) {
              // resume the access index (a fresh runner continues from its checkpoint)
              const r = new ProjectionRunner(t.stack.log, t.stack.db, accessIndexProjection, silentLogger);
              extraRunners.push(r);
              void r.start();
            }
          },
        },
      );
      expect(retries.length).toBeGreaterThanOrEqual(1);
      expect(accepted).toMatchObject({ name: "Notes Day 1.enc", size: ciphertext.length, is_private: true, status: "uploading", metadata: { enc: "aes-256-gcm", day: 1 } });

      // ---- poll its status
      const seen: string[] = [];
      const stored = await a.waitForUpload(reserved.bucket_id, accepted.id, { everyMs: 10, seen });
      expect(seen.length).toBeGreaterThan(0);
      for (const s of seen) expect(["queued", "active", "completed"]).toContain(s);
      expect(stored).toMatchObject({ id: accepted.id, status: "completed", size: ciphertext.length, blob_id: accepted.blob_id });
      expect(stored.storage_object_id).toMatch(/^wc-[0-9a-f]{32}\/[0-9a-f-]{36}$/);

      // ---- a public bucket in the same space, another file
      const pub = await cli("bucket", "create-public", "--space", team.space_id, "--name", "Shared Media");
      const poster = await a.upload(pub.bucket_id, { bytes: Buffer.from("<svg/>"), filename: "poster.svg", contentType: "image/svg+xml" });
      await a.waitForUpload(pub.bucket_id, poster.id);

      // ---- list and search across the space
      const all = await a.files("spaces", team.space_id);
      expect(all.data.map((f) => f.name).sort()).toEqual(["Notes Day 1.enc", "poster.svg"]);
      expect(all.pagination).toEqual({ limit: 20, hasMore: false, nextCursor: null });
      const found = await a.files("spaces", team.space_id, { q: "NOTES day" });
      expect(found.data.map((f) => f.id)).toEqual([accepted.id]);
      const bySize = await a.files("spaces", team.space_id, { sortField: "size", sortOrder: "asc", limit: 1 });
      expect(bySize.data[0].id).toBe(poster.id);
      expect(bySize.pagination.hasMore).toBe(true);
      const next = await a.files("spaces", team.space_id, { sortField: "size", sortOrder: "asc", limit: 1, cursor: bySize.pagination.nextCursor! });
      expect(next.data[0].id).toBe(accepted.id);
      const buckets = await ro.buckets(team.space_id, { visibility: "private" });
      expect(buckets.buckets.map((x) => x.id)).toEqual([reserved.bucket_id]);
      expect(buckets.next_cursor).toBeNull();

      // ---- download the same bytes (the read-only key may download)
      const dl = await ro.download(reserved.bucket_id, accepted.id);
      expect(dl.status).toBe(200);
      expect(dl.headers["content-type"]).toBe("application/octet-stream");
      expect(String(dl.headers["content-disposition"])).toContain("attachment;");
      expect(dl.raw.equals(ciphertext)).toBe(true);
      expect(decrypt(dataKey, dl.raw).equals(plaintext)).toBe(true);

      // ---- grant access through sponsorship
      await expect(b.download(reserved.bucket_id, accepted.id)).rejects.toMatchObject({ status: 403, code: "bucket_not_in_scope" });
      const group = await a.sponsored({ kind: "bucket_group_create", bucketId: reserved.bucket_id }, aliceRw.service_key.secret_key);
      expect(group.digest).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,64}$/);
      const groupId = group.objectChanges.find((o) => o.objectType.endsWith("::bucket_policy::AccessGroup"))!.objectId;
      const grant = await a.sponsor({ kind: "grant_bucket_access", groupIds: [groupId], recipientAddress: bobRw.service_key.address, scope: "read" });
      const grantSig = (await signer.signTransaction(Uint8Array.from(Buffer.from(grant.bytes, "base64")))).signature;
      const executed = await a.execute(grant.digest, grantSig);
      expect(executed.digest).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,64}$/);
      const chainTx = await t.stack.chain.getTransaction(executed.digest);
      expect(chainTx?.gas_owner).toBe(t.stack.console.sponsorAddress);
      // Bob reads now (after the index mirrors the grant), but a read grant does not let him write.
      let bobDl;
      for (let i = 0; ; i++) {
        try {
          bobDl = await b.download(reserved.bucket_id, accepted.id);
          break;
        } catch (err) {
          if (!(err instanceof ConsoleApiError) || err.code !== "mirror_missing_grant" || i > 100) throw err;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      expect(bobDl.raw.equals(ciphertext)).toBe(true);
      await expect(b.upload(reserved.bucket_id, { bytes: Buffer.from("x"), filename: "bob.bin" })).rejects.toMatchObject({ status: 403, code: "bucket_not_in_scope" });
      // an executed digest answers again with the same on-chain digest; an unknown one is 404
      expect((await a.execute(grant.digest, grantSig)).digest).toBe(executed.digest);
      await expect(a.execute("1".repeat(44), grantSig)).rejects.toMatchObject({ status: 404 });

      // ---- delete the file, then the bucket
      expect((await a.deleteFile(reserved.bucket_id, accepted.id)).status).toBe(204);
      expect((await a.deleteFile(reserved.bucket_id, accepted.id)).status).toBe(204);
      expect(["deleting", "deleted"]).toContain((await a.file(reserved.bucket_id, accepted.id)).status);
      await expect(a.download(reserved.bucket_id, accepted.id)).rejects.toMatchObject({ status: 423 });
      const deadline = Date.now() + 30_000;
      while ((await a.file(reserved.bucket_id, accepted.id)).status !== "deleted" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect((await a.file(reserved.bucket_id, accepted.id)).status).toBe("deleted");
      expect((await a.files("spaces", team.space_id)).data.map((f) => f.id)).toEqual([poster.id]);
      await expect(a.deleteBucket(reserved.bucket_id, false)).rejects.toMatchObject({ status: 400 });
      const gone = await a.deleteBucket(reserved.bucket_id);
      expect(gone.status).toBe(204);
      expect(gone.headers["x-deleted-id"]).toBe(reserved.bucket_id);
      await expect(a.bucket(reserved.bucket_id)).rejects.toMatchObject({ status: 404 });
      expect((await a.spaces("team"))[0].bucket_count).toBe(1);
    } finally {
      await Promise.all([a.close(), ro.close(), b.close()]);
    }
  }, 120_000);
});
