// One local Walrus storage node: the storage-node REST API `@mysten/walrus`'s StorageNodeClient calls, over node:http.
//
//   PUT/GET /v1/blobs/{id}/metadata                      BCS BlobMetadata in; BCS BlobMetadataWithId out
//                                                        (reads only while the blob is registered: a deleted or
//                                                        expired one is removed from disk)
//   GET     /v1/blobs/{id}/metadata/status               "Stored" | "Nonexistent"
//   PUT/GET /v1/blobs/{id}/slivers/{pair}/{type}          BCS SliverData, for the pairs this node's shards hold
//   GET     /v1/blobs/{id}/slivers/{pair}/{type}/status   "Stored" | "Nonexistent"
//   GET     /v1/blobs/{id}/confirmation/permanent         a BLS signature over the storage confirmation message,
//   GET     /v1/blobs/{id}/confirmation/deletable/{obj}   once every sliver of its shards is stored
//   GET     /v1/blobs/{id}/status                        nonexistent | permanent | deletable, from the chain
//
// Metadata is accepted only when it derives the blob id in the path (Merkle root over the sliver-pair hashes, as
// `register_blob` derives it on chain) and, when the node is told how, only for a blob registered on chain (and a
// confirmation only for a registered object of that persistence); slivers
// only for the node's own shards, with the symbol size and length that metadata implies. Errors use the storage
// nodes' JSON shape `{error: {code, status, message, details}}`, which the SDK turns into its typed errors.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { bcs, type BcsType } from "@mysten/sui/bcs";
import { bls12_381 } from "@noble/curves/bls12-381.js";
import { SliverStore, type SliverType } from "./sliver-store.ts";
import { networkDelay } from "../network-latency.ts";
import type { LatencyRange } from "../../config/network-profile.ts";
import { BlobMetadataBcs, blobIdFromString, blobIdToString, confirmationMessage, deriveBlobId, metadataRootHash, RS2_ENCODING, sourceSymbols, symbolSize, type BlobPersistence, type WalrusRegistration } from "../chain/local/walrus-layouts.ts";

const SliverDataBcs = bcs.struct("SliverData", { symbols: bcs.struct("Symbols", { data: bcs.byteVector(), symbol_size: bcs.u16() }), index: bcs.u16() });
const OBJECT_ID_RE = /^0x[0-9a-f]{64}$/;

export interface StorageNodeOptions {
  /** Where the node keeps metadata and slivers. */
  readonly dir: string;
  readonly nShards: number;
  /** The shards this node holds in the current committee. */
  readonly shards: readonly number[];
  readonly epoch: number;
  /** 32-byte BLS12-381 secret key (min-pk: public key in G1, signatures in G2). */
  readonly secretKey: Uint8Array;
  /**
   * The Blob objects the chain has registered for a blob id (a real node follows the chain's events): metadata is
   * stored and confirmations signed only for a registration in force, and the blob status is read from them. Absent:
   * registrations are not checked and the status is not served.
   */
  readonly registrations?: (blobId: string) => Promise<readonly WalrusRegistration[]>;
  readonly host?: string;
  readonly port?: number;
  /** Largest accepted body (a sliver of a 13 MiB blob is about 1 MiB). Default 16 MiB. */
  readonly maxBodyBytes?: number;
  /** MEMRELAY_NETWORK_PROFILE: how long a write (PUT) and a read (GET) take on a real node; default no wait. */
  readonly latency?: { readonly write: LatencyRange; readonly read: LatencyRange };
}

export interface StorageNodeHandle {
  readonly url: string;
  /** host:port, the node's network address on chain. */
  readonly networkAddress: string;
  readonly publicKey: Uint8Array;
  close(): Promise<void>;
}

class NodeError extends Error {
  constructor(readonly status: number, message: string, readonly reason?: string) {
    super(message);
  }
}

/** The sliver-pair rotation of a blob (the SDK's rotationOffset over the blob id's bytes). */
function rotationOffset(blobId: Uint8Array, nShards: number): number {
  return blobId.reduce((acc, byte) => (acc * 256 + byte) % nShards, 0);
}

const shardOfPair = (pair: number, blobId: Uint8Array, nShards: number) => (pair + rotationOffset(blobId, nShards)) % nShards;

export async function startStorageNode(opts: StorageNodeOptions): Promise<StorageNodeHandle> {
  const store = new SliverStore(opts.dir);
  const bls = bls12_381.longSignatures;
  const publicKey = bls.getPublicKey(opts.secretKey).toBytes(true);
  const shards = new Set(opts.shards);
  const maxBody = opts.maxBodyBytes ?? 16 << 20;

  const pairsOf = (blobId: Uint8Array) => [...Array(opts.nShards).keys()].filter((pair) => shards.has(shardOfPair(pair, blobId, opts.nShards)));

  async function body(req: IncomingMessage): Promise<Uint8Array> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > maxBody) throw new NodeError(413, `body larger than ${maxBody} bytes`);
      chunks.push(c as Buffer);
    }
    return new Uint8Array(Buffer.concat(chunks));
  }

  /** BCS that parses and re-serialises to exactly the bytes given (no trailing or non-canonical bytes). */
  function strictParse<T, I>(type: BcsType<T, I>, bytes: Uint8Array, what: string): T {
    let value: T;
    try {
      value = type.parse(bytes);
    } catch {
      throw new NodeError(400, `${what} is not valid BCS`);
    }
    if (Buffer.compare(Buffer.from(type.serialize(value as unknown as I).toBytes()), Buffer.from(bytes)) !== 0) throw new NodeError(400, `${what} has trailing or non-canonical bytes`);
    return value;
  }

  async function metadataOf(blobId: Uint8Array) {
    const bytes = await store.getMetadata(blobId);
    return bytes ? BlobMetadataBcs.parse(bytes) : null;
  }

  async function putMetadata(id: string, blobId: Uint8Array, bytes: Uint8Array): Promise<unknown> {
    const metadata = strictParse(BlobMetadataBcs, bytes, "metadata");
    if (!metadata.V1.encoding_type.RS2) throw new NodeError(400, "only RS2-encoded blobs are stored");
    if (metadata.V1.hashes.length !== opts.nShards) throw new NodeError(400, `metadata must hash ${opts.nShards} sliver pairs`);
    const derived = deriveBlobId(metadataRootHash(metadata), RS2_ENCODING, BigInt(metadata.V1.unencoded_length));
    if (Buffer.compare(Buffer.from(derived), Buffer.from(blobId)) !== 0) throw new NodeError(400, `metadata does not match blob ${id} (it derives ${blobIdToString(derived)})`);
    if (opts.registrations && !(await inForce(id)).length) throw new NodeError(400, `blob ${id} is not registered`, "NOT_REGISTERED");
    await store.putMetadata(blobId, bytes);
    return "metadata successfully stored";
  }

  async function putSliver(blobId: Uint8Array, pair: number, type: SliverType, bytes: Uint8Array): Promise<unknown> {
    const metadata = await metadataOf(blobId);
    if (!metadata) throw new NodeError(400, "store the blob's metadata before its slivers", "NOT_REGISTERED");
    const sliver = strictParse(SliverDataBcs, bytes, "sliver");
    const size = symbolSize(Number(metadata.V1.unencoded_length), opts.nShards);
    const symbols = sourceSymbols(opts.nShards);
    const expected = type === "primary" ? { index: pair, length: symbols.secondary * size } : { index: opts.nShards - 1 - pair, length: symbols.primary * size };
    if (sliver.index !== expected.index) throw new NodeError(400, `a ${type} sliver of pair ${pair} has index ${expected.index}`);
    if (sliver.symbols.symbol_size !== size || sliver.symbols.data.length !== expected.length) {
      throw new NodeError(400, `a ${type} sliver of this blob has ${expected.length} bytes in symbols of ${size}`);
    }
    await store.putSliver(blobId, pair, type, bytes);
    return "sliver stored successfully";
  }

  /** Registrations whose storage still covers the current epoch. */
  async function inForce(id: string): Promise<readonly WalrusRegistration[]> {
    return (await opts.registrations?.(id) ?? []).filter((r) => r.endEpoch > opts.epoch);
  }

  /** Reads serve a blob only while the chain has it registered; one deleted or expired is removed from disk. */
  async function servable(id: string, blobId: Uint8Array): Promise<void> {
    if (!opts.registrations || (await inForce(id)).length) return;
    await store.remove(blobId);
    throw new NodeError(404, `blob ${id} is not registered (deleted or expired): nothing is kept for it`);
  }

  async function confirm(id: string, blobId: Uint8Array, persistence: BlobPersistence): Promise<unknown> {
    if (opts.registrations) {
      const registered = await inForce(id);
      const matches = persistence.deletable ? registered.some((r) => r.deletable && r.objectId === persistence.objectId) : registered.some((r) => !r.deletable);
      if (!matches) throw new NodeError(400, persistence.deletable ? `no deletable blob object ${persistence.objectId} of blob ${id} is registered` : `blob ${id} is not registered as permanent`, "NOT_REGISTERED");
    }
    if (!(await metadataOf(blobId))) throw new NodeError(404, `blob ${id} is not stored here`);
    for (const pair of pairsOf(blobId)) {
      for (const type of ["primary", "secondary"] as const) {
        if (!(await store.getSliver(blobId, pair, type))) throw new NodeError(404, `the ${type} sliver of pair ${pair} is not stored yet`);
      }
    }
    const message = confirmationMessage(opts.epoch, blobId, persistence);
    const signature = bls.sign(bls.hash(message), opts.secretKey).toBytes(true);
    return { signed: { serializedMessage: Buffer.from(message).toString("base64"), signature: Buffer.from(signature).toString("base64") } };
  }

  function pairIndex(raw: string, blobId: Uint8Array): number {
    const pair = /^(0|[1-9][0-9]{0,4})$/.test(raw) ? Number(raw) : -1;
    if (pair < 0 || pair >= opts.nShards) throw new NodeError(400, `sliver pair index must be 0..${opts.nShards - 1}`);
    if (!shards.has(shardOfPair(pair, blobId, opts.nShards))) throw new NodeError(421, `pair ${pair} of this blob is on shard ${shardOfPair(pair, blobId, opts.nShards)}, not held by this node`);
    return pair;
  }

  const ok = (res: ServerResponse, data: unknown) => json(res, 200, { success: { code: 200, data } });

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://node").pathname;
    const m = /^\/v1\/blobs\/([^/]+)(\/.*)?$/.exec(path);
    if (!m) throw new NodeError(404, "no such route");
    const id = m[1]!;
    const blobId = blobIdFromString(id);
    if (!blobId) throw new NodeError(400, "blob id must be 32 bytes as URL-safe base64 without padding");
    const rest = m[2] ?? "";
    const method = req.method ?? "GET";
    if (rest === "/metadata") {
      if (method === "PUT") return ok(res, await putMetadata(id, blobId, await body(req)));
      if (method !== "GET") throw new NodeError(405, "GET or PUT");
      await servable(id, blobId);
      const metadata = await store.getMetadata(blobId);
      if (!metadata) throw new NodeError(404, `no metadata for blob ${id}`);
      res.writeHead(200, { "content-type": "application/octet-stream" });
      return void res.end(Buffer.concat([blobId, metadata]));
    }
    if (rest === "/metadata/status" && method === "GET") return ok(res, (await store.getMetadata(blobId)) ? "Stored" : "Nonexistent");
    const sliver = /^\/slivers\/([^/]+)\/(primary|secondary)(\/status)?$/.exec(rest);
    if (sliver) {
      const pair = pairIndex(sliver[1]!, blobId);
      const type = sliver[2] as SliverType;
      if (sliver[3]) {
        if (method !== "GET") throw new NodeError(405, "GET");
        return ok(res, (await store.getSliver(blobId, pair, type)) ? "Stored" : "Nonexistent");
      }
      if (method === "PUT") return ok(res, await putSliver(blobId, pair, type, await body(req)));
      if (method !== "GET") throw new NodeError(405, "GET or PUT");
      await servable(id, blobId);
      const bytes = await store.getSliver(blobId, pair, type);
      if (!bytes) throw new NodeError(404, `no ${type} sliver ${pair} for blob ${id}`);
      res.writeHead(200, { "content-type": "application/octet-stream" });
      return void res.end(bytes);
    }
    if (method === "GET" && rest === "/status" && opts.registrations) return ok(res, blobStatus(await inForce(id)));
    if (method === "GET" && rest === "/confirmation/permanent") return ok(res, await confirm(id, blobId, { deletable: false }));
    const deletable = /^\/confirmation\/deletable\/([^/]+)$/.exec(rest);
    if (method === "GET" && deletable) {
      if (!OBJECT_ID_RE.test(deletable[1]!)) throw new NodeError(400, "the blob object id must be 0x followed by 64 lower-case hex characters");
      return ok(res, await confirm(id, blobId, { deletable: true, objectId: deletable[1]! }));
    }
    throw new NodeError(404, "no such route");
  }

  // The profile's wait comes first, as a remote node's round trip would, and is a timer: the node does no more work.
  const answer = (req: IncomingMessage, res: ServerResponse) =>
    opts.latency ? networkDelay(req.method === "PUT" ? opts.latency.write : opts.latency.read).then(() => route(req, res)) : route(req, res);

  const server: Server = createServer((req, res) => {
    answer(req, res).catch((err: unknown) => {
      const e = err instanceof NodeError ? err : new NodeError(500, "internal error");
      if (res.headersSent) return void res.destroy();
      json(res, e.status, { error: { code: e.status, status: statusName(e.status), message: e.message, details: e.reason ? [{ "@type": "ErrorInfo", reason: e.reason, domain: "walrus" }] : [] } });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, opts.host ?? "127.0.0.1", () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const networkAddress = `${addr.address}:${addr.port}`;
  return {
    url: `http://${networkAddress}`,
    networkAddress,
    publicKey,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A blob's status as storage nodes report it (the SDK's getBlobStatus): permanent when a permanent registration is in
 * force, else deletable with its counts, else nonexistent. The chain event ids real nodes add are not kept here.
 */
export function blobStatus(registered: readonly WalrusRegistration[]): unknown {
  if (!registered.length) return "nonexistent";
  const certified = registered.flatMap((r) => (r.certifiedEpoch === null ? [] : [r.certifiedEpoch]));
  const initialCertifiedEpoch = certified.length ? Math.min(...certified) : null;
  const permanent = registered.filter((r) => !r.deletable);
  const deletable = registered.filter((r) => r.deletable);
  const deletableCounts = { countDeletableTotal: deletable.length, countDeletableCertified: deletable.filter((r) => r.certifiedEpoch !== null).length };
  if (permanent.length) {
    return { permanent: { endEpoch: Math.max(...permanent.map((r) => r.endEpoch)), isCertified: permanent.some((r) => r.certifiedEpoch !== null), initialCertifiedEpoch, deletableCounts } };
  }
  return { deletable: { initialCertifiedEpoch, deletableCounts } };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function statusName(status: number): string {
  return { 400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 405: "UNIMPLEMENTED", 413: "OUT_OF_RANGE", 421: "FAILED_PRECONDITION" }[status] ?? "INTERNAL";
}
