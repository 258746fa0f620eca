// The Walrus-compatible publisher and aggregator routes (spec/blobstore.md): the relayer and the console store their
// blobs through them, unmodified Walrus clients too. Under a network profile they take the time a real publisher and
// aggregator take (storeLatency, readLatency); the local bytes are stored and read as ever.
import { createHash } from "node:crypto";
import { HttpError, json } from "../http.ts";
import { LIMITS, isObjectId, parseWalrusStore, type WalrusStoreParams } from "../../schemas/blobstore/validation.ts";
import { E400, E404, E503, P, type BlobstoreRouteKit } from "./route-kit.ts";
import type { NetworkProfile } from "../../config/network-profile.ts";
import type { PutResult } from "../../adapters/blob-bytes/backend.ts";
import { TransactionWallets, networkDelay } from "../../adapters/network-latency.ts";
import { KIND, subjectOf, walrusAggregateId } from "../../schemas/blobstore/events.ts";

/** Owner of Walrus blob objects stored without send_object_to (a fixed local publisher address). */
const PUBLISHER_ADDRESS = "0x" + createHash("sha256").update("memrelay-blobstore-publisher").digest("hex");

/** The network a publisher works against: the profile's latencies and the publisher's own sub-wallets. */
export interface PublisherNetwork {
  readonly profile: NetworkProfile;
  readonly subWallets: TransactionWallets;
}

export function publisherNetwork(profile: NetworkProfile): PublisherNetwork {
  return { profile, subWallets: new TransactionWallets(profile.publisherSubWallets) };
}

/**
 * A new blob on Walrus: register_blob (a transaction through consensus, the system object is shared), the slivers to
 * the storage nodes until a quorum confirms, certify_blob (consensus again). Each transaction is paid by one of the
 * publisher's sub-wallets, which carries one transaction at a time: a publisher busy with other stores makes it wait.
 */
async function storeLatency({ profile, subWallets }: PublisherNetwork): Promise<void> {
  await subWallets.hold(profile.sharedTxFinality);
  await networkDelay(profile.storageNodeWrite);
  await subWallets.hold(profile.sharedTxFinality);
}

/** An aggregator's read: the slivers it needs, from the storage nodes, in parallel. */
export const readLatency = (profile: NetworkProfile) => networkDelay(profile.storageNodeRead);

/**
 * A publisher's store of bytes already in the backend: `alreadyCertified` when a permanent object for them lasts
 * long enough, else one register + certify (under the network profile, its latency) and `newlyCreated`. PUT
 * /v1/blobs and PUT /v1/quilts (a quilt is one blob) answer with it.
 */
export async function publishWalrusBlob(kit: BlobstoreRouteKit, network: PublisherNetwork, put: PutResult, p: WalrusStoreParams) {
  const { commands, q, walrusEpoch } = kit;
  const { profile } = network;
  const endEpoch = walrusEpoch + p.epochs;
  if (!p.deletable && put.deduplicated) {
    const c = await q.certified(put.blobId, endEpoch);
    if (c) {
      // the publisher asks the storage nodes for the blob's status before it skips the upload
      await readLatency(profile);
      return { alreadyCertified: { blobId: put.blobId, object: c.object_id, endEpoch: c.end_epoch } };
    }
  }
  await storeLatency(network);
  const o = await commands.registerWalrusBlob({
    blob_id: put.blobId,
    size: put.size,
    encoding_type: "RS2",
    registered_epoch: walrusEpoch,
    certified_epoch: walrusEpoch,
    end_epoch: endEpoch,
    deletable: p.deletable,
    owner: p.sendObjectTo ?? PUBLISHER_ADDRESS,
    storage_size: put.size,
  });
  return {
    newlyCreated: {
      blobObject: {
        id: o.object_id,
        registeredEpoch: o.registered_epoch,
        blobId: o.blob_id,
        size: o.size,
        encodingType: o.encoding_type,
        certifiedEpoch: o.certified_epoch,
        storage: { id: o.storage_id, startEpoch: o.registered_epoch, endEpoch: o.end_epoch, storageSize: o.storage_size },
        deletable: o.deletable,
      },
      resourceOperation: { registerFromScratch: { encodedLength: o.storage_size, epochsAhead: p.epochs } },
      cost: 0,
    },
  };
}

export function registerWalrusRoutes(kit: BlobstoreRouteKit, network: PublisherNetwork): void {
  const { profile } = network;
  const { route, q, maxBlobBytes, received, storeBody, serve, serveByBlobId, needLog, confirmMiss } = kit;

  route(
    {
      method: "put",
      path: "/v1/blobs",
      summary: "Walrus publisher: store a blob (raw body)",
      tag: "Walrus",
      auth: "public",
      params: [
        { name: "epochs", in: "query", description: `epochs ahead, 1-${LIMITS.maxEpochsAhead} or "max" (default 1)` },
        { name: "deletable", in: "query", description: "true: a deletable blob object (always newly created)" },
        { name: "permanent", in: "query", description: "true: a permanent blob object (default)" },
        { name: "send_object_to", in: "query", description: "Sui address that owns the new blob object" },
      ],
      body: { description: "blob bytes", binary: true },
      responses: { 200: { description: "newlyCreated or alreadyCertified", schema: "WalrusStored" }, 400: E400, 413: { description: "body over the limit" } },
    },
    "/v1/blobs",
    async (req) => {
      const p = parseWalrusStore(req.query);
      needLog();
      const { put, orphan } = await storeBody(req);
      try {
        return json(200, await publishWalrusBlob(kit, network, put, p));
      } catch (err) {
        await orphan();
        throw err;
      }
    },
    { bodyMode: "stream", bodyLimit: maxBlobBytes, bodyChunk: received.copy },
  );

  route(
    {
      method: "get",
      path: "/v1/blobs/by-object-id/{object_id}",
      summary: "Walrus aggregator: read a blob by its blob object id",
      tag: "Walrus",
      auth: "public",
      params: [{ name: "object_id", in: "path", description: "0x + 64 hex" }, P.range],
      responses: { 200: { description: "bytes", binary: true }, 206: { description: "range", binary: true }, 400: E400, 404: E404, 416: { description: "range not satisfiable" }, 503: E503 },
    },
    "/v1/blobs/by-object-id/:object_id",
    async (req) => {
      const id = req.params[0].toLowerCase();
      if (!isObjectId(id)) throw new HttpError(400, "object id must be 0x followed by 64 hex digits");
      const o = (await q.walrusObject(id)) ?? (await confirmMiss([{ kind: KIND.blob, subjects: subjectOf(KIND.blob, walrusAggregateId(id)) }], () => q.walrusObject(id)));
      if (!o) throw new HttpError(404, `blob object ${id} not found`);
      await readLatency(profile);
      return serve(req, { blobId: o.blob_id, size: o.size, contentType: "application/octet-stream", etag: `"${o.blob_id}"`, immutable: true });
    },
  );

  route(
    {
      method: "get",
      path: "/v1/blobs/{blob_id}",
      summary: "Walrus aggregator: read a blob by blob id",
      tag: "Walrus",
      auth: "public",
      params: [P.blobId, P.range],
      responses: { 200: { description: "bytes", binary: true }, 206: { description: "range", binary: true }, 400: E400, 404: E404, 416: { description: "range not satisfiable" }, 503: E503 },
    },
    "/v1/blobs/:blob_id",
    async (req) => {
      await readLatency(profile);
      return serveByBlobId(req, req.params[0]);
    },
  );
}
