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
import { NETWORK, PACKAGE_ID, a, useLocalChainSuite } from "./support/local-chain-suite.ts";

useLocalChainSuite();

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
