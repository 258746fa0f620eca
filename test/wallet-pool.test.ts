// The upload wallet pool (adapters/chain/wallet-pool.ts): which wallet a transaction gets, that no two transactions in
// flight share a wallet (its gas coin), and that a failing or stalling wallet leaves the rotation for a while without
// holding the others. Pure coordination logic driven by vitest's fake clock.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { isWalletFault, WalletPool, type WalletLease } from "../adapters/chain/wallet-pool.ts";
import { PortError } from "../adapters/ports.ts";
import { objectLockConflictMessage } from "../adapters/chain/local/owned-object-locks.ts";

const keys = ["11".repeat(32), "22".repeat(32), "33".repeat(32)];

describe("WalletPool", () => {
  beforeEach(() => void vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => void vi.useRealTimers());

  const pool = (n = 3) => new WalletPool(keys.slice(0, n), { stallMs: 1_000, benchMs: 5_000 });
  const addr = (p: WalletPool, i: number) => p.wallets[i]!.address;

  it("hands out idle wallets round-robin, never one with a transaction in flight", () => {
    const p = pool();
    const a = p.tryAcquire("record_batch")!;
    const b = p.tryAcquire("record_batch")!;
    const c = p.tryAcquire("record_batch")!;
    expect([a, b, c].map((l) => l.wallet.address)).toEqual([addr(p, 0), addr(p, 1), addr(p, 2)]);
    expect(p.tryAcquire("record_batch")).toBeUndefined();
    b.release("ok");
    expect(p.tryAcquire("record_batch")!.wallet.address).toBe(addr(p, 1));
  });

  it("makes a caller wait while every wallet is in flight, and gives it the first one released", async () => {
    const p = pool(2);
    const a = p.tryAcquire("record_batch")!;
    p.tryAcquire("record_batch")!;
    let got: WalletLease | undefined;
    void p.acquire("record_batch").then((l) => (got = l));
    await vi.advanceTimersByTimeAsync(0);
    expect(got).toBeUndefined();
    a.release("ok");
    await vi.advanceTimersByTimeAsync(0);
    expect(got?.wallet.address).toBe(addr(p, 0));
  });

  it("takes a wallet whose call failed out of rotation for benchMs, then brings it back", () => {
    const p = pool(2);
    p.tryAcquire("record_batch")!.release("failed");
    expect(p.inRotation().map((w) => w.address)).toEqual([addr(p, 1)]);
    // the next transactions all go to the healthy wallet, one at a time
    const l = p.tryAcquire("record_batch")!;
    expect(l.wallet.address).toBe(addr(p, 1));
    l.release("ok");
    const again = p.tryAcquire("record_batch")!;
    expect(again.wallet.address).toBe(addr(p, 1));
    again.release("ok");
    vi.advanceTimersByTime(5_000);
    expect(p.inRotation()).toHaveLength(2);
  });

  it("takes a stalled wallet out of rotation while its call still runs, and keeps it out for benchMs after the stall", () => {
    const p = pool(2);
    const stalled = p.tryAcquire("record_batch")!;
    vi.advanceTimersByTime(999);
    expect(p.inRotation()).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(p.inRotation().map((w) => w.address)).toEqual([addr(p, 1)]);
    // the late call ends well: still out until the bench is served
    stalled.release("ok");
    const l = p.tryAcquire("record_batch")!;
    expect(l.wallet.address).toBe(addr(p, 1));
    l.release("ok");
    const again = p.tryAcquire("record_batch")!;
    expect(again.wallet.address).toBe(addr(p, 1));
    again.release("ok");
    vi.advanceTimersByTime(5_000);
    expect(p.inRotation()).toHaveLength(2);
  });

  it("wakes a waiter when the wallet it waits behind stalls and an idle wallet is back", async () => {
    const p = pool(2);
    p.tryAcquire("record_batch")!.release("failed"); // wallet 0 benched for 5 s
    p.tryAcquire("record_batch")!; // wallet 1 in flight, stalls at 1 s
    let got: WalletLease | undefined;
    void p.acquire("record_batch").then((l) => (got = l));
    await vi.advanceTimersByTimeAsync(500);
    expect(got).toBeUndefined();
    // once wallet 1 has stalled no wallet is in rotation: the idle one back soonest (wallet 0) is used over none
    await vi.advanceTimersByTimeAsync(600);
    expect(got?.wallet.address).toBe(addr(p, 0));
  });

  it("lets a waiter behind a stalled wallet sleep until something can change, not spin", async () => {
    let looks = 0;
    const p = new WalletPool(keys.slice(0, 1), { stallMs: 1_000, benchMs: 5_000, clock: () => (looks++, Date.now()) });
    p.tryAcquire("record_batch")!; // stalls at 1 s and never ends
    let got: WalletLease | undefined;
    void p.acquire("record_batch").then((l) => (got = l));
    const before = looks;
    await vi.advanceTimersByTimeAsync(20_000);
    expect(got).toBeUndefined();
    // a look when it stalls and one when its bench ends, not one per millisecond
    expect(looks - before).toBeLessThan(10);
  });

  it("judges a call stalled at a few times the recent median, also one that began before anything was seen", async () => {
    const p = new WalletPool(keys.slice(0, 3), { stallMs: 20_000, stallFloorMs: 3_000, benchMs: 60_000 });
    const hung = p.tryAcquire("record_batch")!; // wallet 0: never answers; nothing seen yet, so its bound is the ceiling
    let stalledAt: number | undefined;
    void hung.stalled.then(() => (stalledAt = Date.now() - 1_000_000));
    // wallets 1 and 2 answer in 1 s, three times in all: the bound becomes 4 × 1 s
    for (let i = 0; i < 3; i++) {
      const l = p.tryAcquire("record_batch")!;
      expect(l.wallet.address).not.toBe(addr(p, 0));
      await vi.advanceTimersByTimeAsync(1_000);
      l.release("ok");
    }
    expect(p.stallMs("record_batch")).toBe(4_000);
    // 3 s in: the hung call is not yet past 4 s
    expect(stalledAt).toBeUndefined();
    await vi.advanceTimersByTimeAsync(999);
    expect(stalledAt).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(stalledAt).toBe(4_000);
    expect(p.inRotation().map((w) => w.address)).toEqual([addr(p, 1), addr(p, 2)]);
    // the stalled call still holds its wallet (its coin): no second transaction on it, even once its bench is over
    await vi.advanceTimersByTimeAsync(60_000);
    const held = [p.tryAcquire("record_batch")!, p.tryAcquire("record_batch")!];
    expect(held.map((l) => l.wallet.address).sort()).toEqual([addr(p, 1), addr(p, 2)].sort());
    expect(p.tryAcquire("record_batch")).toBeUndefined();
  });

  it("judges a first call that hangs against the expected call time, not the ceiling, when nothing was seen yet", async () => {
    // a relayer just started on testnet: its first transaction hangs
    const p = new WalletPool(keys.slice(0, 2), { stallMs: 20_000, stallFloorMs: 3_000, benchMs: 60_000, expectedCallMs: 900 });
    expect(p.stallMs("record_batch")).toBe(3_600);
    const hung = p.tryAcquire("record_batch")!;
    let stalledAt: number | undefined;
    void hung.stalled.then(() => (stalledAt = Date.now() - 1_000_000));
    await vi.advanceTimersByTimeAsync(3_599);
    expect(stalledAt).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(stalledAt).toBe(3_600);
    expect(p.inRotation().map((w) => w.address)).toEqual([addr(p, 1)]);
    // without an expectation the same call waits out the ceiling
    const blind = new WalletPool(keys.slice(0, 2), { stallMs: 20_000, stallFloorMs: 3_000, benchMs: 60_000 });
    expect(blind.stallMs("record_batch")).toBe(20_000);
  });

  it("judges each kind of call from the recent calls of its own kind", async () => {
    const p = new WalletPool(keys.slice(0, 3), { stallMs: 20_000, stallFloorMs: 100, benchMs: 60_000 });
    const run = async (kind: "record_batch" | "manual_record", ms: number) => {
      const l = p.tryAcquire(kind)!;
      await vi.advanceTimersByTimeAsync(ms);
      l.release("ok");
    };
    // record batches take 2 s, manual records 200 ms, and there are more of the latter
    for (let i = 0; i < 3; i++) await run("record_batch", 2_000);
    for (let i = 0; i < 5; i++) await run("manual_record", 200);
    expect(p.stallMs("record_batch")).toBe(8_000);
    expect(p.stallMs("manual_record")).toBe(800);
    // a batch as slow as batches are is not stalled by the manual calls' pace (a median of both would be 200 ms: 800 ms)
    const batch = p.tryAcquire("record_batch")!;
    let batchStalled = false;
    void batch.stalled.then(() => (batchStalled = true));
    const manual = p.tryAcquire("manual_record")!;
    let manualStalled = false;
    void manual.stalled.then(() => (manualStalled = true));
    await vi.advanceTimersByTimeAsync(800);
    expect(manualStalled).toBe(true);
    await vi.advanceTimersByTimeAsync(2_200);
    expect(batchStalled).toBe(false);
    batch.release("ok");
    const inRotation = p.inRotation().map((w) => w.address);
    expect(inRotation).toContain(batch.wallet.address);
    expect(inRotation).not.toContain(manual.wallet.address);
  });

  it("never settles a lease's stalled once it was released first", async () => {
    const p = pool(1);
    const l = p.tryAcquire("record_batch")!;
    let stalled = false;
    void l.stalled.then(() => (stalled = true));
    l.release("ok");
    await vi.advanceTimersByTimeAsync(30_000);
    expect(stalled).toBe(false);
  });

  it("uses the wallet back soonest when every wallet is out of rotation, preferring one the caller has not tried", () => {
    const p = pool(2);
    p.tryAcquire("record_batch")!.release("failed");
    vi.advanceTimersByTime(10);
    p.tryAcquire("record_batch")!.release("failed");
    expect(p.inRotation()).toHaveLength(0);
    expect(p.tryAcquire("record_batch")!.wallet.address).toBe(addr(p, 0));
    const p2 = pool(2);
    p2.tryAcquire("record_batch")!.release("failed");
    vi.advanceTimersByTime(10);
    p2.tryAcquire("record_batch")!.release("failed");
    expect(p2.tryAcquire("record_batch", new Set([addr(p2, 0)]))!.wallet.address).toBe(addr(p2, 1));
  });

  it("names wallets for work that holds no coin (next) round-robin, skipping benched ones", () => {
    const p = pool();
    expect([p.next(), p.next(), p.next(), p.next()].map((w) => w.address)).toEqual([addr(p, 0), addr(p, 1), addr(p, 2), addr(p, 0)]);
    const l = p.tryAcquire("record_batch")!; // wallet 1
    l.release("failed");
    expect([p.next(), p.next(), p.next()].map((w) => w.address)).toEqual([addr(p, 2), addr(p, 0), addr(p, 2)]);
  });

  it("ignores a second release of one lease", () => {
    const p = pool(1);
    const l = p.tryAcquire("record_batch")!;
    l.release("ok");
    const again = p.tryAcquire("record_batch")!;
    l.release("failed");
    expect(p.inRotation()).toHaveLength(1);
    expect(p.tryAcquire("record_batch")).toBeUndefined();
    again.release("ok");
  });

  it("refuses an empty pool and a malformed key", () => {
    expect(() => new WalletPool([])).toThrow(/SERVER_CHAIN_PRIVATE_KEYS/);
    expect(() => new WalletPool(["nope"])).toThrow(/suiprivkey1/);
  });
});

describe("isWalletFault", () => {
  it("blames the wallet for its coin locked, no funds or a chain not answering, not for a refused record", () => {
    const lock = objectLockConflictMessage({ objectId: "0x" + "a".repeat(64), version: 3, heldBy: "D" });
    expect(isWalletFault(new PortError("chain", "rejected", lock))).toBe(true);
    expect(isWalletFault(new PortError("chain", "insufficient_funds", "no gas"))).toBe(true);
    expect(isWalletFault(new PortError("chain", "unavailable", "down"))).toBe(true);
    expect(isWalletFault(new PortError("chain", "invalid", "bad namespace"))).toBe(false);
    expect(isWalletFault(new PortError("chain", "forbidden", "not yours"))).toBe(false);
  });
});
