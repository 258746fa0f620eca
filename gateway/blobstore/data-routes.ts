// The blob store's data routes (API key): buckets, objects and the account's wallet (spec/blobstore.md).
import { HttpError, json } from "../http.ts";
import type { BucketState } from "../../schemas/blobstore/events.ts";
import { answer } from "./domain-errors.ts";
import type { AccountPrincipal } from "./auth.ts";
import { decodeCursor, encodeCursor, type BucketRow } from "../../projections/blobstore/queries.ts";
import { LIMITS, optionalString, parseLimit, validateBucketName, validateContentType, validateMetadata, validateObjectKey } from "../../schemas/blobstore/validation.ts";
import { deriveWalletAddress } from "../../actors/blobstore/wallet.ts";
import { E400, E401, E404, P, blobJson, bucketJson, etagList, preconditions, type BlobstoreRouteKit } from "./route-kit.ts";

export function registerDataRoutes(kit: BlobstoreRouteKit): void {
  const { route, data, jsonBody, query, rawKey, commands, q, master, maxBlobBytes, received, storeBody } = kit;

  /**
   * The bucket a write goes to. A bucket generation's id and owner never change, so they are cached; whether the
   * generation is still live is checked against the log after the write is appended (recordObject), which undoes
   * a write that raced a bucket deletion. A cached owner that does not match is re-read before answering 404.
   */
  const bucketFacts = new Map<string, BucketState>();
  const writableBucket = async (name: string, who: AccountPrincipal): Promise<BucketState> => {
    let b = bucketFacts.get(name);
    if (!b || b.account_id !== who.accountId) {
      b = (await commands.liveBucket(name)) ?? undefined;
      if (b) {
        if (bucketFacts.size > 10_000) bucketFacts.clear();
        bucketFacts.set(name, b);
      } else bucketFacts.delete(name);
    }
    if (!b || b.account_id !== who.accountId) throw new HttpError(404, `bucket ${name} not found`);
    return b;
  };

  /** A bucket the caller's account owns, else 404 (someone else's bucket is not found either). */
  const owned = <B extends { account_id: string }>(who: AccountPrincipal, name: string, b: B | null): B => {
    if (!b || b.account_id !== who.accountId) throw new HttpError(404, `bucket ${name} not found`);
    return b;
  };
  const ownBucket = async (who: AccountPrincipal, name: string): Promise<BucketRow> => owned(who, name, await q.bucket(name));

  route(
    { method: "post", path: "/api/v1/buckets", summary: "Create a bucket", tag: "Buckets", auth: "api_key", body: { description: "bucket", schema: "BucketCreate" }, responses: { 201: { description: "created", schema: "Bucket" }, 400: E400, 401: E401, 409: { description: "name taken" } } },
    "/api/v1/buckets",
    data(async (req, who) => {
      const body = jsonBody(req);
      if (typeof body.name !== "string") throw new HttpError(400, "name is required (a string)");
      const name = validateBucketName(body.name);
      const description = optionalString(body, "description", LIMITS.description) ?? "";
      const metadata = validateMetadata(body.metadata);
      const b = answer(await commands.createBucket({ accountId: who.accountId, name, description, metadata }));
      return json(201, bucketJson(b));
    }),
  );

  route(
    { method: "get", path: "/api/v1/buckets", summary: "List the account's buckets", tag: "Buckets", auth: "api_key", params: [P.limit, P.cursor], responses: { 200: { description: "page", schema: "BucketList" }, 400: E400, 401: E401 } },
    "/api/v1/buckets",
    data(async (req, who) => {
      const qs = query(req);
      const limit = parseLimit(qs.get("limit"));
      const rows = await q.bucketsOf(who.accountId, decodeCursor(qs.get("cursor")), limit + 1);
      const page = rows.slice(0, limit);
      return json(200, { data: page.map(bucketJson), next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1].name) : null });
    }),
  );

  route(
    { method: "get", path: "/api/v1/buckets/{bucket_name}", summary: "Read a bucket", tag: "Buckets", auth: "api_key", params: [P.bucket], responses: { 200: { description: "bucket", schema: "Bucket" }, 400: E400, 401: E401, 404: E404 } },
    "/api/v1/buckets/:bucket",
    data(async (req, who) => json(200, bucketJson(await ownBucket(who, validateBucketName(req.params[0]))))),
  );

  const update = data(async (req, who) => {
    const name = validateBucketName(req.params[0]);
    const body = jsonBody(req);
    const patch: { description?: string; metadata?: Record<string, string> } = {};
    if ("description" in body) patch.description = optionalString(body, "description", LIMITS.description) ?? "";
    if ("metadata" in body) patch.metadata = validateMetadata(body.metadata);
    const unknown = Object.keys(body).filter((k) => k !== "description" && k !== "metadata");
    if (unknown.length) throw new HttpError(400, `only description and metadata can be updated (got ${unknown.join(", ")})`);
    return json(200, bucketJson(answer(await commands.updateBucket({ accountId: who.accountId, name, patch }))));
  });
  for (const method of ["patch", "put"] as const) {
    route(
      { method, path: "/api/v1/buckets/{bucket_name}", summary: "Update a bucket's description and metadata", tag: "Buckets", auth: "api_key", params: [P.bucket], body: { description: "fields to change", schema: "BucketUpdate" }, responses: { 200: { description: "updated", schema: "Bucket" }, 400: E400, 401: E401, 404: E404 } },
      "/api/v1/buckets/:bucket",
      update,
    );
  }

  route(
    {
      method: "delete",
      path: "/api/v1/buckets/{bucket_name}",
      summary: "Delete a bucket (empty, or with ?force=true together with its blobs)",
      tag: "Buckets",
      auth: "api_key",
      params: [P.bucket, { name: "force", in: "query", description: "true: delete the bucket's blobs too" }],
      responses: { 204: { description: "deleted" }, 400: E400, 401: E401, 404: E404, 409: { description: "not empty" } },
    },
    "/api/v1/buckets/:bucket",
    data(async (req, who) => {
      const name = validateBucketName(req.params[0]);
      const force = query(req).get("force") === "true";
      bucketFacts.delete(name);
      answer(await commands.deleteBucket(who.accountId, name, force));
      bucketFacts.delete(name);
      return { status: 204 };
    }),
  );

  route(
    {
      method: "get",
      path: "/api/v1/buckets/{bucket_name}/blobs",
      summary: "List a bucket's blobs (key order)",
      tag: "Blobs",
      auth: "api_key",
      params: [P.bucket, { name: "prefix", in: "query", description: "only keys starting with this" }, P.limit, P.cursor],
      responses: { 200: { description: "page", schema: "BlobList" }, 400: E400, 401: E401, 404: E404 },
    },
    "/api/v1/buckets/:bucket/blobs",
    data(async (req, who) => {
      const name = validateBucketName(req.params[0]);
      const b = owned(who, name, await q.bucketOwner(name));
      const qs = query(req);
      const limit = parseLimit(qs.get("limit"));
      const prefix = qs.get("prefix") ?? "";
      const rows = await q.objects(b.bucket_id, prefix, decodeCursor(qs.get("cursor")), limit + 1);
      const page = rows.slice(0, limit);
      return json(200, { data: page.map(blobJson), next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1].key) : null });
    }),
  );

  route(
    {
      method: "put",
      path: "/api/v1/buckets/{bucket_name}/blobs/{key}",
      summary: "Write a blob (raw body, streamed); If-None-Match: * and If-Match supported",
      tag: "Blobs",
      auth: "api_key",
      params: [
        P.bucket,
        P.key,
        { name: "Content-Type", in: "header", description: "stored and served back (default application/octet-stream)" },
        { name: "If-None-Match", in: "header", description: "* : only if the key does not exist" },
        { name: "If-Match", in: "header", description: "ETag(s) or *: only if the current blob matches" },
        { name: "Content-MD5", in: "header", description: "base64 MD5 of the body, checked" },
      ],
      body: { description: "blob bytes", binary: true },
      responses: { 201: { description: "stored", schema: "Blob" }, 400: E400, 401: E401, 404: E404, 412: { description: "precondition failed" }, 413: { description: "body over the limit" } },
    },
    "/api/v1/buckets/:bucket/blobs/*",
    data(async (req, who) => {
      const name = validateBucketName(req.params[0]);
      const key = validateObjectKey(rawKey(req));
      const contentType = validateContentType(req.headers["content-type"]);
      const pre = preconditions(req);
      const md5Header = req.headers["content-md5"];
      let expectMd5: string | undefined;
      if (md5Header !== undefined) {
        const raw = Buffer.from(md5Header, "base64");
        if (raw.length !== 16) throw new HttpError(400, "Content-MD5 must be the base64 of 16 bytes");
        expectMd5 = raw.toString("hex");
      }
      const bucket = await writableBucket(name, who);
      answer(await commands.precheckWrite(bucket, key, pre));
      const { put, orphan } = await storeBody(req);
      try {
        if (expectMd5 && expectMd5 !== put.md5) throw new HttpError(400, "Content-MD5 does not match the body");
        const r = await commands.recordObject(bucket, key, { blobId: put.blobId, size: put.size, md5: put.md5, contentType }, pre);
        if (!r.ok && r.error.code === "bucket_not_found") bucketFacts.delete(name);
        return json(201, { ...blobJson(answer(r).state), deduplicated: put.deduplicated });
      } catch (err) {
        await orphan();
        throw err;
      }
    }),
    { bodyMode: "stream", bodyLimit: maxBlobBytes, bodyChunk: received.copy },
  );

  route(
    {
      method: "delete",
      path: "/api/v1/buckets/{bucket_name}/blobs/{key}",
      summary: "Delete a blob (bytes are removed when nothing else references them)",
      tag: "Blobs",
      auth: "api_key",
      params: [P.bucket, P.key, { name: "If-Match", in: "header", description: "ETag(s) or *" }],
      responses: { 204: { description: "deleted" }, 400: E400, 401: E401, 404: E404, 412: { description: "precondition failed" } },
    },
    "/api/v1/buckets/:bucket/blobs/*",
    data(async (req, who) => {
      const name = validateBucketName(req.params[0]);
      const key = validateObjectKey(rawKey(req));
      const bucket = await commands.liveBucket(name);
      if (!bucket || bucket.account_id !== who.accountId) throw new HttpError(404, `bucket ${name} not found`);
      answer(await commands.deleteObject(bucket, key, { ifNoneMatchAny: false, ifMatch: etagList(req.headers["if-match"]) }));
      return { status: 204 };
    }),
  );

  route(
    { method: "get", path: "/api/v1/wallet", summary: "The account's wallet address", tag: "Wallet", auth: "api_key", responses: { 200: { description: "wallet", schema: "Wallet" }, 401: E401 } },
    "/api/v1/wallet",
    data(async (_req, who) => json(200, { provisioned: true, wallet: { address: deriveWalletAddress(master, who.accountId) } })),
  );

}
