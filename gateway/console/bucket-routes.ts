// The console's space and bucket routes (spec/console.md): list spaces and their buckets, reserve → sign → finalize
// a private bucket, rename, delete.
import { randomUUID } from "node:crypto";
import { json } from "../http.ts";
import { AGG, CMD, EV, type BucketFinalizeFailed, type BucketReserveCommandData, type BucketReserved, type BucketUpdateCommandData } from "../../schemas/console/events.ts";
import { parseJsonObject } from "../http.ts";
import { CODE, CONSOLE_LIMITS, ConsoleHttpError, badRequest, parseBucketListQuery, parseCreateBucket, parseSignatureBody, parseSpaceType, parseUpdateBucket, pathUuid } from "../../schemas/console/http.ts";
import { claimId } from "../../actors/console/log.ts";
import { orThrow } from "../../actors/console/errors.ts";
import { consoleCommand } from "../../schemas/console/commands.ts";
import { storageBucketName } from "../../adapters/file-storage/blobstore-http.ts";
import { requireWrite } from "./auth.ts";
import { buildSponsoredTx } from "../../actors/console/chain.ts";
import { deleteBucket, finalizeBucket, reserveBucket, updateBucket } from "../../actors/console/bucket.decider.ts";
import { bucketJson, spaceJson, type ConsoleRouteKit } from "./route-kit.ts";

export function registerBucketRoutes(kit: ConsoleRouteKit): void {
  const { server, authed, qs, P, clog, q, policies, chain, sponsor, settle, scopeSpace, scopeBucket, tierOf } = kit;
  // ---------------------------------------------------------------- spaces

  server.route("get", `${P}/spaces`, authed("GET /spaces", async (req, p) => {
    const type = parseSpaceType(qs(req).get("type"));
    return json(200, { data: (await q.spacesOf(p.userId, type, p.spaceId)).map(spaceJson) });
  }));

  server.route("get", `${P}/spaces/:id/buckets`, authed("GET /spaces/{id}/buckets", async (req, p) => {
    const spaceId = pathUuid(req.params[0], "space");
    await scopeSpace(p, spaceId);
    const page = await q.buckets(spaceId, parseBucketListQuery(qs(req)));
    return json(200, { buckets: page.rows.map(bucketJson), next_cursor: page.next });
  }));

  server.route("post", `${P}/spaces/:id/buckets`, authed("POST /spaces/{id}/buckets", async (req, p) => {
    requireWrite(p);
    const spaceId = pathUuid(req.params[0], "space");
    await scopeSpace(p, spaceId);
    const body = parseCreateBucket(parseJsonObject(req.body));
    if (!p.serviceAddress) throw badRequest("this API key has no service key to sign the bucket policy with");
    const space = (await q.space(spaceId))!;
    const liveBuckets = await q.liveBucketCount(spaceId);
    orThrow(reserveBucket({ tier: space.tier, plan: tierOf(space.tier), liveBuckets, storageUsed: space.storage_used, storageCap: space.storage_cap }));
    const bucketId = randomUUID();
    const claim = orThrow(await clog.claim("bucket", spaceId, body.name, bucketId));
    const tx = buildSponsoredTx({ target: chain.target, kind: "bucket_policy_create", args: { bucket_id: bucketId, space_id: spaceId }, sender: p.serviceAddress, sponsorAddress: sponsor.address });
    const data: BucketReserveCommandData = {
      bucket_id: bucketId,
      space_id: spaceId,
      name: body.name,
      visibility: "private",
      storage_bucket_name: storageBucketName(bucketId),
      name_claim: claim,
      created_by: p.userId,
      created_at: new Date().toISOString(),
      tx_bytes: tx.bytes,
      digest: tx.digest,
      sender: p.serviceAddress,
    };
    const r = await clog.dispatch(bucketId, consoleCommand(CMD.bucketReserve, data), (e) => (e.type === EV.bucketReserved ? true : undefined));
    await settle(r.seq);
    return json(201, { bucket_id: bucketId, bytes: tx.bytes, digest: tx.digest, state: "pending_policy" });
  }), { bodyLimit: CONSOLE_LIMITS.jsonBody });

  // ---------------------------------------------------------------- buckets

  server.route("get", `${P}/buckets/:id`, authed("GET /buckets/{id}", async (req, p) => json(200, { data: bucketJson(await scopeBucket(p, req.params[0])) })));

  server.route("put", `${P}/buckets/:id`, authed("PUT /buckets/{id}", async (req, p) => {
    requireWrite(p);
    const b = await scopeBucket(p, req.params[0]);
    const body = parseUpdateBucket(parseJsonObject(req.body));
    // Only a policy other than the bucket's needs reading from chain.
    const newPolicy = body.encryptionPolicyId && body.encryptionPolicyId !== b.encryption_policy_id ? body.encryptionPolicyId : undefined;
    const policyOnChain = newPolicy ? (await policies.policy(newPolicy)) !== null : undefined;
    const { renamed, policyChange } = orThrow(updateBucket({ ...body, policyOnChain })(b));
    if (!renamed && !policyChange) return json(200, { id: b.bucket_id, name: b.name, visibility: b.visibility, updated_at: b.updated_at.toISOString() });
    const newClaim = renamed ? orThrow(await clog.claim("bucket", b.space_id, body.name, b.bucket_id)) : undefined;
    const now = new Date().toISOString();
    const data: BucketUpdateCommandData = {
      ...(renamed ? { name: body.name, name_claim: newClaim } : {}),
      ...(policyChange ? { encryption_policy_id: body.encryptionPolicyId } : {}),
      updated_at: now,
    };
    const r = await clog.dispatch(b.bucket_id, consoleCommand(CMD.bucketUpdate, data), (e) => (e.type === EV.bucketUpdated && e.data.updated_at === now ? true : undefined));
    if (renamed && newClaim) {
      // The old name is free again (a name claim differing only by case is the same claim).
      const oldClaim = claimId("bucket", b.space_id, b.name);
      if (oldClaim !== newClaim) await clog.release(oldClaim, b.bucket_id);
    }
    await settle(r.seq);
    return json(200, { id: b.bucket_id, name: body.name, visibility: b.visibility, updated_at: now });
  }), { bodyLimit: CONSOLE_LIMITS.jsonBody });

  server.route("del", `${P}/buckets/:id`, authed("DELETE /buckets/{id}", async (req, p) => {
    requireWrite(p);
    if (qs(req).get("confirm") !== "true") throw badRequest("deleting a bucket needs ?confirm=true");
    const b = await scopeBucket(p, req.params[0]);
    const headers = { "x-deleted-id": b.bucket_id };
    if (orThrow(deleteBucket({ files: await q.bucketContents(b.bucket_id) })(b)).already) return { status: 204, headers };
    const data = { requested_by: p.userId, requested_at: new Date().toISOString() };
    const r = await clog.dispatch(b.bucket_id, consoleCommand(CMD.bucketDelete, data), (e) => (e.type === EV.bucketDeleted ? true : undefined), 15_000, true);
    await settle(r.seq);
    return { status: 204, headers };
  }));

  server.route("post", `${P}/buckets/:id/finalize`, authed("POST /buckets/{id}/finalize", async (req, p) => {
    requireWrite(p);
    const b = await scopeBucket(p, req.params[0]);
    const signature = parseSignatureBody(parseJsonObject(req.body));
    const reservation = await reservationOf(b.bucket_id);
    if (orThrow(finalizeBucket({ signature, reservation, now: Date.parse(clog.clock.now()) })(b)).already) {
      return json(200, { bucket_id: b.bucket_id, encryption_policy_id: b.encryption_policy_id, state: "active" });
    }
    const r = await clog.dispatch(
      b.bucket_id,
      consoleCommand(CMD.bucketFinalize, { signature, requested_by: p.userId }),
      (e): { ok: true } | { ok: false; failure: BucketFinalizeFailed } | undefined =>
        e.type === EV.bucketActivated ? { ok: true } : e.type === EV.bucketFinalizeFailed ? { ok: false, failure: e.data } : undefined,
      30_000,
    );
    if (!r.value.ok) {
      const f = r.value.failure;
      throw new ConsoleHttpError(f.code === CODE.invalidSignature ? 400 : 422, `finalize failed: ${f.error}`, f.code === CODE.invalidSignature ? CODE.badRequest : f.code);
    }
    await settle(r.seq);
    const after = (await q.bucket(b.bucket_id))!;
    return json(200, { bucket_id: b.bucket_id, encryption_policy_id: after.encryption_policy_id, state: "active" });
  }), { bodyLimit: CONSOLE_LIMITS.jsonBody });

  /** The reservation of a private bucket (its first event), null when it has none. */
  const reservationOf = async (bucketId: string): Promise<BucketReserved | null> => {
    const { events } = await clog.store.load(`${AGG.bucket}.${bucketId}`);
    return events.flatMap(({ event: e }) => (e.type === EV.bucketReserved ? [e.data] : []))[0] ?? null;
  };
}
