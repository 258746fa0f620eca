// Network presets: the public values of testnet and mainnet under the operator's variables, and what the refusal
// of `memrelay start --network` still names once a preset filled in what is public.
import { describe, expect, it } from "vitest";
import { NETWORK_PRESETS, withNetworkPreset } from "../config/network-presets.ts";
import { missingNetworkVariables } from "../cli/start-network.ts";
import { parseServerConfigs } from "../adapters/encryption/config.ts";

const deployer = {
  MEMORY_PACKAGE_ID: "0x" + "1".repeat(64),
  MEMORY_REGISTRY_ID: "0x" + "2".repeat(64),
  SERVER_CHAIN_PRIVATE_KEYS: "aa".repeat(32),
  SPONSOR_PRIVATE_KEY: "bb".repeat(32),
};

describe("network presets", () => {
  it("fill in testnet's public endpoints and key servers; the refusal names only what a deployer publishes and funds", () => {
    const env = withNetworkPreset("testnet", {});
    expect(env).toMatchObject({
      CHAIN_RPC_URL: "https://fullnode.testnet.sui.io:443",
      BLOBSTORE_PUBLISHER_URL: "https://publisher.walrus-testnet.walrus.space",
      BLOBSTORE_AGGREGATOR_URL: "https://aggregator.walrus-testnet.walrus.space",
    });
    expect(parseServerConfigs(env)).toEqual([
      { objectId: "0x73d05d62c18d9374e3ea529e8e0ed6161da1a141a94d3f76ae3fe4e99356db75", weight: 1 },
      { objectId: "0xf5d14a81a982144ae441cd7d64b09027f116a468bd36e7eca494f750591623c8", weight: 1 },
    ]);
    expect(missingNetworkVariables(env)).toEqual(["MEMORY_PACKAGE_ID", "MEMORY_REGISTRY_ID", "SERVER_CHAIN_PRIVATE_KEY(S)", "SPONSOR_PRIVATE_KEY"]);
    expect(missingNetworkVariables(withNetworkPreset("testnet", deployer))).toEqual([]);
    // a gRPC endpoint stands in for the JSON-RPC one
    const grpcOnly = { ...withNetworkPreset("testnet", deployer), CHAIN_RPC_URL: undefined, CHAIN_GRPC_URL: "https://fullnode.testnet.sui.io:443" };
    expect(missingNetworkVariables(grpcOnly)).toEqual([]);
    expect(missingNetworkVariables({ ...grpcOnly, CHAIN_GRPC_URL: undefined })).toEqual(["CHAIN_RPC_URL (or CHAIN_GRPC_URL)"]);
  });

  it("leave mainnet's publisher to the deployer: there is no public one", () => {
    const env = withNetworkPreset("mainnet", deployer);
    expect(env.BLOBSTORE_PUBLISHER_URL).toBeUndefined();
    expect(env).toMatchObject({ CHAIN_RPC_URL: "https://fullnode.mainnet.sui.io:443", BLOBSTORE_AGGREGATOR_URL: "https://aggregator.walrus-mainnet.walrus.space" });
    expect(env.WAL_COIN_TYPE).toMatch(/^0x[0-9a-f]{64}::wal::WAL$/);
    expect(parseServerConfigs(env)).toHaveLength(2);
    expect(missingNetworkVariables(env)).toEqual(["BLOBSTORE_PUBLISHER_URL"]);
    expect(missingNetworkVariables(withNetworkPreset("mainnet", {}))).toEqual(["MEMORY_PACKAGE_ID", "MEMORY_REGISTRY_ID", "BLOBSTORE_PUBLISHER_URL", "SERVER_CHAIN_PRIVATE_KEY(S)", "SPONSOR_PRIVATE_KEY"]);
  });

  it("lose to every variable the operator set, including the legacy key-server list that replaces the configs", () => {
    const own = { CHAIN_RPC_URL: "https://rpc.example", BLOBSTORE_AGGREGATOR_URL: "https://agg.example", ENCRYPTION_KEY_SERVERS: "0x" + "3".repeat(64) };
    const env = withNetworkPreset("testnet", own);
    expect(env).toMatchObject(own);
    expect(env.ENCRYPTION_SERVER_CONFIGS).toBeUndefined(); // else it would shadow the operator's legacy list
    expect(parseServerConfigs(env)).toEqual([{ objectId: "0x" + "3".repeat(64), weight: 1 }]);
    expect(env.BLOBSTORE_PUBLISHER_URL).toBe(NETWORK_PRESETS.testnet!.BLOBSTORE_PUBLISHER_URL);
    // an empty variable counts as unset, as everywhere in the configuration
    expect(withNetworkPreset("testnet", { CHAIN_RPC_URL: " " }).CHAIN_RPC_URL).toBe("https://fullnode.testnet.sui.io:443");
  });

  it("leave other networks alone", () => {
    const env = { CHAIN_RPC_URL: "http://127.0.0.1:9000" };
    expect(withNetworkPreset("memnet", env)).toBe(env);
    expect(withNetworkPreset(undefined, env)).toBe(env);
    expect(missingNetworkVariables(withNetworkPreset("devnet", {}))).toContain("CHAIN_RPC_URL (or CHAIN_GRPC_URL)");
  });
});
