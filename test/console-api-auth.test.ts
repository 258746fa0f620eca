// The console API (spec/console.md), authentication: missing, unknown and not yet or no longer usable keys,
// read-only keys and the reach of a key; plus the infrastructure routes. Over HTTP against a console on its real
// backbone, one stack for the file (test/support/console-api-suite.ts).
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import { request } from "undici";
import { createTeamSpace, mintKey, revokeKey, type MintedKey } from "../actors/console/directory.ts";
import { ConsoleClient } from "../client/console-client.ts";
import { AGG, EV, type KeyMinted } from "../schemas/console/events.ts";
import { newApiKey } from "../actors/console/api-keys.ts";
import { cleanups, expectError, privateBucket, s, uploadOk, useConsoleApiSuite, user } from "./support/console-api-suite.ts";

useConsoleApiSuite();

async function client(key: MintedKey) {
  const c = new ConsoleClient(s.console.url, key.secret);
  cleanups.push(() => c.close());
  return c;
}

const raw = async (method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer | Readable) => {
  const res = await request(s.console.url + path, { method: method as "GET", headers, body });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text && String(res.headers["content-type"]).includes("json") ? JSON.parse(text) : text };
};

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

describe("infrastructure", () => {
  it("unknown routes are 404 JSON; /health answers", async () => {
    const r = await raw("GET", "/api/v1/nope");
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ code: "not_found" });
    expect((await raw("GET", "/health")).body).toMatchObject({ status: "ok", service: "console" });
  });
});
