// Walrus's quilt routes (docs: "Quilt HTTP APIs"): the publisher's `PUT /v1/quilts` lays the patches out as the
// network does (the SDK's encodeQuilt, for a committee of `shards`) and stores the quilt once, as one blob with one
// register + certify; the aggregator serves each patch by its quilt patch id or by quilt id and identifier, and lists
// a quilt's patches. A patch read reads the quilt's bytes (kept a while in a bounded cache: a quilt is immutable).
import { Readable } from "node:stream";
import { HttpError, json, type Reply, type Request } from "../http.ts";
import { isBlobId, parseWalrusStore } from "../../schemas/blobstore/validation.ts";
import { E400, E404, E503, type BlobstoreRouteKit } from "./route-kit.ts";
import { publishWalrusBlob, readLatency, type PublisherNetwork } from "./walrus-routes.ts";
import { parseQuiltForm } from "./quilt-form.ts";
import { QuiltFormatError, encodeQuiltBytes, encodeQuiltPatchId, listQuiltPatches, parseQuiltPatchId, readQuiltPatch, type QuiltInput } from "../../adapters/blobs/quilt-codec.ts";
import { CiphertextCache } from "../../adapters/blobs/ciphertext-cache.ts";
import type { BlobBackend } from "../../adapters/blob-bytes/backend.ts";

export interface QuiltRouteDeps {
  /** The publisher's network (a quilt is one blob: one register + certify on its sub-wallets). */
  readonly network: PublisherNetwork;
  /** Shards of the committee whose layout quilts take (WALRUS_N_SHARDS): fixes a quilt's rows and columns. */
  readonly shards: number;
  readonly backend: BlobBackend;
}

/** A quilt upload is held in memory while it is laid out, so it is bounded below the blob limit. */
const MAX_QUILT_BODY_BYTES = 100 * 1024 * 1024;
const QUILT_CACHE_TTL_SECS = 60;
const QUILT_CACHE_BYTES = 64 * 1024 * 1024;

/** The SDK encoder's refusals, as the publisher answers them: too large 413, anything else (duplicates, count) 400. */
function encodeOrRefuse(patches: QuiltInput[], shards: number) {
  try {
    return encodeQuiltBytes(patches, shards);
  } catch (err) {
    const message = (err as Error).message;
    throw new HttpError(/oversize|too large/i.test(message) ? 413 : 400, `the quilt cannot be laid out: ${message}`);
  }
}

async function collect(stream: Readable): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export function registerQuiltRoutes(kit: BlobstoreRouteKit, deps: QuiltRouteDeps): void {
  const { route, maxBlobBytes, storeBody, needLog, referencedSize } = kit;
  const { network, shards, backend } = deps;
  const { profile } = network;
  const quilts = new CiphertextCache(QUILT_CACHE_TTL_SECS, QUILT_CACHE_BYTES, QUILT_CACHE_BYTES);

  /** A stored quilt's bytes; 404 when no blob by that id is stored (the read model caught up), 400 when the blob is not a quilt. */
  async function quiltBytes(quiltId: string): Promise<Uint8Array> {
    const hit = quilts.get(quiltId);
    if (hit) return hit;
    const size = await referencedSize(quiltId);
    const opened = size === null ? null : await backend.open(quiltId, undefined, { inlineBelow: size + 1, size });
    if (!opened) throw new HttpError(404, `quilt ${quiltId} not found`);
    const bytes = opened.bytes ?? (await collect(opened.stream!));
    quilts.put(quiltId, bytes);
    return bytes;
  }

  function patchReply(req: Request, etag: string, patch: { identifier: string; tags: Record<string, string>; contents: Uint8Array }): Reply {
    const headers = { "content-type": "application/octet-stream", etag: `"${etag}"`, "x-quilt-patch-identifier": patch.identifier, "cache-control": "public, max-age=3600, immutable" };
    if (req.method === "HEAD") return { status: 200, headers, headLength: patch.contents.byteLength };
    return { status: 200, headers, body: Buffer.from(patch.contents.buffer, patch.contents.byteOffset, patch.contents.byteLength) };
  }

  const formatError = (quiltId: string) => (err: unknown): never => {
    if (err instanceof QuiltFormatError) throw new HttpError(400, `blob ${quiltId} is not a quilt: ${err.message}`);
    throw err;
  };

  route(
    {
      method: "put",
      path: "/v1/quilts",
      summary: "Walrus publisher: store a quilt (multipart/form-data, one part per patch; _metadata: tags)",
      tag: "Walrus",
      auth: "public",
      params: [
        { name: "epochs", in: "query", description: "as for PUT /v1/blobs" },
        { name: "deletable", in: "query", description: "as for PUT /v1/blobs" },
        { name: "permanent", in: "query", description: "as for PUT /v1/blobs" },
        { name: "send_object_to", in: "query", description: "as for PUT /v1/blobs" },
      ],
      body: { description: "multipart/form-data: field name = patch identifier", binary: true },
      responses: { 200: { description: "blobStoreResult and storedQuiltBlobs" }, 400: E400, 413: { description: "body or quilt over the limit" } },
    },
    "/v1/quilts",
    async (req) => {
      const p = parseWalrusStore(req.query);
      const patches = parseQuiltForm(req.body, req.headers["content-type"]);
      const laid = encodeOrRefuse(patches, shards);
      needLog();
      const { put, orphan } = await storeBody({ ...req, bodyStream: Readable.from([Buffer.from(laid.quilt.buffer, laid.quilt.byteOffset, laid.quilt.byteLength)]) });
      try {
        const blobStoreResult = await publishWalrusBlob(kit, network, put, p);
        quilts.put(put.blobId, laid.quilt);
        return json(200, {
          blobStoreResult,
          storedQuiltBlobs: laid.patches.map((x) => ({ identifier: x.identifier, quiltPatchId: encodeQuiltPatchId({ quiltId: put.blobId, ...x }) })),
        });
      } catch (err) {
        await orphan();
        throw err;
      }
    },
    { bodyMode: "buffer", bodyLimit: Math.min(maxBlobBytes, MAX_QUILT_BODY_BYTES) },
  );

  route(
    {
      method: "get",
      path: "/v1/blobs/by-quilt-patch-id/{quilt_patch_id}",
      summary: "Walrus aggregator: read a quilt patch by its quilt patch id",
      tag: "Walrus",
      auth: "public",
      params: [{ name: "quilt_patch_id", in: "path", description: "URL-safe base64 of (quilt blob id, version, start, end)" }],
      responses: { 200: { description: "the patch's bytes (X-Quilt-Patch-Identifier)", binary: true }, 400: E400, 404: E404, 503: E503 },
    },
    "/v1/blobs/by-quilt-patch-id/:quilt_patch_id",
    async (req) => {
      const id = req.params[0];
      const ref = parseQuiltPatchId(id);
      if (!ref) throw new HttpError(400, "not a quilt patch id (URL-safe base64 of a quilt id, version 1, start and end column)");
      const quilt = await quiltBytes(ref.quiltId);
      await readLatency(profile);
      // A patch id whose columns hold no patch of this quilt names nothing stored: 404, as for an unknown blob.
      let patch;
      try {
        const listed = listQuiltPatches(quilt, shards).some((x) => x.startIndex === ref.startIndex && x.endIndex === ref.endIndex);
        patch = listed ? readQuiltPatch(quilt, shards, ref) : null;
      } catch (err) {
        return formatError(ref.quiltId)(err);
      }
      if (!patch) throw new HttpError(404, `quilt ${ref.quiltId} has no patch at columns ${ref.startIndex}-${ref.endIndex}`);
      return patchReply(req, id, patch);
    },
  );

  route(
    {
      method: "get",
      path: "/v1/blobs/by-quilt-id/{quilt_id}/{identifier}",
      summary: "Walrus aggregator: read a quilt patch by quilt id and identifier",
      tag: "Walrus",
      auth: "public",
      params: [{ name: "quilt_id", in: "path", description: "the quilt's blob id" }, { name: "identifier", in: "path", description: "the patch's identifier" }],
      responses: { 200: { description: "the patch's bytes (X-Quilt-Patch-Identifier)", binary: true }, 400: E400, 404: E404, 503: E503 },
    },
    "/v1/blobs/by-quilt-id/:quilt_id/:identifier",
    async (req) => {
      const quiltId = req.params[0];
      if (!isBlobId(quiltId)) throw new HttpError(400, "quilt id must be a blob id: 32 bytes as URL-safe base64 without padding");
      const identifier = decodeURIComponent(req.params[1]);
      const quilt = await quiltBytes(quiltId);
      await readLatency(profile);
      try {
        const found = listQuiltPatches(quilt, shards).find((x) => x.identifier === identifier);
        if (!found) throw new HttpError(404, `quilt ${quiltId} has no patch ${JSON.stringify(identifier)}`);
        return patchReply(req, encodeQuiltPatchId({ quiltId, ...found }), readQuiltPatch(quilt, shards, found));
      } catch (err) {
        return formatError(quiltId)(err);
      }
    },
  );

  route(
    {
      method: "get",
      path: "/v1/quilts/{quilt_id}/patches",
      summary: "Walrus aggregator: list a quilt's patches",
      tag: "Walrus",
      auth: "public",
      params: [{ name: "quilt_id", in: "path", description: "the quilt's blob id" }],
      responses: { 200: { description: "[{identifier, patch_id, tags}]" }, 400: E400, 404: E404, 503: E503 },
    },
    "/v1/quilts/:quilt_id/patches",
    async (req) => {
      const quiltId = req.params[0];
      if (!isBlobId(quiltId)) throw new HttpError(400, "quilt id must be a blob id: 32 bytes as URL-safe base64 without padding");
      const quilt = await quiltBytes(quiltId);
      await readLatency(profile);
      try {
        return json(200, listQuiltPatches(quilt, shards).map((x) => ({ identifier: x.identifier, patch_id: encodeQuiltPatchId({ quiltId, ...x }), tags: x.tags })));
      } catch (err) {
        return formatError(quiltId)(err);
      }
    },
  );
}
