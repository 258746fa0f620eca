// The unmodified `@mysten/walrus` WalrusClient against the local stack: the ledger serves the Walrus system and
// staking objects (walrus-deployment.ts) over its Sui JSON-RPC; local storage nodes take metadata and slivers and sign
// confirmations; the ledger executes register_blob / certify_blob.
import { describe, expect, it } from "vitest";
import { WalrusClient } from "@mysten/walrus";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { bls12_381 } from "@noble/curves/bls12-381.js";
import { startChainRpcServer } from "../adapters/chain/local/rpc/server.ts";
import { ledgerObjectSource } from "../adapters/chain/local/rpc/ledger-source.ts";
import { localWalrusIds, localWalrusNodeId, walrusDeploymentObjects, LOCAL_WALRUS_EPOCH } from "../adapters/chain/local/walrus-deployment.ts";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { startLocalCommittee, type LocalCommittee } from "../adapters/walrus-nodes/local-committee.ts";
import type { ChainRpcServerHandle } from "../adapters/chain/local/rpc/server.ts";
import { NETWORK, PACKAGE_ID, a, operator, useLocalChainSuite } from "./support/local-chain-suite.ts";
import { mint } from "../adapters/chain/local/accounts.ts";
import { GAS_FEE_MIST } from "../adapters/chain/local/model.ts";

useLocalChainSuite();

/** A committee of four storage nodes, the deployment published on the ledger, and the ledger's RPC. */
async function walrusStack(dir: string): Promise<{ committee: LocalCommittee; rpc: ChainRpcServerHandle; client: () => WalrusClient }> {
  const committee = await startLocalCommittee({ dir, network: NETWORK });
  for (const { objectId, input } of walrusDeploymentObjects(committee.deployment)) await a.putObject(objectId, input);
  const rpc = await startChainRpcServer({ objects: ledgerObjectSource(a, { packageIds: [PACKAGE_ID], accounts: a }), transactions: a, chainName: NETWORK });
  const ids = localWalrusIds(NETWORK);
  const client = () => new WalrusClient({ packageConfig: { systemObjectId: ids.systemObjectId, stakingPoolId: ids.stakingObjectId }, suiClient: new SuiJsonRpcClient({ url: rpc.url, network: "localnet" }), storageNodeUrlScheme: "http" });
  return { committee, rpc, client };
}

async function fundedSigner(wal = 1_000_000n): Promise<Ed25519Keypair> {
  const kp = Ed25519Keypair.generate();
  await mint(a, { operatorKey: operator.secretKey, to: kp.toSuiAddress(), amount: 10n ** 9n });
  await a.mint(kp.toSuiAddress(), wal, "WAL");
  return kp;
}

describe("WalrusClient reads the local Walrus deployment", () => {
  it("system state, staking state and committee parse from the ledger's objects", async () => {
    const keys = [0, 1, 2, 3].map(() => bls12_381.longSignatures.keygen());
    const shards = [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]];
    for (const { objectId, input } of walrusDeploymentObjects({
      network: NETWORK,
      nShards: 10,
      nodes: keys.map((k, i) => ({ name: `node-${i}`, networkAddress: `127.0.0.1:${9100 + i}`, publicKey: k.publicKey.toBytes(true), shards: shards[i]! })),
      storagePricePerUnit: 100n,
      writePricePerUnit: 200n,
      totalCapacity: 1n << 40n,
    })) await a.putObject(objectId, input);
    const rpc = await startChainRpcServer({ objects: ledgerObjectSource(a, { packageIds: [PACKAGE_ID], accounts: a }), transactions: a, chainName: NETWORK });
    try {
      const ids = localWalrusIds(NETWORK);
      const walrus = new WalrusClient({ packageConfig: { systemObjectId: ids.systemObjectId, stakingPoolId: ids.stakingObjectId }, suiClient: new SuiJsonRpcClient({ url: rpc.url, network: "localnet" }), storageNodeUrlScheme: "http" });
      const system = await walrus.systemState();
      expect(system.committee.n_shards).toBe(10);
      expect(system.committee.epoch).toBe(LOCAL_WALRUS_EPOCH);
      expect(system.committee.members.map((m) => m.weight)).toEqual([3, 3, 2, 2]);
      expect(system.storage_price_per_unit_size).toBe("100");
      const staking = await walrus.stakingState();
      expect(staking.epoch_state.$kind).toBe("EpochChangeDone");
      expect(staking.committee[0].contents.map((e) => e.key)).toEqual([0, 1, 2, 3].map((i) => localWalrusNodeId(NETWORK, i)));
      expect(await walrus.getBlobType()).toBe(`${ids.packageId}::blob::Blob`);
      // the committee's nodes come from their StakingPool objects: encodeBlob places each node's shards' slivers
      const encoded = await walrus.encodeBlob(new TextEncoder().encode("committee"));
      expect(encoded.sliversByNode.map((n) => n.primary.map((s) => s.shardIndex).sort((x, y) => x - y))).toEqual(shards);
      const cost = await walrus.storageCost(1000, 3);
      expect(cost).toEqual({ storageCost: 300n, writeCost: 200n, totalCost: 500n });
    } finally {
      await rpc.close();
    }
  });
});

describe("WalrusClient writes and reads blobs on the local stack", () => {
  let dir: string;
  let stack: Awaited<ReturnType<typeof walrusStack>>;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "walrus-nodes-"));
    stack = await walrusStack(dir);
  });
  afterAll(async () => {
    await stack?.rpc.close();
    await stack?.committee.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("writeBlob registers, uploads to the nodes and certifies with their aggregate signature; readBlob returns the bytes", async () => {
    const signer = await fundedSigner();
    const owner = signer.toSuiAddress();
    const ids = localWalrusIds(NETWORK);
    const walrus = stack.client();
    const blob = new TextEncoder().encode("a memory worth keeping ".repeat(40));
    const systemWalBefore = (await a.balance(ids.systemObjectId)).balances.WAL ?? 0n;
    const { blobId, blobObject } = await walrus.writeBlob({ blob, deletable: true, epochs: 3, signer });
    expect(blobObject.certified_epoch).toBe(LOCAL_WALRUS_EPOCH);
    expect(blobObject.registered_epoch).toBe(LOCAL_WALRUS_EPOCH);
    expect(blobObject.storage.end_epoch).toBe(LOCAL_WALRUS_EPOCH + 3);
    expect(blobObject.deletable).toBe(true);
    expect(blobObject.size).toBe(String(blob.length));
    // the sender paid the storage for 3 epochs and the write, to the System; and the gas of two transactions
    const { totalCost } = await walrus.storageCost(blob.length, 3);
    const balances = (await a.balance(owner)).balances;
    expect(balances.WAL).toBe(1_000_000n - totalCost);
    expect(balances.SUI).toBe(10n ** 9n - 2n * GAS_FEE_MIST);
    expect((await a.balance(ids.systemObjectId)).balances.WAL).toBe(systemWalBefore + totalCost);
    // the certified Blob is an object the sender owns, at its second version (registered, then certified)
    const stored = await a.getObject(blobObject.id);
    expect(stored).toMatchObject({ type: `${ids.packageId}::blob::Blob`, version: "2", owner: { AddressOwner: owner } });
    // every node kept its shards' slivers on disk
    for (const [i, shards] of stack.committee.deployment.nodes.map((n) => n.shards).entries()) {
      expect(readdirSync(join(dir, `node-${i}`, "blobs", Buffer.from(blobId, "base64url").toString("hex"))).filter((f) => f !== "metadata")).toHaveLength(2 * shards.length);
    }
    const read = await stack.client().readBlob({ blobId });
    expect(Buffer.from(read).equals(Buffer.from(blob))).toBe(true);
  });
});
