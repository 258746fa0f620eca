// The blob-registration batcher (adapters/chain/record-batcher.ts): concurrent records share transactions, a refused
// batch is retried record by record, a batch its wallet cannot get through (coin locked, outage, stall) goes out on
// another wallet, and no two transactions in flight share a wallet. The chain is a fake here
// (pure coordination logic); the ledger's multi-record transactions are tested in chain-transactions.test.ts.
import { describe, expect, it } from "vitest";
import { RecordBatcher, RecordFailed } from "../adapters/chain/record-batcher.ts";
import { PortError, type BlobObject, type BlobRecordInput, type ChainPort } from "../adapters/ports.ts";
import { WalletPool } from "../adapters/chain/wallet-pool.ts";
import { objectLockConflictMessage } from "../adapters/chain/local/owned-object-locks.ts";

const keys = ["11".repeat(32), "22".repeat(32)];

function fakeChain(refuse: (i: BlobRecordInput) => PortError | undefined = () => undefined) {
  const calls: { blobIds: string[]; wallet: string }[] = [];
  let release: () => void = () => undefined;
  let gate = Promise.resolve();
  const chain = {
    async recordBlobs(inputs: readonly BlobRecordInput[], secret: Uint8Array): Promise<BlobObject[]> {
      calls.push({ blobIds: inputs.map((i) => i.blobId), wallet: Buffer.from(secret).toString("hex") });
      await gate;
      for (const i of inputs) {
        const e = refuse(i);
        if (e) throw e;
      }
      return inputs.map((i) => ({ objectId: `obj-${i.blobId}`, blobId: i.blobId, owner: i.owner, namespace: i.namespace, packageId: "0x1", createdAtMs: 0, size: i.size }));
    },
  } as unknown as ChainPort;
  return {
    chain,
    calls,
    hold() {
      gate = new Promise((r) => (release = r));
    },
    release: () => release(),
  };
}

const input = (n: number): BlobRecordInput => ({ owner: "0xabc", namespace: "n", blobId: `b${n}`, size: n });

describe("RecordBatcher", () => {
  it("sends a lone record at once and batches the ones that arrive while transactions are in flight", async () => {
    const f = fakeChain();
    const batcher = new RecordBatcher(f.chain, new WalletPool(keys), { maxInFlight: 1, maxBatch: 3 });
    f.hold();
    const first = batcher.record(input(0));
    const rest = Array.from({ length: 5 }, (_, i) => batcher.record(input(i + 1)));
    expect(f.calls.map((c) => c.blobIds)).toEqual([["b0"]]);
    f.release();
    const results = await Promise.all([first, ...rest]);
    expect(results.map((r) => r.object.blobId)).toEqual(["b0", "b1", "b2", "b3", "b4", "b5"]);
    expect(f.calls.map((c) => c.blobIds)).toEqual([["b0"], ["b1", "b2", "b3"], ["b4", "b5"]]);
    // each transaction is paid by the next wallet, and each record names the wallet of its transaction
    expect(f.calls.map((c) => c.wallet)).toEqual([keys[0], keys[1], keys[0]]);
    expect(results[1]!.wallet.address).toBe(results[3]!.wallet.address);
    expect(results[0]!.wallet.address).not.toBe(results[1]!.wallet.address);
  });

  it("retries a refused batch one record at a time, so only the bad record fails", async () => {
    const f = fakeChain((i) => (i.blobId === "b2" ? new PortError("chain", "invalid", "bad record") : undefined));
    const batcher = new RecordBatcher(f.chain, new WalletPool(keys), { maxInFlight: 1 });
    f.hold();
    const all = Array.from({ length: 4 }, (_, i) => batcher.record(input(i)).then((r) => r.object.blobId, (e: unknown) => e));
    f.release();
    const out = await Promise.all(all);
    expect(out.slice(0, 2)).toEqual(["b0", "b1"]);
    expect(out[2]).toBeInstanceOf(RecordFailed);
    expect((out[2] as RecordFailed).message).toMatch(/bad record/);
    expect(out[3]).toBe("b3");
    expect(f.calls.map((c) => c.blobIds)).toEqual([["b0"], ["b1", "b2", "b3"], ["b1"], ["b2"], ["b3"]]);
  });

  it("fails every record of a batch no wallet could get through, after one try on each wallet, without retrying them singly", async () => {
    const f = fakeChain(() => new PortError("chain", "unavailable", "ledger down"));
    const pool = new WalletPool(keys);
    const batcher = new RecordBatcher(f.chain, pool, { maxInFlight: 1 });
    f.hold();
    const all = Array.from({ length: 3 }, (_, i) => batcher.record(input(i)).catch((e: unknown) => e as RecordFailed));
    f.release();
    const errors = await Promise.all(all);
    expect(errors.every((e) => e instanceof RecordFailed && /ledger down/.test(e.message))).toBe(true);
    // each batch went out on both wallets; the failure names the last wallet that paid
    expect(f.calls.map((c) => [c.blobIds, c.wallet])).toEqual([
      [["b0"], keys[0]],
      [["b0"], keys[1]],
      [["b1", "b2"], keys[0]],
      [["b1", "b2"], keys[1]],
    ]);
    expect(errors.map((e) => (e as RecordFailed).wallet.address)).toEqual([pool.wallets[1]!.address, pool.wallets[1]!.address, pool.wallets[1]!.address]);
  });

  it("sends a batch again on another wallet when its wallet's gas coin is locked, and that wallet leaves the rotation", async () => {
    const lock = new PortError("chain", "rejected", objectLockConflictMessage({ objectId: "0x" + "c".repeat(64), version: 1, heldBy: "Other" }));
    const calls: string[] = [];
    const chain = {
      async recordBlobs(inputs: readonly BlobRecordInput[], secret: Uint8Array): Promise<BlobObject[]> {
        const wallet = Buffer.from(secret).toString("hex");
        calls.push(wallet);
        if (wallet === keys[0]) throw lock;
        return inputs.map((i) => ({ objectId: `obj-${i.blobId}`, blobId: i.blobId, owner: i.owner, namespace: i.namespace, packageId: "0x1", createdAtMs: 0, size: i.size }));
      },
    } as unknown as ChainPort;
    const pool = new WalletPool(keys);
    const batcher = new RecordBatcher(chain, pool, { maxInFlight: 1 });
    const first = await batcher.record(input(0));
    expect(first.wallet.address).toBe(pool.wallets[1]!.address);
    expect(calls).toEqual([keys[0], keys[1]]);
    expect(pool.inRotation().map((w) => w.address)).toEqual([pool.wallets[1]!.address]);
    // the locked wallet is left alone while it is out
    await batcher.record(input(1));
    expect(calls).toEqual([keys[0], keys[1], keys[1]]);
  });

  it("moves a stalled batch to another wallet after stallMs, without waiting for the stalled call", async () => {
    let releaseStalled: () => void = () => undefined;
    const calls: string[] = [];
    const chain = {
      async recordBlobs(inputs: readonly BlobRecordInput[], secret: Uint8Array): Promise<BlobObject[]> {
        const wallet = Buffer.from(secret).toString("hex");
        calls.push(wallet);
        if (wallet === keys[0]) await new Promise<void>((r) => (releaseStalled = r));
        return inputs.map((i) => ({ objectId: `obj-${i.blobId}`, blobId: i.blobId, owner: i.owner, namespace: i.namespace, packageId: "0x1", createdAtMs: 0, size: i.size }));
      },
    } as unknown as ChainPort;
    const pool = new WalletPool(keys, { stallMs: 100, benchMs: 60_000 });
    const batcher = new RecordBatcher(chain, pool, { maxInFlight: 2 });
    const t0 = performance.now();
    const results = await Promise.all([0, 1, 2, 3].map((i) => batcher.record(input(i))));
    const ms = performance.now() - t0;
    expect(results.every((r) => r.wallet.address === pool.wallets[1]!.address)).toBe(true);
    expect(ms).toBeGreaterThanOrEqual(95);
    expect(ms).toBeLessThan(5_000);
    // the stalled wallet got one batch, still in flight; it is out of rotation
    expect(calls.filter((w) => w === keys[0])).toHaveLength(1);
    expect(pool.inRotation().map((w) => w.address)).toEqual([pool.wallets[1]!.address]);
    releaseStalled();
  });

  it("never has two transactions in flight on one wallet", async () => {
    const inFlight = new Map<string, number>();
    let clash = false;
    const wallets: string[] = [];
    const chain = {
      async recordBlobs(inputs: readonly BlobRecordInput[], secret: Uint8Array): Promise<BlobObject[]> {
        const wallet = Buffer.from(secret).toString("hex");
        wallets.push(wallet);
        inFlight.set(wallet, (inFlight.get(wallet) ?? 0) + 1);
        if (inFlight.get(wallet)! > 1) clash = true;
        await new Promise((r) => setTimeout(r, 5));
        inFlight.set(wallet, inFlight.get(wallet)! - 1);
        return inputs.map((i) => ({ objectId: `obj-${i.blobId}`, blobId: i.blobId, owner: i.owner, namespace: i.namespace, packageId: "0x1", createdAtMs: 0, size: i.size }));
      },
    } as unknown as ChainPort;
    // more transactions allowed in flight than there are wallets: the pool is what keeps them apart
    const batcher = new RecordBatcher(chain, new WalletPool(keys), { maxInFlight: 4, maxBatch: 2 });
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => batcher.record(input(i))));
    expect(results).toHaveLength(40);
    expect(clash).toBe(false);
    expect(new Set(wallets)).toEqual(new Set(keys));
  });
});
