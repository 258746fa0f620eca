// The console API (spec/console.md), private buckets: reserve and finalize, renames, plan limits and bad bodies;
// and the sponsored transactions that grant and take back access to them. Over HTTP against a console on its real
// backbone, one stack for the file (test/support/console-api-suite.ts).
import { describe, expect, it } from "vitest";
import { Transaction } from "@mysten/sui/transactions";
import { bcs } from "@mysten/sui/bcs";
import { addMember, createTeamSpace, mintKey } from "../actors/console/directory.ts";
import { signTransactionBytes } from "../client/console-client.ts";
import { ProjectionRunner } from "../projections/runtime.ts";
import { accessIndexProjection } from "../projections/console/access-index.ts";
import { cleanups, expectError, privateBucket, s, uploadOk, useConsoleApiSuite, user } from "./support/console-api-suite.ts";
import { inContract } from "../gateway/console/domain-errors.ts";

useConsoleApiSuite();

describe("private buckets (spec: States, private bucket)", () => {
  it("reserve → 201 pending_policy with real transaction bytes; a wrong signature is refused; finalize → active with the policy id", async () => {
    const u = await user();
    const r = await u.c.reserveBucket(u.spaceId, "vault");
    expect(r.state).toBe("pending_policy");
    // Sui TransactionData as the SDK reads it: the sponsored call of the bucket_policy module
    const data = Transaction.from(r.bytes).getData();
    expect(data.sender).toBe(u.rw.service_key!.address);
    expect(data.gasData.owner).toBe(s.console.sponsorAddress);
    expect(data.commands).toHaveLength(1);
    expect(data.commands[0]!.MoveCall).toMatchObject({ package: s.chain.packageId, module: "bucket_policy", function: "create_policy" });
    expect(data.inputs.map((i) => bcs.String.parse(Buffer.from(i.Pure!.bytes, "base64")))).toEqual([r.bucket_id, u.spaceId]);
    // another key's signature, or a signature of other bytes, is not a signature over the reserved bytes
    const other = await mintKey(s.console.directory, { userId: u.userId, role: "read_write" });
    await expectError(u.c.finalize(r.bucket_id, await signTransactionBytes(r.bytes, other.service_key!.secret_key)), 400, "bad_request");
    data.gasData.budget = String(BigInt(data.gasData.budget!) + 1n);
    const tampered = Buffer.from(await Transaction.from(JSON.stringify(data)).build()).toString("base64");
    expect(tampered).not.toBe(r.bytes);
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
    // the directory refuses in its own words (a ConsoleRefusal); the contract says it as the gateway would
    await expect(addMember(s.console.directory, { spaceId: team.space_id, userId: other.userId }).catch((e) => Promise.reject(inContract(e)))).rejects.toMatchObject({ status: 422, code: "PLAN_LIMIT_EXCEEDED", extra: { limit: "users", currentTier: "tiny" } });
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
