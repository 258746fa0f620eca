// The local stack as `memrelay start` runs it: an unmodified WalrusClient, given the stack's packageConfig and its
// chain RPC, writes a blob to the stack's storage nodes and reads it back, while the relayer keeps storing memories
// through the blob store's publisher/aggregator API.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WalrusClient } from "@mysten/walrus";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { loadConfig } from "../config/env.ts";

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ WALRUS_LOCAL_NODES: "5", WALRUS_LOCAL_SHARDS: "20" });
}, 120_000);
afterAll(async () => {
  await t?.teardown();
});

describe("the local stack's Walrus", () => {
  it("WalrusClient writes and reads a blob on the stack's storage nodes; remember and recall still go through the blob store", async () => {
    const { stack } = t;
    const signer = Ed25519Keypair.generate();
    await stack.chain.mint(signer.toSuiAddress(), 10n ** 9n, "SUI");
    await stack.chain.mint(signer.toSuiAddress(), 10n ** 9n, "WAL");
    // what a client needs, from the relayer's /config
    const config = (await (await fetch(`${stack.relayerUrl}/config`)).json()) as { chainRpcUrl: string; walrusPackageConfig: { systemObjectId: string; stakingPoolId: string } };
    expect(config.walrusPackageConfig).toEqual(stack.walrus.packageConfig);
    const walrus = new WalrusClient({ packageConfig: config.walrusPackageConfig, suiClient: new SuiJsonRpcClient({ url: config.chainRpcUrl, network: "localnet" }), storageNodeUrlScheme: "http" });
    // the committee WALRUS_LOCAL_NODES / WALRUS_LOCAL_SHARDS asked for
    const system = await walrus.systemState();
    expect({ members: system.committee.members.length, shards: system.committee.n_shards }).toEqual({ members: 5, shards: 20 });
    const blob = new TextEncoder().encode("written by the Walrus SDK to the local committee");
    const { blobId, blobObject } = await walrus.writeBlob({ blob, deletable: true, epochs: 2, signer });
    expect(blobObject.certified_epoch).not.toBeNull();
    expect(Buffer.from(await walrus.readBlob({ blobId })).toString()).toBe("written by the Walrus SDK to the local committee");
    // 20 shards hold blobs up to (20 − 12)(20 − 6) × 65,534 bytes ≈ 7.3 MB: a 3 MB one fits
    const large = new Uint8Array(3 << 20).map((_, i) => (i * 7919) & 255);
    const written = await walrus.writeBlob({ blob: large, deletable: false, epochs: 1, signer });
    expect(Buffer.from(await walrus.readBlob({ blobId: written.blobId })).equals(Buffer.from(large))).toBe(true);

    const client = await t.client();
    const job = await client.rememberAndWait("I keep my notes on Walrus");
    expect(job.status).toBe("done");
    const hits = await client.recall("where are my notes?");
    expect(hits.results.map((r: { text: string }) => r.text)).toContain("I keep my notes on Walrus");
  }, 120_000);
});

describe("WALRUS_LOCAL_NODES and WALRUS_LOCAL_SHARDS", () => {
  it("default to 4 and 10, fall back on values out of range, and give every node a shard", () => {
    const of = (env: Record<string, string>) => {
      const c = loadConfig(env);
      return [c.walrusLocalNodes, c.walrusLocalShards];
    };
    expect(of({})).toEqual([4, 10]);
    expect(of({ WALRUS_LOCAL_NODES: "7", WALRUS_LOCAL_SHARDS: "31" })).toEqual([7, 31]);
    expect(of({ WALRUS_LOCAL_NODES: "0", WALRUS_LOCAL_SHARDS: "-3" })).toEqual([4, 10]);
    expect(of({ WALRUS_LOCAL_NODES: "many", WALRUS_LOCAL_SHARDS: "2.5" })).toEqual([4, 10]);
    expect(of({ WALRUS_LOCAL_NODES: "12", WALRUS_LOCAL_SHARDS: "5" })).toEqual([12, 12]);
  });
});
