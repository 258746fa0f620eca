// The console API's behaviour and every error row of spec/console.md, over HTTP against a console on its real
// backbone (NATS JetStream, Postgres, the local ledger, the blob store). One stack for the file; each test makes its
// own users, spaces and buckets.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { request } from "undici";
import { createConnection } from "node:net";
import { startConsoleTestStack, type ConsoleTestStack } from "./support/console-testkit.ts";
import { addMember, createTeamSpace, mintKey, revokeKey, signUp, type MintedKey } from "../actors/console/directory.ts";
import { ConsoleApiError, ConsoleClient, multipartBody, signTransactionBytes } from "../client/console-client.ts";
import { ProjectionRunner } from "../projections/runtime.ts";
import { accessIndexProjection } from "../projections/console/read-models.ts";
import { ConsoleActorHost } from "../actors/console/host.ts";
import { uploadActor } from "../actors/console/upload.actor.ts";
import { AGG, EV, type KeyMinted } from "../schemas/console/events.ts";
import { newApiKey } from "../gateway/console/auth.ts";
import { BlobStoreStorage } from "../adapters/file-storage/blobstore-http.ts";
import { Queries } from "../projections/console/queries.ts";
import { parseFileListQuery } from "../schemas/console/http.ts";

let s: ConsoleTestStack;
const cleanups: (() => Promise<void>)[] = [];
const MiB = 1024 * 1024;

const TIERS = {
  free: { buckets: 20, users: 5, storage: 1024 * MiB },
  tiny: { buckets: 1, users: 2, storage: 1_000 },
};

beforeAll(async () => {
  s = await startConsoleTestStack({ limits: { uploadsPerMinute: 30, uploadStatusRetentionMs: 1_500, sponsorTtlMs: 1_500, tiers: TIERS } });
}, 120_000);
afterAll(async () => {
  for (const c of cleanups) await c().catch(() => undefined);
  await s?.teardown();
});

interface User {
  userId: string;
  spaceId: string;
  rw: MintedKey;
  c: ConsoleClient;
}

async function user(opts: { tier?: string; storageCap?: number } = {}): Promise<User> {
  const dir = s.console.directory;
  const u = await signUp(dir, { email: `${randomUUID()}@example.com`, tier: opts.tier, storageCap: opts.storageCap });
  const rw = await mintKey(dir, { userId: u.user.user_id, role: "read_write" });
  const c = new ConsoleClient(s.console.url, rw.secret);
  cleanups.push(() => c.close());
  return { userId: u.user.user_id, spaceId: u.space.space_id, rw, c };
}

async function client(key: MintedKey) {
  const c = new ConsoleClient(s.console.url, key.secret);
  cleanups.push(() => c.close());
  return c;
}

async function privateBucket(u: User, name = `b-${randomUUID().slice(0, 8)}`, spaceId = u.spaceId) {
  const f = await u.c.createPrivateBucket(spaceId, name, u.rw.service_key!.secret_key);
  return f.bucket_id;
}

async function uploadOk(u: User, bucketId: string, input: Parameters<ConsoleClient["upload"]>[1]) {
  const accepted = await u.c.uploadWithRetry(bucketId, () => input, { everyMs: 20 });
  return u.c.waitForUpload(bucketId, accepted.id);
}

async function expectError(p: Promise<unknown>, status: number, code?: string) {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ConsoleApiError);
    const e = err as ConsoleApiError;
    expect({ status: e.status, code: e.code }).toEqual({ status, code: code ?? e.code });
    expect(typeof e.body.error).toBe("string");
    return e;
  }
  throw new Error(`expected ${status} ${code ?? ""}`);
}

const raw = async (method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer | Readable) => {
  const res = await request(s.console.url + path, { method: method as "GET", headers, body });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text && String(res.headers["content-type"]).includes("json") ? JSON.parse(text) : text };
};

/** One request written by hand (a declared length the client never sends), its response read back. */
function rawSocket(text: string): Promise<{ status: number; body: any }> {
  const url = new URL(s.console.url);
  return new Promise((resolve, reject) => {
    const sock = createConnection({ host: url.hostname, port: Number(url.port) }, () => sock.write(text));
    let buf = Buffer.alloc(0);
    sock.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buf.subarray(0, end).toString();
      const len = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (buf.length < end + 4 + len) return;
      sock.destroy();
      resolve({ status: Number(head.split(" ")[1]), body: JSON.parse(buf.subarray(end + 4, end + 4 + len).toString()) });
    });
    sock.on("error", reject);
  });
}

describe("authentication (spec: Authentication, Errors)", () => {
  it("401 unauthorized without a key, with a malformed one and with an unknown one", async () => {
    for (const auth of [undefined, "Basic abc", "Bearer nope", `Bearer ${newApiKey().secret}`]) {
      const r = await raw("GET", "/api/v1/spaces", auth ? { authorization: auth } : {});
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ code: "unauthorized" });
      expect(r.headers["www-authenticate"]).toContain("Bearer");
    }
  });

  it("api_key_registering, api_key_revoking and api_key_revoked: keys not currently usable answer 401", async () => {
    const u = await user();
    // registering: the mint is recorded, its activation not yet
    const key = newApiKey();
    const keyId = randomUUID();
    const minted: KeyMinted = { key_id: keyId, user_id: u.userId, role: "read_only", hash: key.hash, prefix: key.prefix, label: null, space_id: null, service_address: null, created_at: new Date().toISOString() };
    const seq = (await s.console.directory.clog.store.append(`${AGG.key}.${keyId}`, [{ type: EV.keyMinted, version: 1, data: minted }], 0, { causationId: keyId, correlationId: keyId })).seq;
    await s.console.directory.settle(seq);
    expect((await raw("GET", "/api/v1/spaces", { authorization: `Bearer ${key.secret}` })).body).toMatchObject({ code: "api_key_registering" });
    // revoking: the revocation is recorded, its effect not yet
    const seq2 = (await s.console.directory.clog.store.append(`${AGG.key}.${keyId}`, [{ type: EV.keyRevokeRequested, version: 1, data: { requested_at: new Date().toISOString() } }], seq, { causationId: keyId, correlationId: keyId })).seq;
    await s.console.directory.settle(seq2);
    const revoking = await raw("GET", "/api/v1/spaces", { authorization: `Bearer ${key.secret}` });
    expect(revoking.status).toBe(401);
    expect(revoking.body).toMatchObject({ code: "api_key_revoking" });
    // revoked: through the operator action, effective on the next request
    expect((await u.c.spaces()).length).toBe(1);
    expect(await revokeKey(s.console.directory, u.rw.key_id)).toBe("revoked");
    await expectError(u.c.spaces(), 401, "api_key_revoked");
    expect(await revokeKey(s.console.directory, u.rw.key_id)).toBe("already_revoked");
  });

  it("403 read_only_api_key on every write; reads, status and downloads work with a read-only key", async () => {
    const u = await user();
    const bucketId = await privateBucket(u);
    const file = await uploadOk(u, bucketId, { bytes: Buffer.from("ro test"), filename: "ro.txt" });
    const roKey = await mintKey(s.console.directory, { userId: u.userId, role: "read_only" });
    expect(roKey.service_key).toBeUndefined();
    const ro = await client(roKey);
    await expectError(ro.reserveBucket(u.spaceId, "x"), 403, "read_only_api_key");
    await expectError(ro.call("PUT", `/api/v1/buckets/${bucketId}`, { json: { name: "y" } }), 403, "read_only_api_key");
    await expectError(ro.deleteBucket(bucketId), 403, "read_only_api_key");
    await expectError(ro.finalize(bucketId, "AAAA"), 403, "read_only_api_key");
    await expectError(ro.upload(bucketId, { bytes: Buffer.from("x") }), 403, "read_only_api_key");
    await expectError(ro.deleteFile(bucketId, file.id), 403, "read_only_api_key");
    await expectError(ro.sponsor({ kind: "bucket_group_create", bucketId }), 403, "read_only_api_key");
    await expectError(ro.execute("1".repeat(44), "AAAA"), 403, "read_only_api_key");
    expect((await ro.buckets(u.spaceId)).buckets).toHaveLength(1);
    expect((await ro.files("buckets", bucketId)).data).toHaveLength(1);
    expect((await ro.download(bucketId, file.id)).raw.toString()).toBe("ro test");
  });

  it("403 bucket_not_in_scope outside the key's reach; 404 for what does not exist", async () => {
    const alice = await user();
    const bob = await user();
    const bucketId = await privateBucket(alice);
    const file = await uploadOk(alice, bucketId, { bytes: Buffer.from("secret"), filename: "s.bin" });
    await expectError(bob.c.bucket(bucketId), 403, "bucket_not_in_scope");
    await expectError(bob.c.files("buckets", bucketId), 403, "bucket_not_in_scope");
    await expectError(bob.c.buckets(alice.spaceId), 403, "bucket_not_in_scope");
    await expectError(bob.c.files("spaces", alice.spaceId), 403, "bucket_not_in_scope");
    await expectError(bob.c.download(bucketId, file.id), 403, "bucket_not_in_scope");
    await expectError(bob.c.upload(bucketId, { bytes: Buffer.from("x") }), 403, "bucket_not_in_scope");
    await expectError(bob.c.deleteFile(bucketId, file.id), 403, "bucket_not_in_scope");
    await expectError(bob.c.sponsor({ kind: "bucket_group_create", bucketId }), 403, "bucket_not_in_scope");
    // a key limited to one space reaches nothing else, even of its own user
    const team = await createTeamSpace(s.console.directory, { ownerUserId: alice.userId, name: "team" });
    const limited = await client(await mintKey(s.console.directory, { userId: alice.userId, role: "read_only", spaceId: team.space_id }));
    expect((await limited.spaces()).map((x) => x.id)).toEqual([team.space_id]);
    await expectError(limited.bucket(bucketId), 403, "bucket_not_in_scope");
    await expectError(limited.files("spaces", alice.spaceId), 403, "bucket_not_in_scope");
    await expectError(alice.c.bucket(randomUUID()), 404, "not_found");
    await expectError(alice.c.bucket("not-a-uuid"), 404, "not_found");
    await expectError(alice.c.file(bucketId, randomUUID()), 404, "not_found");
    await expectError(alice.c.buckets(randomUUID()), 404, "not_found");
  });
});

describe("private buckets (spec: States, private bucket)", () => {
  it("reserve → 201 pending_policy with real transaction bytes; a wrong signature is refused; finalize → active with the policy id", async () => {
    const u = await user();
    const r = await u.c.reserveBucket(u.spaceId, "vault");
    expect(r.state).toBe("pending_policy");
    const body = JSON.parse(Buffer.from(r.bytes, "base64").toString());
    expect(body).toMatchObject({ kind: "bucket_policy_create", sender: u.rw.service_key!.address, gas_owner: s.console.sponsorAddress, args: { bucket_id: r.bucket_id, space_id: u.spaceId } });
    // another key's signature, or a signature of other bytes, is not a signature over the reserved bytes
    const other = await mintKey(s.console.directory, { userId: u.userId, role: "read_write" });
    await expectError(u.c.finalize(r.bucket_id, await signTransactionBytes(r.bytes, other.service_key!.secret_key)), 400, "bad_request");
    const tampered = Buffer.from(JSON.stringify({ ...body, nonce: "00" })).toString("base64");
    await expectError(u.c.finalize(r.bucket_id, await signTransactionBytes(tampered, u.rw.service_key!.secret_key)), 400, "bad_request");
    await expectError(u.c.finalize(r.bucket_id, "not base64!"), 400, "bad_request");
    expect((await u.c.bucket(r.bucket_id)).state).toBe("pending_policy");
    const f = await u.c.finalize(r.bucket_id, await signTransactionBytes(r.bytes, u.rw.service_key!.secret_key));
    expect(f).toMatchObject({ bucket_id: r.bucket_id, state: "active" });
    const policy = await s.chain.getObject(f.encryption_policy_id);
    expect(policy?.type).toMatch(/::bucket_policy::BucketPolicy$/);
    expect((policy!.fields as { admins: string[] }).admins).toEqual([u.rw.service_key!.address]);
    // the sponsor paid the gas
    const tx = await s.chain.getTransaction(policy!.previous_transaction);
    expect(tx?.gas_owner).toBe(s.console.sponsorAddress);
    // finalize again: idempotent
    expect(await u.c.finalize(r.bucket_id, "AAAA")).toMatchObject({ state: "active", encryption_policy_id: f.encryption_policy_id });
    expect((await u.c.bucket(r.bucket_id))).toMatchObject({ visibility: "private", state: "active", encryption_policy_id: f.encryption_policy_id, name: "vault" });
  });

  it("409 bucket_not_finalized on uploads before finalize", async () => {
    const u = await user();
    const r = await u.c.reserveBucket(u.spaceId, "early");
    await expectError(u.c.upload(r.bucket_id, { bytes: Buffer.from("x"), filename: "x" }), 409, "bucket_not_finalized");
  });

  it("403 mirror_missing_grant while the access index has not mirrored the grant, then the upload goes through", async () => {
    const u = await user();
    const r = await u.c.reserveBucket(u.spaceId, "lagging");
    await s.console.runners.access!.stop();
    let resumed: ProjectionRunner | undefined;
    try {
      await u.c.finalize(r.bucket_id, await signTransactionBytes(r.bytes, u.rw.service_key!.secret_key));
      const e = await expectError(u.c.upload(r.bucket_id, { bytes: Buffer.from("x"), filename: "x" }), 403, "mirror_missing_grant");
      expect(e.headers["retry-after"]).toBeDefined();
    } finally {
      resumed = new ProjectionRunner(s.log, s.db, accessIndexProjection, s.logger);
      await resumed.start();
      (s.console.runners as { access?: ProjectionRunner }).access = resumed;
      cleanups.push(() => resumed!.stop());
    }
    const accepted = await u.c.uploadWithRetry(r.bucket_id, () => ({ bytes: Buffer.from("x"), filename: "x" }), { everyMs: 20 });
    expect(accepted.status).toBe("uploading");
  });

  it("PUT renames (409 on conflict), sets and clears the policy id; 403 on a visibility change", async () => {
    const u = await user();
    const a = await privateBucket(u, "Alpha");
    await privateBucket(u, "Beta");
    await expectError(u.c.call("PUT", `/api/v1/buckets/${a}`, { json: { name: "Alpha", visibility: "public" } }), 403, "visibility_immutable");
    await expectError(u.c.call("PUT", `/api/v1/buckets/${a}`, { json: { name: "beta" } }), 409);
    await expectError(u.c.call("PUT", `/api/v1/buckets/${a}`, { json: {} }), 400, "bad_request");
    await expectError(u.c.call("PUT", `/api/v1/buckets/${a}`, { json: { name: "x".repeat(101) } }), 400, "bad_request");
    await expectError(u.c.call("PUT", `/api/v1/buckets/${a}`, { json: { name: "Alpha", encryptionPolicyId: "0x" + "0".repeat(64) } }), 400, "bad_request");
    const renamed = await u.c.call("PUT", `/api/v1/buckets/${a}`, { json: { name: "Gamma", visibility: "private" } });
    expect(renamed.body).toMatchObject({ id: a, name: "Gamma", visibility: "private" });
    expect(typeof renamed.body.updated_at).toBe("string");
    // the old name is free again
    await privateBucket(u, "alpha");
    const policy = (await u.c.bucket(a)).encryption_policy_id;
    await u.c.call("PUT", `/api/v1/buckets/${a}`, { json: { name: "Gamma", encryptionPolicyId: null } });
    expect((await u.c.bucket(a)).encryption_policy_id).toBeNull();
    await expectError(u.c.upload(a, { bytes: Buffer.from("x"), filename: "x" }), 409, "bucket_not_finalized");
    await u.c.call("PUT", `/api/v1/buckets/${a}`, { json: { name: "Gamma", sealPolicyId: policy } });
    expect((await u.c.bucket(a)).encryption_policy_id).toBe(policy);
    await uploadOk(u, a, { bytes: Buffer.from("x"), filename: "x" });
  });

  it("409 on a bucket name conflict (case-insensitive) and 422 PLAN_LIMIT_EXCEEDED past the plan's buckets", async () => {
    const u = await user();
    await privateBucket(u, "Photos");
    await expectError(u.c.reserveBucket(u.spaceId, "photos"), 409);
    const tiny = await user({ tier: "tiny" });
    await privateBucket(tiny, "one");
    const e = await expectError(tiny.c.reserveBucket(tiny.spaceId, "two"), 422, "PLAN_LIMIT_EXCEEDED");
    expect(e.body).toMatchObject({ limit: "buckets", currentTier: "tiny" });
    // the users dimension, on adding members
    const team = await createTeamSpace(s.console.directory, { ownerUserId: tiny.userId, name: "tiny team", tier: "tiny" });
    await addMember(s.console.directory, { spaceId: team.space_id, userId: u.userId });
    const other = await user();
    await expect(addMember(s.console.directory, { spaceId: team.space_id, userId: other.userId })).rejects.toMatchObject({ status: 422, code: "PLAN_LIMIT_EXCEEDED", extra: { limit: "users", currentTier: "tiny" } });
  });

  it("400 bad_request on invalid bucket bodies and scopes", async () => {
    const u = await user();
    await expectError(u.c.call("POST", `/api/v1/spaces/${u.spaceId}/buckets`, { json: { name: "", scope: "private" } }), 400, "bad_request");
    await expectError(u.c.call("POST", `/api/v1/spaces/${u.spaceId}/buckets`, { json: { name: "x".repeat(101), scope: "private" } }), 400, "bad_request");
    await expectError(u.c.call("POST", `/api/v1/spaces/${u.spaceId}/buckets`, { json: { name: "ok", scope: "public" } }), 400, "bad_request");
    await expectError(u.c.call("POST", `/api/v1/spaces/${u.spaceId}/buckets`, { json: { name: 42, scope: "private" } }), 400, "bad_request");
    await expectError(u.c.call("POST", `/api/v1/spaces/${u.spaceId}/buckets`, { body: "{not json", headers: { "content-type": "application/json" } }), 400, "bad_request");
    expect((await u.c.reserveBucket(u.spaceId, "x".repeat(100))).state).toBe("pending_policy");
  });
});

describe("files (spec: Endpoints, States: upload and file, Limits)", () => {
  it("upload → 202 summary → status queued/active/completed with progress → 404 once the job left the queue; the file gives the final status", async () => {
    const u = await user();
    const b = await privateBucket(u);
    const accepted = await u.c.uploadWithRetry(b, () => ({ bytes: Buffer.from("payload"), filename: "p.txt", contentType: "text/plain", metadata: { a: [1, 2] } }), { everyMs: 20 });
    expect(accepted).toMatchObject({ bucket_id: b, name: "p.txt", size: 7, mime_type: "text/plain", status: "uploading", is_private: true, metadata: { a: [1, 2] } });
    expect(accepted.blob_id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const first = await u.c.status(b, accepted.id);
    expect(first.status).toBe(200);
    expect(["queued", "active", "completed"]).toContain(first.body.data.state);
    const done = await u.c.waitForUpload(b, accepted.id);
    expect(done.status).toBe("completed");
    const st = await u.c.status(b, accepted.id);
    expect(st.body.data).toEqual({ state: "completed", progress: 1 });
    // a finished job keeps no actor snapshot (its status is read from the log and the read model)
    const snap = await s.log.snapshots.get(`${AGG.upload}.${accepted.id}`);
    expect(snap?.value?.length ?? 0).toBe(0);
    expect(done.storage_object_id).toBe(`${(await u.c.bucket(b)).storage_bucket_name}/${accepted.id}`);
    await new Promise((r) => setTimeout(r, 1_600)); // the status retention window of this stack
    const left = await u.c.status(b, accepted.id);
    expect(left.status).toBe(404);
    expect((await u.c.file(b, accepted.id)).status).toBe("completed");
    await expectError(u.c.call("GET", `/api/v1/buckets/${b}/files/${randomUUID()}/status`), 404);
  });

  it("a failed upload reports failed with data.error {code, message}; its bytes are removed and its name freed", async () => {
    const u = await user();
    const b = await privateBucket(u);
    await uploadOk(u, b, { bytes: Buffer.from("warm"), filename: "warm" });
    // hold the upload job on the queue, take its bytes away, then let it run
    const host = s.console.hosts.find((h) => h.consumerName.endsWith("console_upload"))!;
    await host.stop();
    const accepted = await u.c.upload(b, { bytes: Buffer.from("will vanish"), filename: "gone.bin" });
    expect((await u.c.status(b, accepted.id)).body.data.state).toBe("queued");
    const storage = new BlobStoreStorage(s.storage);
    const row = await u.c.file(b, accepted.id);
    expect(row.status).toBe("uploading");
    const bucket = await u.c.bucket(b);
    expect(await storage.remove(bucket.storage_bucket_name, accepted.id)).toBe(true);
    const again = new ConsoleActorHost(s.log, uploadActor(s.console.actorPorts), s.logger, { concurrency: 4 });
    await again.start();
    cleanups.push(() => again.stop(), () => storage.close());
    const final = await u.c.waitForUpload(b, accepted.id);
    expect(final.status).toBe("failed");
    const st = await u.c.status(b, accepted.id);
    expect(st.body.data).toMatchObject({ state: "failed", error: { code: "blob_missing" } });
    expect(typeof st.body.data.error.message).toBe("string");
    await expectError(u.c.download(b, accepted.id), 409);
    // a failed file is deleted at once; its name can be used again
    expect((await u.c.deleteFile(b, accepted.id)).status).toBe(204);
    expect((await u.c.file(b, accepted.id)).status).toBe("deleted");
    await uploadOk(u, b, { bytes: Buffer.from("back"), filename: "gone.bin" });
  });

  it("409 on a duplicate file name; the name is free again once the file is deleted", async () => {
    const u = await user();
    const b = await privateBucket(u);
    const f = await uploadOk(u, b, { bytes: Buffer.from("1"), filename: "Report.pdf" });
    await expectError(u.c.upload(b, { bytes: Buffer.from("2"), filename: "report.PDF" }), 409);
    await expectError(u.c.upload(b, { bytes: Buffer.from("2"), filename: "x", name: "REPORT.pdf" }), 409);
    expect((await u.c.files("buckets", b)).data).toHaveLength(1);
    // a name field after the file part decides the name (the filename's early claim is given back)
    const late = (filename: string, name: string) =>
      `--B\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\nlate\r\n` +
      `--B\r\nContent-Disposition: form-data; name="name"\r\n\r\n${name}\r\n--B--\r\n`;
    const post = (body: string) => u.c.call("POST", `/api/v1/buckets/${b}/files`, { body, headers: { "content-type": "multipart/form-data; boundary=B" } });
    const renamed = (await post(late("Report.pdf", "second.txt"))).body.data;
    expect(renamed).toMatchObject({ name: "second.txt", mime_type: "text/plain", size: 4 });
    await expectError(post(late("fresh.txt", "report.pdf")), 409);
    await u.c.waitForUpload(b, renamed.id);
    await uploadOk(u, b, { bytes: Buffer.from("3"), filename: "fresh.txt" });
    await u.c.deleteFile(b, f.id);
    const deadline = Date.now() + 20_000;
    while ((await u.c.file(b, f.id)).status !== "deleted" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await uploadOk(u, b, { bytes: Buffer.from("3"), filename: "Report.pdf" });
  });

  it("400 bad_request on invalid uploads: no file, not multipart, name over 255, metadata over 8 KiB or not an object", async () => {
    const u = await user();
    const b = await privateBucket(u);
    await uploadOk(u, b, { bytes: Buffer.from("warm"), filename: "w" });
    await expectError(u.c.upload(b, { bytes: Buffer.from("x"), filename: "x", name: "n".repeat(256) }), 400, "bad_request");
    await expectError(u.c.upload(b, { bytes: Buffer.from("x"), filename: "x", metadata: { big: "m".repeat(8 * 1024) } }), 400, "bad_request");
    await expectError(u.c.upload(b, { bytes: Buffer.from("x"), filename: "x", metadata: "[1,2]" }), 400, "bad_request");
    await expectError(u.c.upload(b, { bytes: Buffer.from("x"), filename: "x", metadata: "{oops" }), 400, "bad_request");
    await expectError(u.c.call("POST", `/api/v1/buckets/${b}/files`, { body: "plain", headers: { "content-type": "text/plain" } }), 400, "bad_request");
    const noFile = "--XyZ\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nabc\r\n--XyZ--\r\n";
    await expectError(u.c.call("POST", `/api/v1/buckets/${b}/files`, { body: noFile, headers: { "content-type": "multipart/form-data; boundary=XyZ" } }), 400, "bad_request");
    const truncated = "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc";
    await expectError(u.c.call("POST", `/api/v1/buckets/${b}/files`, { body: truncated, headers: { "content-type": "multipart/form-data; boundary=XyZ" } }), 400, "bad_request");
    // 255 characters and exactly 8 KiB of metadata are fine
    const meta = JSON.stringify({ m: "x".repeat(8 * 1024 - 8) });
    expect(Buffer.byteLength(meta)).toBe(8 * 1024);
    const ok = await uploadOk(u, b, { bytes: Buffer.from("x"), filename: "x", name: "é".repeat(255), metadata: meta });
    expect(ok.name).toBe("é".repeat(255));
    // nothing of the refused uploads was kept
    expect((await u.c.files("buckets", b)).data).toHaveLength(2);
  });

  it("413 payload_too_large past 100 MiB, declared or streamed, without buffering", async () => {
    const u = await user();
    const b = await privateBucket(u);
    await uploadOk(u, b, { bytes: Buffer.from("warm"), filename: "w" });
    // declared too large: refused before any byte is read
    const declared = await rawSocket(`POST /api/v1/buckets/${b}/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${u.rw.secret}\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: ${101 * MiB}\r\n\r\n--x\r\n`);
    expect(declared.status).toBe(413);
    expect(declared.body).toMatchObject({ code: "payload_too_large", limit: 100 * MiB });
    // streamed without a length: counted while it flows, refused at the first byte past the limit
    const chunk = Buffer.alloc(MiB, 7);
    let sent = 0;
    const total = 100 * MiB + 1;
    const source = async function* () {
      while (sent < total) {
        const n = Math.min(chunk.length, total - sent);
        sent += n;
        yield n === chunk.length ? chunk : chunk.subarray(0, n);
      }
    };
    const rssBefore = process.memoryUsage().rss;
    const mp = multipartBody({ stream: source(), filename: "huge.bin" });
    const res = await request(`${s.console.url}/api/v1/buckets/${b}/files`, { method: "POST", headers: { authorization: `Bearer ${u.rw.secret}`, "content-type": mp.contentType }, body: mp.body }).catch((e) => e);
    if (res instanceof Error) {
      // the server may close the connection while the client still sends: then it must not have accepted anything
      expect(String(res.message)).toMatch(/ECONNRESET|EPIPE|other side closed|socket/i);
    } else {
      expect(res.statusCode).toBe(413);
      expect(await res.body.json()).toMatchObject({ code: "payload_too_large" });
    }
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(90 * MiB);
    expect((await u.c.files("buckets", b)).data).toHaveLength(1);
  }, 120_000);

  it("422 quota_exceeded when the space's storage would be exceeded", async () => {
    const u = await user({ storageCap: 1_000 });
    const b = await privateBucket(u);
    await uploadOk(u, b, { bytes: Buffer.alloc(600), filename: "first" });
    await expectError(u.c.upload(b, { bytes: Buffer.alloc(600), filename: "second" }), 422, "quota_exceeded");
    // without a declared length the check happens once the bytes are counted
    const mp = multipartBody({ stream: Readable.from([Buffer.alloc(600)]), filename: "third" });
    const r = await request(`${s.console.url}/api/v1/buckets/${b}/files`, { method: "POST", headers: { authorization: `Bearer ${u.rw.secret}`, "content-type": mp.contentType }, body: mp.body });
    expect(r.statusCode).toBe(422);
    expect(await r.body.json()).toMatchObject({ code: "quota_exceeded" });
    expect((await u.c.spaces())[0].storage_used).toBe(600);
    expect((await u.c.files("buckets", b)).data).toHaveLength(1);
  });

  it("429 when uploads exceed the key's rate", async () => {
    const u = await user();
    const b = await privateBucket(u);
    await uploadOk(u, b, { bytes: Buffer.from("0"), filename: "0" });
    let limited: ConsoleApiError | undefined;
    for (let i = 1; i <= 40 && !limited; i++) {
      try {
        await u.c.upload(b, { bytes: Buffer.from(String(i)), filename: `f${i}` });
      } catch (err) {
        limited = err as ConsoleApiError;
      }
    }
    expect(limited?.status).toBe(429);
    expect(limited?.code).toBe("rate_limited");
    expect(Number(limited?.headers["retry-after"])).toBeGreaterThan(0);
  });

  it("download streams the bytes with Content-Type and Content-Disposition; 423 while deleting or deleted; 500 when the blob cannot be streamed", async () => {
    const u = await user();
    const b = await privateBucket(u);
    const bytes = Buffer.alloc(3 * MiB + 17, 9);
    const f = await uploadOk(u, b, { bytes, filename: "résumé final.pdf", contentType: "application/pdf" });
    const dl = await u.c.download(b, f.id);
    expect(dl.status).toBe(200);
    expect(dl.headers["content-type"]).toBe("application/pdf");
    expect(dl.headers["content-length"]).toBe(String(bytes.length));
    expect(dl.headers["content-disposition"]).toBe(`attachment; filename="r_sum_ final.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20final.pdf`);
    expect(dl.raw.equals(bytes)).toBe(true);
    // the bytes vanish behind the console's back: 500, not a hang or a truncated 200
    const g = await uploadOk(u, b, { bytes: Buffer.from("fragile"), filename: "fragile" });
    const storage = new BlobStoreStorage(s.storage);
    cleanups.push(() => storage.close());
    await storage.remove((await u.c.bucket(b)).storage_bucket_name, g.id);
    await expectError(u.c.download(b, g.id), 500, "blob_unavailable");
    // deleting and deleted: 423
    await u.c.deleteFile(b, f.id);
    await expectError(u.c.download(b, f.id), 423);
    const deadline = Date.now() + 20_000;
    while ((await u.c.file(b, f.id)).status !== "deleted" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await expectError(u.c.download(b, f.id), 423);
  });

  it("DELETE answers 204 at once, repeated deletes are deduplicated, a worker removes the blob and marks the file deleted", async () => {
    const u = await user();
    const b = await privateBucket(u);
    const f = await uploadOk(u, b, { bytes: Buffer.from("to delete"), filename: "d" });
    const results = await Promise.all([1, 2, 3, 4].map(() => u.c.deleteFile(b, f.id)));
    expect(results.map((r) => r.status)).toEqual([204, 204, 204, 204]);
    const deadline = Date.now() + 20_000;
    while ((await u.c.file(b, f.id)).status !== "deleted" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const final = await u.c.file(b, f.id);
    expect(final.status).toBe("deleted");
    expect(final.deleted_at).toEqual(expect.any(String));
    const { events } = await s.console.directory.clog.store.load(`${AGG.file}.${f.id}`);
    expect(events.filter((e) => e.event.type === EV.fileDeleteRequested)).toHaveLength(1);
    expect(events.filter((e) => e.event.type === EV.fileDeleted)).toHaveLength(1);
    const storage = new BlobStoreStorage(s.storage);
    cleanups.push(() => storage.close());
    expect(await storage.stat((await u.c.bucket(b)).storage_bucket_name, f.id)).toBeNull();
    expect((await u.c.spaces())[0].storage_used).toBe(0);
  });

  it("bucket delete needs confirm=true and an empty bucket; 204 with X-Deleted-Id", async () => {
    const u = await user();
    const b = await privateBucket(u, "to-go");
    const f = await uploadOk(u, b, { bytes: Buffer.from("x"), filename: "x" });
    await expectError(u.c.deleteBucket(b, false), 400, "bad_request");
    await expectError(u.c.call("DELETE", `/api/v1/buckets/${b}?confirm=yes`), 400, "bad_request");
    await expectError(u.c.deleteBucket(b), 400, "bad_request");
    await u.c.deleteFile(b, f.id);
    const r = await u.c.deleteBucket(b);
    expect(r.status).toBe(204);
    expect(r.headers["x-deleted-id"]).toBe(b);
    await expectError(u.c.bucket(b), 404);
    expect((await u.c.buckets(u.spaceId)).buckets).toHaveLength(0);
    // the name is free again; a pending bucket can be deleted too
    const again = await u.c.reserveBucket(u.spaceId, "to-go");
    expect((await u.c.deleteBucket(again.bucket_id)).status).toBe(204);
  });
});

describe("lists (spec: Endpoints, pagination, filters, sorts)", () => {
  it("buckets: limit, opaque cursor, q, visibility and every sort", async () => {
    const u = await user();
    const names = ["Zeta", "alpha", "Mid", "beta", "ALPHABET"];
    const ids: Record<string, string> = {};
    for (const n of names) ids[n] = await privateBucket(u, n);
    await uploadOk(u, ids.Mid, { bytes: Buffer.alloc(5000), filename: "m" });
    await uploadOk(u, ids.beta, { bytes: Buffer.alloc(100), filename: "b" });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { buckets: any[]; next_cursor: string | null } = await u.c.buckets(u.spaceId, { limit: 2, ...(cursor ? { cursor } : {}) });
      expect(page.buckets.length).toBeLessThanOrEqual(2);
      seen.push(...page.buckets.map((b) => b.name));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...names].reverse()); // default: date, desc
    expect((await u.c.buckets(u.spaceId, { sortField: "name", sortOrder: "asc" })).buckets.map((b) => b.name)).toEqual(["alpha", "ALPHABET", "beta", "Mid", "Zeta"]);
    expect((await u.c.buckets(u.spaceId, { sortField: "storage" })).buckets.slice(0, 2).map((b) => b.name)).toEqual(["Mid", "beta"]);
    expect((await u.c.buckets(u.spaceId, { q: "ALPHA" })).buckets.map((b) => b.name).sort()).toEqual(["ALPHABET", "alpha"]);
    expect((await u.c.buckets(u.spaceId, { q: "%" })).buckets).toHaveLength(0);
    expect((await u.c.buckets(u.spaceId, { visibility: "public" })).buckets).toHaveLength(0);
    expect((await u.c.buckets(u.spaceId, { visibility: "private" })).buckets).toHaveLength(5);
    const b = (await u.c.buckets(u.spaceId, { q: "mid" })).buckets[0];
    expect(b).toMatchObject({ id: ids.Mid, space_id: u.spaceId, name: "Mid", visibility: "private", storage_used: 5000, storage_bucket_name: expect.stringMatching(/^wc-[0-9a-f]{32}$/) });
    for (const bad of [{ limit: 0 }, { limit: 1001 }, { limit: "x" }, { sortField: "size" }, { sortOrder: "up" }, { visibility: "hidden" }, { cursor: "garbage" }]) {
      await expectError(u.c.buckets(u.spaceId, bad as unknown as Record<string, string>), 400, "bad_request");
    }
    const withCursor = (await u.c.buckets(u.spaceId, { limit: 1 })).next_cursor!;
    await expectError(u.c.buckets(u.spaceId, { limit: 1, cursor: withCursor, sortField: "name" }), 400, "bad_request");
    expect((await u.c.buckets(u.spaceId, { limit: 1000 })).buckets).toHaveLength(5);
  });

  it("files: default 20, up to 100, pagination.{limit,hasMore,nextCursor}, q across every bucket of the space, sorts", async () => {
    const u = await user();
    const b1 = await privateBucket(u, "one");
    const b2 = await privateBucket(u, "two");
    const accepted = [];
    for (let i = 0; i < 24; i++) {
      const bucket = i % 2 ? b2 : b1;
      accepted.push([bucket, await u.c.uploadWithRetry(bucket, () => ({ bytes: Buffer.alloc(i + 1), filename: `File-${String(i).padStart(2, "0")}${i % 3 ? ".txt" : ".PNG"}`, contentType: i % 3 ? "text/plain" : "image/png" }), { everyMs: 20 })] as const);
    }
    for (const [bucket, f] of accepted) await u.c.waitForUpload(bucket, f.id);
    const first = await u.c.files("spaces", u.spaceId);
    expect(first.data).toHaveLength(20);
    expect(first.pagination).toMatchObject({ limit: 20, hasMore: true });
    const second = await u.c.files("spaces", u.spaceId, { cursor: first.pagination.nextCursor! });
    expect(second.data).toHaveLength(4);
    expect(second.pagination).toEqual({ limit: 20, hasMore: false, nextCursor: null });
    expect(new Set([...first.data, ...second.data].map((f) => f.id)).size).toBe(24);
    expect((await u.c.files("spaces", u.spaceId, { limit: 100 })).data).toHaveLength(24);
    expect((await u.c.files("buckets", b1, { limit: 100 })).data).toHaveLength(12);
    const png = await u.c.files("spaces", u.spaceId, { q: ".png", limit: 100 });
    expect(png.data).toHaveLength(8);
    expect(new Set(png.data.map((f) => f.bucket_id))).toEqual(new Set([b1, b2]));
    const byName = await u.c.files("spaces", u.spaceId, { sortField: "name", sortOrder: "asc", limit: 3 });
    expect(byName.data.map((f) => f.name)).toEqual(["File-00.PNG", "File-01.txt", "File-02.txt"]);
    const bySize = await u.c.files("spaces", u.spaceId, { sortField: "size", limit: 2 });
    expect(bySize.data.map((f) => f.size)).toEqual([24, 23]);
    const byType = await u.c.files("spaces", u.spaceId, { sortField: "type", sortOrder: "asc", limit: 100 });
    expect(byType.data.slice(0, 8).every((f) => f.mime_type === "image/png")).toBe(true);
    // paging a sort by size, 5 at a time, returns every file once
    const all: number[] = [];
    let cursor: string | null = null;
    do {
      const p: { data: any[]; pagination: { nextCursor: string | null } } = await u.c.files("spaces", u.spaceId, { sortField: "size", sortOrder: "asc", limit: 5, ...(cursor ? { cursor } : {}) });
      all.push(...p.data.map((f) => f.size));
      cursor = p.pagination.nextCursor;
    } while (cursor);
    expect(all).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    for (const bad of [{ limit: 0 }, { limit: 101 }, { sortField: "storage" }, { sortOrder: "sideways" }]) {
      await expectError(u.c.files("spaces", u.spaceId, bad as unknown as Record<string, string>), 400, "bad_request");
    }
    await expectError(u.c.spaces("other" as "team"), 400, "bad_request");
  });
});

describe("search over many files (the query layer on the read model)", () => {
  it("a substring search returns exactly the matching files in order, common or rare, across the window", async () => {
    const space = randomUUID();
    const bucket = randomUUID();
    // 2,600 files straight into the read model (the search's steps past its 4,000-row window are covered by
    // test/console-queries.test.ts with small sizes)
    await s.db.query(
      `INSERT INTO console_files (file_id, bucket_id, space_id, name, blob_id, storage_bucket_name, storage_key, size, mime_type, status, is_private, metadata, name_claim, upload_state, created_at, updated_at)
       SELECT gen_random_uuid(), $2::uuid, $1::uuid, (CASE WHEN i % 2 = 0 THEN 'Common-' ELSE 'other-' END) || lpad(i::text, 5, '0') || '.txt',
         'b', 's', 'k', i, 'text/plain', 'completed', false, '{}', 'c', 'completed', now() - (3000 - i) * interval '1 second', now()
       FROM generate_series(0, 2599) i`,
      [space, bucket],
    );
    const q = new Queries(s.db);
    const all = async (query: string) => {
      const names: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { rows: { name: string }[]; next: string | null } = await q.files("space", space, parseFileListQuery(new URLSearchParams(query + (cursor ? `&cursor=${cursor}` : ""))));
        names.push(...page.rows.map((r) => r.name));
        cursor = page.next;
      } while (cursor);
      return names;
    };
    const common = await all("q=COMMON&limit=100");
    expect(common).toHaveLength(1300);
    expect(common[0]).toBe("Common-02598.txt");
    expect(await all("q=other-00001")).toEqual(["other-00001.txt"]);
    // rare and old (outside the newest 1,000 rows): found through the trigram index, in order, across pages
    const rare = await all("q=-0001&limit=3");
    expect(rare).toEqual(Array.from({ length: 10 }, (_, k) => 19 - k).map((i) => `${i % 2 ? "other" : "Common"}-000${i}.txt`));
    expect(await all("q=absent")).toEqual([]);
    expect(await all("q=common-0000&sortField=name&sortOrder=asc")).toEqual(["Common-00000.txt", "Common-00002.txt", "Common-00004.txt", "Common-00006.txt", "Common-00008.txt"]);
    expect((await q.files("bucket", bucket, parseFileListQuery(new URLSearchParams("q=other-02599")))).rows.map((r) => r.name)).toEqual(["other-02599.txt"]);
  });
});

describe("sponsorship (spec: POST /encryption/sponsor, execute)", () => {
  it("builds and executes each kind with the sponsor paying; grants feed the access index; refusals and unknown or expired digests", async () => {
    const alice = await user();
    const bob = await user();
    const team = await createTeamSpace(s.console.directory, { ownerUserId: alice.userId, name: "shared" });
    await addMember(s.console.directory, { spaceId: team.space_id, userId: bob.userId });
    const b = await privateBucket(alice, "shared-vault", team.space_id);
    const f = await uploadOk(alice, b, { bytes: Buffer.from("for bob"), filename: "bob.txt" });
    const aliceKey = alice.rw.service_key!.secret_key;

    const created = await alice.c.sponsored({ kind: "bucket_group_create", bucketId: b }, aliceKey);
    const group = created.objectChanges.find((o) => o.objectType.endsWith("::AccessGroup"))!.objectId;
    expect(created.objectChanges.some((o) => o.objectType.endsWith("::BucketPolicy"))).toBe(true);

    // bob has no grant: 403; bob cannot grant himself (not an admin of the group): the chain refuses
    await expectError(bob.c.download(b, f.id), 403, "bucket_not_in_scope");
    const self = await bob.c.sponsor({ kind: "grant_bucket_access", groupIds: [group], recipientAddress: bob.rw.service_key!.address, scope: "readwrite" });
    await expectError(bob.c.execute(self.digest, await signTransactionBytes(self.bytes, bob.rw.service_key!.secret_key)), 403);
    // a sponsorship belongs to whoever asked for it
    await expectError(alice.c.execute(self.digest, await signTransactionBytes(self.bytes, aliceKey)), 404);

    const granted = await alice.c.sponsored({ kind: "grant_bucket_access", groupIds: [group], recipientAddress: bob.rw.service_key!.address, scope: "readwrite" }, aliceKey);
    const tx = await s.chain.getTransaction(granted.digest);
    expect(tx).toMatchObject({ kind: "grant_bucket_access", sender: alice.rw.service_key!.address, gas_owner: s.console.sponsorAddress });
    const bobUpload = await bob.c.uploadWithRetry(b, () => ({ bytes: Buffer.from("from bob"), filename: "from-bob.txt" }), { everyMs: 20 });
    await bob.c.waitForUpload(b, bobUpload.id);
    expect((await bob.c.download(b, f.id)).raw.toString()).toBe("for bob");

    // share_admin lets bob administer the group; unshare takes it back
    await alice.c.sponsored({ kind: "share_admin", groupId: group, member: bob.rw.service_key!.address }, aliceKey);
    const carol = await mintKey(s.console.directory, { userId: bob.userId, role: "read_write" });
    await bob.c.sponsored({ kind: "grant_bucket_access", groupIds: [group], recipientAddress: carol.service_key!.address, scope: "read" }, bob.rw.service_key!.secret_key);
    await alice.c.sponsored({ kind: "unshare", groupId: group, member: carol.service_key!.address }, aliceKey);
    // unshare_bucket_access revokes bob's service signer: bob is out again (once the index mirrors it)
    await alice.c.sponsored({ kind: "unshare_bucket_access", groupId: group, serviceSignerAddress: bob.rw.service_key!.address }, aliceKey);
    await s.console.caughtUp();
    await expectError(bob.c.download(b, f.id), 403, "bucket_not_in_scope");
    const groupObject = await s.chain.getObject(group);
    expect(groupObject?.fields).toMatchObject({ admins: [alice.rw.service_key!.address], members: [] });

    // validation, unknown and expired digests
    await expectError(alice.c.sponsor({ kind: "nope" }), 400, "bad_request");
    await expectError(alice.c.sponsor({ kind: "grant_bucket_access", groupIds: [group], recipientAddress: "0x12", scope: "read" }), 400, "bad_request");
    await expectError(alice.c.sponsor({ kind: "grant_bucket_access", groupIds: [group], recipientAddress: bob.rw.service_key!.address, scope: "admin" }), 400, "bad_request");
    await expectError(alice.c.sponsor({ kind: "share_admin", groupId: "0x" + "ab".repeat(32), member: bob.rw.service_key!.address }), 404);
    await expectError(alice.c.execute("1".repeat(44), "AAAA"), 404);
    await expectError(alice.c.execute("not-a-digest", "AAAA"), 404);
    const stale = await alice.c.sponsor({ kind: "grant_bucket_access", groupIds: [group], recipientAddress: carol.service_key!.address, scope: "read" });
    await new Promise((r) => setTimeout(r, 1_700)); // the reservation lifetime of this stack
    await expectError(alice.c.execute(stale.digest, await signTransactionBytes(stale.bytes, aliceKey)), 404);
    await expectError(alice.c.execute(stale.digest, await signTransactionBytes(stale.bytes, aliceKey)), 404);
    // a signature by another key is refused before anything executes
    const fresh = await alice.c.sponsor({ kind: "grant_bucket_access", groupIds: [group], recipientAddress: carol.service_key!.address, scope: "read" });
    await expectError(alice.c.execute(fresh.digest, await signTransactionBytes(fresh.bytes, bob.rw.service_key!.secret_key)), 400, "bad_request");
  });
});

describe("infrastructure", () => {
  it("unknown routes are 404 JSON; /health answers", async () => {
    const r = await raw("GET", "/api/v1/nope");
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ code: "not_found" });
    expect((await raw("GET", "/health")).body).toMatchObject({ status: "ok", service: "console" });
  });
});
