// Public blob reads (spec/blobstore.md): by blob id, and by bucket name and key for public buckets; HEAD answers too.
import { HttpError } from "../http.ts";
import { validateBucketName, validateObjectKey } from "../../schemas/blobstore/validation.ts";
import { E400, E404, E503, P, type BlobstoreRouteKit } from "./route-kit.ts";
import { KIND, filterOf, subjectOf } from "../../schemas/blobstore/events.ts";

export function registerPublicRoutes(kit: BlobstoreRouteKit): void {
  const { route, rawKey, q, serve, serveByBlobId, confirmMiss } = kit;

  route(
    {
      method: "get",
      path: "/api/v1/blobs/by-blob-id/{blob_id}",
      summary: "Read a blob by blob id (public)",
      tag: "Blobs",
      auth: "public",
      params: [P.blobId, P.range],
      responses: { 200: { description: "bytes", binary: true }, 206: { description: "range", binary: true }, 400: E400, 404: E404, 416: { description: "range not satisfiable" }, 503: E503 },
    },
    "/api/v1/blobs/by-blob-id/:blob_id",
    (req) => serveByBlobId(req, req.params[0]),
  );

  route(
    {
      method: "get",
      path: "/api/v1/buckets/{bucket_name}/blobs/{key}",
      summary: "Read a blob by bucket name and key (public)",
      tag: "Blobs",
      auth: "public",
      params: [P.bucket, P.key, P.range],
      responses: { 200: { description: "bytes with the stored content type", binary: true }, 206: { description: "range", binary: true }, 304: { description: "ETag matches If-None-Match" }, 400: E400, 404: E404, 416: { description: "range not satisfiable" }, 503: E503 },
    },
    "/api/v1/buckets/:bucket/blobs/*",
    async (req) => {
      const bucket = validateBucketName(req.params[0]);
      const key = validateObjectKey(rawKey(req));
      // A bucket and its objects are two read models: a miss waits for both (the bucket's own events; any object's,
      // since an object's subject is named by the bucket's generation id).
      const find = () => q.publicObject(bucket, key);
      const o = (await find()) ?? (await confirmMiss([{ kind: KIND.bucket, subjects: subjectOf(KIND.bucket, bucket) }, { kind: KIND.blob, subjects: filterOf(KIND.blob) }], find));
      if (!o) throw new HttpError(404, `blob ${key} not found in bucket ${bucket}`);
      return serve(req, { blobId: o.blob_id, size: o.size, contentType: o.content_type, etag: `"${o.md5}"`, lastModified: new Date(o.updated_ms), immutable: false });
    },
  );
}
