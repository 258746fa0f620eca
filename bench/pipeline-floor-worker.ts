// The pipeline floor of the peer section (bench/sections/peer.ts): `memrelay worker --roles actors` as it runs in
// production — the same command consumer, remember-job machine, embedder, envelope encryption, event appends and
// lexical terms — with its two outside effects stood in by ports that do no I/O:
//   - the blob upload returns the bytes' SHA-256 as the blob id (what the blob store would answer, unstored);
//   - the chain record returns each blob's object at its derived id (what the ledger would record, unrecorded).
// The gateway, projections, NATS and Postgres are the run's own. What memrelay's event-sourced pipeline costs per
// memory before a blob or a chain write is done: the floor its remember → done can approach, measured beside mem0.
// Bench code only: nothing in the relayer can start it.
import { createHash } from "node:crypto";
import { loadConfig } from "../config/env.ts";
import { createLogger } from "../config/logger.ts";
import { startWorker } from "../runtime/worker.ts";
import { deriveBlobObjectId } from "../adapters/chain/local/tx.ts";
import type { RelayerPorts } from "../runtime/relayer-stack.ts";
import type { BlobObject, BlobPort, BlobRecordInput, ChainPort } from "../adapters/ports.ts";

const config = loadConfig(process.env);
// Sponsored registrations go through another chain (runtime/sponsorship.ts) that the stand-in below would not cover.
if (config.sponsor.durableRegister) throw new Error("the pipeline floor stands in for direct chain records: unset SPONSOR_DURABLE_REGISTER_ENABLED");

function unstoredBlobs(real: BlobPort): BlobPort {
  return {
    store: async (bytes) => ({ blobId: createHash("sha256").update(bytes).digest("base64url"), size: bytes.byteLength, alreadyCertified: false }),
    storeQuilt: async (patches) => ({ quiltId: createHash("sha256").update(patches.map((p) => p.identifier).join()).digest("base64url"), patchIds: new Map(patches.map((p) => [p.identifier, createHash("sha256").update(p.contents).digest("base64url")])) }),
    read: (blobId) => real.read(blobId),
  };
}

/** The chain port with `recordBlobs` answered without a transaction; every other call goes to the real chain. */
function unrecordedBlobs(real: ChainPort): ChainPort {
  const recordBlobs = async (inputs: readonly BlobRecordInput[]): Promise<BlobObject[]> =>
    inputs.map((i) => ({ objectId: deriveBlobObjectId(config.registryId, i.owner, i.blobId), blobId: i.blobId, owner: i.owner, namespace: i.namespace, packageId: config.packageId, createdAtMs: Date.now(), size: i.size }));
  return new Proxy(real, { get: (target, key, receiver) => (key === "recordBlobs" ? recordBlobs : Reflect.get(target, key, receiver)) });
}

const worker = await startWorker(config, { gateway: false, actors: true, projections: false, mcp: false }, createLogger({ format: config.logFormat }), process.env, undefined, (ports: RelayerPorts) => ({
  ...ports,
  blobs: unstoredBlobs(ports.blobs),
  chain: unrecordedBlobs(ports.chain),
}));
console.log("ready");
const stop = async () => {
  await worker.stop();
  process.exit(0);
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
