// The console's file routes (spec/console.md): lists and search, streamed uploads with their admission checks,
// status, metadata, download, delete.
import { randomUUID } from "node:crypto";
import { json, type Request } from "../http.ts";
import { CMD, EV, type FileDeleteCommandData, type UploadQueued, type UploadState } from "../../schemas/console/events.ts";
import { CODE, CONSOLE_LIMITS, ConsoleHttpError, badRequest, notFound, parseFileListQuery, parseFileMetadata, pathUuid, validateFileName, validateMimeType } from "../../schemas/console/http.ts";
import { consoleCommand } from "../../schemas/console/commands.ts";
import { orThrow } from "../../actors/console/errors.ts";
import { admitUpload, deleteFile, downloadable } from "../../actors/console/file.decider.ts";
import { storageBucketName, type StoredObject } from "../../adapters/file-storage/blobstore-http.ts";
import { Admission } from "./admission.ts";
import { requireWrite } from "./auth.ts";
import { type BucketRow } from "../../projections/console/query-parts.ts";
import { boundaryOf, parseMultipart } from "./multipart.ts";
import { fileJson, type ConsoleRouteKit } from "./route-kit.ts";

function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, "_").replace(/["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase())}`;
}

export function registerFileRoutes(kit: ConsoleRouteKit): void {
  const { server, wrap, authed, qs, P, auth, clog, q, storage, logger, limits, settle, slabs, uploadLimiter, sponsor, scopeError, scopeSpace, scopeBucket, scopeFile, checkAccess, activeBucket, uploadView } = kit;
  const statusJson = (state: UploadState, progress: number | null, error: { code: string; message: string } | null) => ({
    state,
    ...(progress !== null ? { progress } : {}),
    ...(state === "failed" && error ? { error } : {}),
  });

  // ---------------------------------------------------------------- files

  const filePage = async (scope: "space" | "bucket", id: string, req: Request) => {
    const query = parseFileListQuery(qs(req));
    const page = await q.files(scope, id, query);
    return json(200, { data: page.rows.map(fileJson), pagination: { limit: query.limit, hasMore: page.next !== null, nextCursor: page.next } });
  };

  server.route("get", `${P}/spaces/:id/files`, authed("GET /spaces/{id}/files", async (req, p) => {
    const spaceId = pathUuid(req.params[0], "space");
    await scopeSpace(p, spaceId);
    return filePage("space", spaceId, req);
  }));

  server.route("get", `${P}/buckets/:id/files`, authed("GET /buckets/{id}/files", async (req, p) => {
    const b = await scopeBucket(p, req.params[0]);
    return filePage("bucket", b.bucket_id, req);
  }));

  server.route("post", `${P}/buckets/:id/files`, wrap("POST /buckets/{id}/files", async (req) => {
    // The hot path. Once the key is known (a cached hash lookup), the bytes start flowing into storage while the
    // admission checks run (./admission.ts); a refused upload's stored bytes are removed.
    const key = await auth.identify(req);
    const bucketId = pathUuid(req.params[0], "bucket");
    const declared = Number(req.headers["content-length"] ?? NaN);
    const tooLarge = Number.isFinite(declared) && declared > limits.maxUploadBytes + CONSOLE_LIMITS.multipartOverhead;
    const payloadTooLarge = () => new ConsoleHttpError(413, `the upload exceeds the limit of ${limits.maxUploadBytes} bytes`, CODE.payloadTooLarge, { limit: limits.maxUploadBytes });
    const admit = async () => {
      const [p, target] = await Promise.all([auth.check(key), q.uploadTarget(bucketId, key.user_id, key.service_address)]);
      requireWrite(p);
      if (!target || target.state === "deleted") throw notFound(`bucket ${bucketId} not found`);
      if (!target.role || (p.spaceId && p.spaceId !== target.space_id)) throw scopeError();
      const b: BucketRow = target;
      activeBucket(b);
      if (tooLarge) throw payloadTooLarge();
      const retry = uploadLimiter.take(p.keyId);
      if (retry) throw new ConsoleHttpError(429, "too many uploads; slow down", CODE.rateLimited, {}, { "retry-after": String(retry) });
      // "readwrite" > "read": max(scope) is the strongest grant the index holds for the key's service address
      await checkAccess(p, b, "readwrite", p.serviceAddress ? target.access : undefined);
      const quota = { used: target.used, cap: target.cap, inFlight: target.inflight };
      // With a declared length the quota is checked before the upload is accepted (the file is at most that long).
      if (Number.isFinite(declared)) orThrow(admitUpload(quota, Math.max(0, declared - CONSOLE_LIMITS.multipartOverhead)));
      return { p, b, quota };
    };
    const admission = new Admission(admit);
    const boundary = await admission.first(() => {
      if (tooLarge) throw payloadTooLarge();
      const b = boundaryOf(req.headers["content-type"]);
      if (!req.bodyStream) throw badRequest("the upload has no body");
      return b;
    });

    // Every console bucket's objects live in the storage bucket named after it (checked against the row below).
    const storageName = storageBucketName(bucketId);
    const fileId = randomUUID();
    let nameField: string | undefined;
    let metadataField: string | undefined;
    let filename: string | null = null;
    let mime = "application/octet-stream";
    let putting: Promise<StoredObject> | undefined;
    let stored: StoredObject | undefined;
    // The name is claimed while the bytes stream (once admitted) when it is known at the file part (a name field
    // before it, or the part's filename); a name field after the file part is claimed afterwards.
    let early: { name: string; claim: Promise<string> } | undefined;
    const discard = () => {
      putting
        ?.then(() => storage.remove(storageName, fileId), () => undefined)
        .catch((err) => logger.warn("could not remove refused upload bytes", { file_id: fileId, error: (err as Error).message }));
      if (early) early.claim.then((c) => clog.release(c, fileId), () => undefined).catch(() => undefined);
    };
    try {
      const parsing = admission.first(() =>
        parseMultipart(req.bodyStream!, boundary, { fileBytes: limits.maxUploadBytes, fieldBytes: 16 * 1024, fields: 16, headerBytes: 16 * 1024 }, {
          onField: (name, value) => {
            if (name === "name") nameField = validateFileName(value);
            else if (name === "metadata") {
              parseFileMetadata(value);
              metadataField = value;
            }
          },
          onFile: async (info, data) => {
            admission.throwIfRefused();
            filename = info.filename;
            mime = validateMimeType(info.contentType);
            const candidate = nameField ?? filename ?? undefined;
            if (candidate !== undefined && candidate.length > 0 && [...candidate].length <= CONSOLE_LIMITS.fileName) {
              const claim = admission.result.then(async () => orThrow(await clog.claim("file", bucketId, candidate, fileId)));
              claim.catch(() => undefined);
              early = { name: candidate, claim };
            }
            putting = storage.put(storageName, fileId, admission.gate(data), mime, (chunk) => slabs.release(chunk));
            stored = await putting;
            admission.throwIfRefused();
          },
        }, slabs),
      );
      // A refusal answers without waiting for the rest of the body (the parse then ends with the request).
      parsing.catch(() => undefined);
      await Promise.race([parsing, admission.refusedAfter(() => putting)]);
      const { p, b, quota } = await admission.result;
      if (b.storage_bucket_name !== storageName) throw new Error(`bucket ${bucketId} keeps its files in ${b.storage_bucket_name}`);
      if (!stored) throw badRequest("the multipart form needs a file field");
      const name = validateFileName(nameField ?? filename ?? "");
      const metadata = parseFileMetadata(metadataField);
      // Without a declared length, or when the file does not fit the quota read at admission, the current quota judges.
      if (!Number.isFinite(declared) || !admitUpload(quota, stored.size).ok) orThrow(admitUpload((await q.quota(b.space_id))!, stored.size));
      let claim: string;
      if (early && early.name === name) claim = await early.claim;
      else {
        if (early) {
          const stale = early;
          early = undefined;
          await stale.claim.then((c) => clog.release(c, fileId), () => undefined);
        }
        claim = orThrow(await clog.claim("file", b.bucket_id, name, fileId));
      }
      const data: UploadQueued = {
        file_id: fileId,
        bucket_id: b.bucket_id,
        space_id: b.space_id,
        name,
        size: stored.size,
        mime_type: mime,
        blob_id: stored.blob_id,
        md5: stored.md5,
        is_private: b.visibility === "private",
        metadata,
        storage_bucket_name: b.storage_bucket_name,
        storage_key: fileId,
        uploader_user_id: p.userId,
        uploader_key_id: p.keyId,
        owner_address: p.serviceAddress ?? sponsor.address,
        name_claim: claim,
        created_at: new Date().toISOString(),
      };
      await clog.publish(fileId, consoleCommand(CMD.uploadStart, data));
      return json(202, {
        data: {
          id: fileId,
          bucket_id: b.bucket_id,
          name,
          blob_id: stored.blob_id,
          storage_object_id: null,
          size: stored.size,
          mime_type: mime,
          status: "uploading",
          is_private: data.is_private,
          metadata,
          created_at: data.created_at,
          updated_at: data.created_at,
          deleted_at: null,
          upload: { state: "queued", progress: 0 },
        },
      });
    } catch (err) {
      discard();
      throw err;
    }
  }), { bodyMode: "stream", bodyLimit: Number.MAX_SAFE_INTEGER, bodyChunk: slabs.copy });

  server.route("get", `${P}/buckets/:id/files/:fileId`, authed("GET /buckets/{id}/files/{fileId}", async (req, p) => {
    const { file } = await scopeFile(p, req.params[0], req.params[1]);
    return json(200, { data: fileJson(file) });
  }));

  server.route("del", `${P}/buckets/:id/files/:fileId`, authed("DELETE /buckets/{id}/files/{fileId}", async (req, p) => {
    requireWrite(p);
    const { bucket, file } = await scopeFile(p, req.params[0], req.params[1]);
    if (orThrow(deleteFile(file)).already) return { status: 204 };
    const data: FileDeleteCommandData = {
      requested_by: p.userId,
      requested_at: new Date().toISOString(),
      bucket_id: bucket.bucket_id,
      space_id: bucket.space_id,
      storage_bucket_name: file.storage_bucket_name,
      storage_key: file.storage_key,
      name_claim: file.name_claim,
      size: Number(file.size),
      ...(file.status === "failed" ? { upload_failed: true } : {}),
    };
    const r = await clog.dispatch(file.file_id, consoleCommand(CMD.fileDelete, data), (e) => (e.type === EV.fileDeleteRequested || e.type === EV.fileDeleted ? true : undefined), 15_000, true);
    await settle(r.seq);
    return { status: 204 };
  }));

  server.route("get", `${P}/buckets/:id/files/:fileId/status`, authed("GET /buckets/{id}/files/{fileId}/status", async (req, p) => {
    const bucket = await scopeBucket(p, req.params[0]);
    const fileId = pathUuid(req.params[1], "file");
    const missing = () => notFound(`file ${fileId} not found in bucket ${bucket.bucket_id}`);
    const row = await q.file(fileId);
    if (row && row.bucket_id !== bucket.bucket_id) throw missing();
    // A finished job leaves the queue: after the retention window the status route answers 404 and the file
    // metadata route gives the final status (spec: States, Upload).
    const finished = row && (row.upload_state === "completed" || row.upload_state === "failed");
    if (finished && (!row.upload_finished_at || Date.now() - row.upload_finished_at.getTime() > limits.retentionMs)) {
      throw notFound("the upload job has left the queue; GET the file for its final status");
    }
    if (row) return json(200, { data: statusJson(row.upload_state as UploadState, row.upload_progress, row.upload_error) });
    // Accepted moments ago, before the read model has the file: the job's events (or its queued command) say where
    // it is — capped at active, so a client that sees completed also finds the file in lists and metadata.
    const view = await uploadView(fileId);
    if (!view || view.file.bucket_id !== bucket.bucket_id) throw missing();
    return json(200, { data: statusJson(view.state, view.progress, view.error) });
  }));

  server.route("get", `${P}/buckets/:id/files/:fileId/download`, authed("GET /buckets/{id}/files/{fileId}/download", async (req, p) => {
    const { bucket, file } = await scopeFile(p, req.params[0], req.params[1]);
    orThrow(downloadable(file));
    await checkAccess(p, bucket, "read");
    let opened;
    try {
      opened = await storage.open(file.storage_bucket_name, file.storage_key);
    } catch (err) {
      logger.error("file bytes cannot be streamed", { file_id: file.file_id, error: (err as Error).message });
      opened = null;
    }
    if (!opened) throw new ConsoleHttpError(500, "the file's bytes cannot be streamed from storage", CODE.blobUnavailable);
    return {
      status: 200,
      headers: { "content-type": file.mime_type, "content-disposition": contentDisposition(file.name), "x-blob-id": file.blob_id, "cache-control": "private, no-store" },
      stream: opened.stream,
      length: opened.size,
    };
  }));
}
