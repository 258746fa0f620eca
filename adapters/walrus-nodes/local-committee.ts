// The local Walrus committee: n storage nodes on loopback, each with its own BLS key (persisted in `dir`, 0600) and a
// contiguous range of the shards, and the deployment that describes them on the ledger (walrus-deployment.ts). A
// restart with the same directory keeps each node's key and stored slivers; the deployment is published again after
// each start, since the nodes' ports may change.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bls12_381 } from "@noble/curves/bls12-381.js";
import { LOCAL_WALRUS_EPOCH, type WalrusDeploymentSpec } from "../chain/local/walrus-deployment.ts";
import { startStorageNode, type StorageNodeHandle, type StorageNodeOptions } from "./storage-node.ts";

export interface LocalCommitteeOptions {
  readonly dir: string;
  readonly network: string;
  /** Nodes (default 4). */
  readonly count?: number;
  /** Shards (default 10); every node holds at least one. */
  readonly nShards?: number;
  readonly host?: string;
  /** Fixed ports per node; default ephemeral. */
  readonly ports?: readonly number[];
  /** Passed to every node (storage-node.ts). */
  readonly registrations?: StorageNodeOptions["registrations"];
  /** Passed to every node: MEMRELAY_NETWORK_PROFILE's storage-node write and read latency. */
  readonly latency?: StorageNodeOptions["latency"];
  readonly storagePricePerUnit?: bigint;
  readonly writePricePerUnit?: bigint;
}

export interface LocalCommittee {
  readonly nodes: readonly StorageNodeHandle[];
  /** What the operator publishes on the ledger for these nodes. */
  readonly deployment: WalrusDeploymentSpec;
  /** Stops one node (fault tests); the others keep serving. */
  stop(index: number): Promise<void>;
  close(): Promise<void>;
}

/** Contiguous shard ranges, the first nodes taking one more when n does not divide evenly. */
export function assignShards(nShards: number, count: number): number[][] {
  const out: number[][] = [];
  let next = 0;
  for (let i = 0; i < count; i++) {
    const take = Math.floor(nShards / count) + (i < nShards % count ? 1 : 0);
    out.push(Array.from({ length: take }, (_, k) => next + k));
    next += take;
  }
  return out;
}

function loadOrCreateSecretKey(file: string): Uint8Array {
  if (existsSync(file)) {
    const hex = readFileSync(file, "utf8").trim();
    if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`storage node key ${file} is malformed`);
    chmodSync(file, 0o600);
    return new Uint8Array(Buffer.from(hex, "hex"));
  }
  const { secretKey } = bls12_381.longSignatures.keygen();
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, Buffer.from(secretKey).toString("hex") + "\n", { mode: 0o600 });
  renameSync(tmp, file);
  return secretKey;
}

export async function startLocalCommittee(opts: LocalCommitteeOptions): Promise<LocalCommittee> {
  const count = opts.count ?? 4;
  const nShards = opts.nShards ?? 10;
  if (count < 1 || nShards < count) throw new Error("a committee needs at least one node and one shard per node");
  const shards = assignShards(nShards, count);
  const nodes: StorageNodeHandle[] = [];
  const stopped = new Set<number>();
  try {
    for (let i = 0; i < count; i++) {
      const dir = join(opts.dir, `node-${i}`);
      mkdirSync(join(dir, "blobs"), { recursive: true, mode: 0o700 });
      nodes.push(
        await startStorageNode({
          dir: join(dir, "blobs"),
          nShards,
          shards: shards[i]!,
          epoch: LOCAL_WALRUS_EPOCH,
          secretKey: loadOrCreateSecretKey(join(dir, "bls.key")),
          registrations: opts.registrations,
          latency: opts.latency,
          host: opts.host,
          port: opts.ports?.[i],
        }),
      );
    }
  } catch (err) {
    await Promise.all(nodes.map((n) => n.close()));
    throw err;
  }
  return {
    nodes,
    deployment: {
      network: opts.network,
      nShards,
      nodes: nodes.map((n, i) => ({ name: `memrelay-local-${i}`, networkAddress: n.networkAddress, publicKey: n.publicKey, shards: shards[i]! })),
      storagePricePerUnit: opts.storagePricePerUnit ?? 100n,
      writePricePerUnit: opts.writePricePerUnit ?? 200n,
      totalCapacity: 1n << 40n,
    },
    async stop(index: number) {
      if (stopped.has(index)) return;
      stopped.add(index);
      await nodes[index]?.close();
    },
    async close() {
      await Promise.all(nodes.map((n, i) => (stopped.has(i) ? undefined : n.close())));
    },
  };
}
