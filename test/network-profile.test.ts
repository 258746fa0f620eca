// The network profile's pure parts: which profile MEMRELAY_NETWORK_PROFILE names, the latency helper driven by a fake
// clock, Sui's owned-object rule (adapters/chain/local/owned-object-locks.ts), and a storage node's waits over HTTP.
import { afterEach, describe, expect, it, vi } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bls12_381 } from "@noble/curves/bls12-381.js";
import { startStorageNode } from "../adapters/walrus-nodes/storage-node.ts";
import { loadConfig } from "../config/env.ts";
import { expectedTxMs, NETWORK_PROFILES, networkProfileFromEnv } from "../config/network-profile.ts";
import { TransactionWallets, networkDelay, sampleLatency } from "../adapters/network-latency.ts";
import { gasCoinId, isObjectLockConflict, objectLockConflictMessage, OwnedObjectLocks } from "../adapters/chain/local/owned-object-locks.ts";

describe("MEMRELAY_NETWORK_PROFILE", () => {
  it("defaults to local, which waits for nothing and locks nothing", () => {
    const p = networkProfileFromEnv({});
    expect(p.name).toBe("local");
    for (const r of [p.ownedTxFinality, p.sharedTxFinality, p.storageNodeWrite, p.storageNodeRead]) expect(r.maxMs).toBe(0);
    expect(p.ownedObjectLocks).toBe(false);
  });

  it("names testnet and mainnet, case and spaces aside", () => {
    expect(networkProfileFromEnv({ MEMRELAY_NETWORK_PROFILE: " TestNet " }).name).toBe("testnet");
    expect(networkProfileFromEnv({ MEMRELAY_NETWORK_PROFILE: "mainnet" })).toBe(NETWORK_PROFILES.mainnet);
    expect(networkProfileFromEnv({ MEMRELAY_NETWORK_PROFILE: "" }).name).toBe("local");
  });

  it("refuses an unknown profile instead of running as local", () => {
    expect(() => networkProfileFromEnv({ MEMRELAY_NETWORK_PROFILE: "devnet" })).toThrow(/one of local, testnet, mainnet, not "devnet"/);
  });

  it("reads the wallets whose transactions hang from MEMRELAY_NETWORK_STALLED_WALLETS, and refuses what is no address", () => {
    const a = "0x" + "ab".repeat(32);
    const b = "0x" + "CD".repeat(32);
    const p = networkProfileFromEnv({ MEMRELAY_NETWORK_PROFILE: "testnet", MEMRELAY_NETWORK_STALLED_WALLETS: ` ${a}, ${b} ` });
    expect([...p.stalledWallets]).toEqual([a, b.toLowerCase()]);
    expect(p.sharedTxFinality).toBe(NETWORK_PROFILES.testnet.sharedTxFinality);
    expect(networkProfileFromEnv({ MEMRELAY_NETWORK_PROFILE: "testnet" }).stalledWallets.size).toBe(0);
    expect(p.stallSwitch).toBeUndefined();
    expect(networkProfileFromEnv({ MEMRELAY_NETWORK_STALLED_WALLETS: a, MEMRELAY_NETWORK_STALL_SWITCH: " /tmp/stall-now " }).stallSwitch).toBe("/tmp/stall-now");
    expect(() => networkProfileFromEnv({ MEMRELAY_NETWORK_STALLED_WALLETS: "0x12" })).toThrow(/MEMRELAY_NETWORK_STALLED_WALLETS must list Sui addresses \(0x \+ 64 hex\), not "0x12"/);
  });

  it("expects a transaction to take the slowest published finality of the network the relayer writes to", () => {
    // the local ledger, as its profile makes it
    expect(expectedTxMs("localnet", NETWORK_PROFILES.local)).toBe(0);
    expect(expectedTxMs("localnet", NETWORK_PROFILES.testnet)).toBe(NETWORK_PROFILES.testnet.ownedTxFinality.maxMs);
    // a real network: its own published figures, whatever the (local stack's) profile
    expect(expectedTxMs("testnet", NETWORK_PROFILES.local)).toBe(NETWORK_PROFILES.testnet.ownedTxFinality.maxMs);
    expect(expectedTxMs("mainnet", NETWORK_PROFILES.testnet)).toBe(NETWORK_PROFILES.mainnet.ownedTxFinality.maxMs);
    // no published figure: no expectation
    expect(expectedTxMs("devnet", NETWORK_PROFILES.local)).toBeUndefined();
    expect(expectedTxMs("local", NETWORK_PROFILES.testnet)).toBeUndefined();
  });

  it("gives the network profiles Walrus's publisher of 8 sub-wallets, and local an unlimited one", () => {
    expect(NETWORK_PROFILES.local.publisherSubWallets).toBe(0);
    expect(NETWORK_PROFILES.testnet.publisherSubWallets).toBe(8);
    expect(NETWORK_PROFILES.mainnet.publisherSubWallets).toBe(8);
  });

  it("keeps each range ordered, and the fast path faster than consensus", () => {
    for (const p of Object.values(NETWORK_PROFILES)) {
      for (const r of [p.ownedTxFinality, p.sharedTxFinality, p.storageNodeWrite, p.storageNodeRead]) expect(r.minMs).toBeLessThanOrEqual(r.maxMs);
      expect(p.ownedTxFinality.minMs).toBeLessThanOrEqual(p.sharedTxFinality.minMs);
    }
  });
});

describe("the operator configuration", () => {
  it("carries the profile, and stops on an unknown one", () => {
    expect(loadConfig({}).networkProfile.name).toBe("local");
    expect(loadConfig({ MEMRELAY_NETWORK_PROFILE: "testnet" }).networkProfile).toBe(NETWORK_PROFILES.testnet);
    expect(() => loadConfig({ MEMRELAY_NETWORK_PROFILE: "fast" })).toThrow(/MEMRELAY_NETWORK_PROFILE/);
  });

  it("reads the wallet pool from SERVER_CHAIN_PRIVATE_KEYS, else the singular SERVER_CHAIN_PRIVATE_KEY", () => {
    const [a, b, c] = ["11".repeat(32), "22".repeat(32), "33".repeat(32)];
    expect(loadConfig({ SERVER_CHAIN_PRIVATE_KEYS: `${a}, ${b}` }).serverChainPrivateKeys).toEqual([a, b]);
    expect(loadConfig({ SERVER_CHAIN_PRIVATE_KEY: c }).serverChainPrivateKeys).toEqual([c]);
    expect(loadConfig({ SERVER_CHAIN_PRIVATE_KEYS: a, SERVER_CHAIN_PRIVATE_KEY: c }).serverChainPrivateKeys).toEqual([a]);
  });
});

describe("the latency helper", () => {
  afterEach(() => void vi.useRealTimers());

  it("draws uniformly between the bounds", () => {
    const range = { minMs: 400, maxMs: 900 };
    expect(sampleLatency(range, () => 0)).toBe(400);
    expect(sampleLatency(range, () => 0.5)).toBe(650);
    expect(sampleLatency(range, () => 0.999999)).toBe(900);
  });

  it("sleeps on a timer: it settles exactly when the fake clock reaches the drawn latency", async () => {
    vi.useFakeTimers();
    let done = false;
    const wait = networkDelay({ minMs: 400, maxMs: 900 }, { random: () => 0.2, sleep: (ms) => new Promise((r) => setTimeout(r, ms)) }).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(499);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await wait;
    expect(done).toBe(true);
  });

  it("does not touch a timer for a zero range (the local profile)", async () => {
    const sleep = vi.fn(() => Promise.resolve());
    await networkDelay({ minMs: 0, maxMs: 0 }, { random: Math.random, sleep });
    expect(sleep).not.toHaveBeenCalled();
  });
});

describe("a publisher's sub-wallets (one transaction each at a time)", () => {
  afterEach(() => void vi.useRealTimers());
  const clock = { random: () => 0, sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)) };
  const oneSecond = { minMs: 1_000, maxMs: 1_000 };

  it("carries as many transactions at once as it has wallets; the next waits for the first one freed, in order", async () => {
    vi.useFakeTimers();
    const wallets = new TransactionWallets(2, clock);
    const ended: number[] = [];
    const txs = [0, 1, 2, 3, 4].map((i) => wallets.hold(oneSecond).then(() => ended.push(i)));
    expect(wallets.queued).toBe(3);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(ended).toEqual([0, 1]);
    expect(wallets.queued).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(ended).toEqual([0, 1, 2, 3]);
    await vi.advanceTimersByTimeAsync(1_000);
    await Promise.all(txs);
    expect(ended).toEqual([0, 1, 2, 3, 4]);
    // all freed: two go at once again
    const again = [wallets.hold(oneSecond), wallets.hold(oneSecond)];
    expect(wallets.queued).toBe(0);
    await vi.advanceTimersByTimeAsync(1_000);
    await Promise.all(again);
  });

  it("hands a wallet on even when the transaction's wait fails", async () => {
    const failing = { random: () => 0, sleep: () => Promise.reject(new Error("timer gone")) };
    const wallets = new TransactionWallets(1, failing);
    await expect(wallets.hold(oneSecond)).rejects.toThrow("timer gone");
    await expect(wallets.hold(oneSecond)).rejects.toThrow("timer gone");
    expect(wallets.queued).toBe(0);
  });

  it("with no wallets (the local profile) only waits the latency, never queues", async () => {
    vi.useFakeTimers();
    const wallets = new TransactionWallets(0, clock);
    const txs = Array.from({ length: 50 }, () => wallets.hold(oneSecond));
    expect(wallets.queued).toBe(0);
    await vi.advanceTimersByTimeAsync(1_000);
    await Promise.all(txs);
  });
});

describe("Sui's owned-object rule", () => {
  const coin = gasCoinId("0xaa");

  it("refuses a second in-flight transaction on one owned object with Sui's equivocation error", () => {
    const locks = new OwnedObjectLocks();
    expect(locks.lock([coin], "DigestA")).toBeNull();
    const conflict = locks.lock([coin], "DigestB");
    expect(conflict).toEqual({ objectId: coin, version: 0, heldBy: "DigestA" });
    const message = objectLockConflictMessage(conflict!);
    expect(message).toBe(
      `Transaction is rejected as invalid by more than 1/3 of validators by stake (non-retriable). Non-retriable errors: [Object (${coin}, SequenceNumber(0)) already locked by a different transaction: TransactionDigest(DigestA)]`,
    );
    expect(isObjectLockConflict(message)).toBe(true);
  });

  it("lets the same transaction be submitted again while it is in flight, and holds the lock until its last submission ends", () => {
    const locks = new OwnedObjectLocks();
    expect(locks.lock([coin], "DigestA")).toBeNull();
    expect(locks.lock([coin], "DigestA")).toBeNull();
    locks.unlock([coin], "DigestA", true);
    expect(locks.lock([coin], "DigestB")?.heldBy).toBe("DigestA");
    locks.unlock([coin], "DigestA", true);
    expect(locks.size).toBe(0);
  });

  it("frees the object once the first is final, at its next version", () => {
    const locks = new OwnedObjectLocks();
    locks.lock([coin], "DigestA");
    locks.unlock([coin], "DigestA", true);
    expect(locks.lock([coin], "DigestB")).toBeNull();
    expect(locks.lock([coin], "DigestC")).toMatchObject({ version: 1, heldBy: "DigestB" });
    // a refused transaction consumed nothing: the version stays
    locks.unlock([coin], "DigestB", false);
    locks.lock([coin], "DigestD");
    expect(locks.lock([coin], "DigestE")).toMatchObject({ version: 1 });
  });

  it("locks all of a transaction's objects or none of them", () => {
    const locks = new OwnedObjectLocks();
    const other = gasCoinId("0xbb");
    locks.lock([other], "DigestA");
    expect(locks.lock([coin, other], "DigestB")?.objectId).toBe(other);
    expect(locks.lock([coin], "DigestC")).toBeNull();
  });

  it("gives different addresses different gas coins, and one address always the same", () => {
    expect(gasCoinId("0xaa")).toBe(coin);
    expect(gasCoinId("0xbb")).not.toBe(coin);
    expect(coin).toMatch(/^0x[0-9a-f]{64}$/);
  });
});

describe("a local storage node under the profile", () => {
  it("answers a read after the profile's read latency and a write after its write latency, over HTTP", async () => {
    const dir = mkdtempSync(join(tmpdir(), "memrelay-node-"));
    const latency = { read: { minMs: 150, maxMs: 150 }, write: { minMs: 300, maxMs: 300 } };
    const node = await startStorageNode({ dir, nShards: 1, shards: [0], epoch: 1, secretKey: bls12_381.longSignatures.keygen().secretKey, latency });
    try {
      const blob = `${node.url}/v1/blobs/${"A".repeat(43)}`;
      let t0 = performance.now();
      const read = await fetch(`${blob}/metadata/status`);
      const readMs = performance.now() - t0;
      expect(read.status).toBe(200);
      t0 = performance.now();
      // a malformed metadata write: refused, but only after the node's round trip
      const write = await fetch(`${blob}/metadata`, { method: "PUT", body: new Uint8Array([1, 2, 3]) });
      const writeMs = performance.now() - t0;
      expect(write.status).toBeGreaterThanOrEqual(400);
      expect(readMs).toBeGreaterThanOrEqual(145);
      expect(writeMs).toBeGreaterThanOrEqual(295);
      expect(readMs).toBeLessThan(writeMs);
    } finally {
      await node.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
