// The wallet pool against the local ledger under a network profile (real nats-server, Sui's owned-object rule on):
// with two upload wallets, one whose gas coin another transaction holds, or whose calls stall, the records still
// complete, on the other wallet, and the bad one leaves the rotation.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { LocalChain } from "../adapters/chain/local/local-chain.ts";
import { generateKeypair, mint } from "../adapters/chain/local/accounts.ts";
import { NETWORK_PROFILES, type NetworkProfile } from "../config/network-profile.ts";
import { WalletPool } from "../adapters/chain/wallet-pool.ts";
import { RecordBatcher } from "../adapters/chain/record-batcher.ts";
import type { BlobObject, BlobPort, BlobRecordInput, ChainPort } from "../adapters/ports.ts";
import { storeManualMemory } from "../actors/relayer/manual-memory.ts";
import { blobId } from "./support/local-chain-suite.ts";

const PACKAGE_ID = "0x" + "ab".repeat(32);
// testnet's rule with a shorter finality, to keep the test short
const profile: NetworkProfile = { ...NETWORK_PROFILES.testnet, ownedTxFinality: { minMs: 150, maxMs: 250 } };

let server: NatsServerHandle;
let log: EventLog;
let chain: LocalChain;
const operator = generateKeypair();

beforeAll(async () => {
  server = await startNatsServer();
  log = await openEventLog({ servers: server.url, name: "wallet-pool-ledger" });
  chain = await LocalChain.open(log, { packageId: PACKAGE_ID, network: "localnet", operatorKey: operator.secretKey, healIntervalMs: 0, profile });
});

afterAll(async () => {
  await chain?.close();
  await log?.close();
  await server?.cleanup();
});

async function twoWallets() {
  const keys = [generateKeypair(), generateKeypair()];
  for (const k of keys) await mint(chain, { operatorKey: operator.secretKey, to: k.keypair.address, amount: 10_000_000_000n });
  return { keys, pool: new WalletPool(keys.map((k) => Buffer.from(k.secretKey).toString("hex")), { stallMs: 1_000, benchMs: 60_000 }) };
}

describe("two upload wallets on the ledger with the owned-object rule", () => {
  it("records go out on the other wallet while the first one's gas coin is held by a transaction in flight", async () => {
    const { keys, pool } = await twoWallets();
    const owner = generateKeypair().keypair.address;
    const batcher = new RecordBatcher(chain, pool, { maxInFlight: 2 });
    // someone else (another signer of this key) has a transaction in flight on wallet 0's coin
    const outside = chain.recordBlob({ owner, namespace: "lock", blobId: blobId("outside"), size: 1, walletSecretKey: keys[0]!.secretKey });
    const ids = Array.from({ length: 6 }, (_, i) => blobId(`lock-${i}`));
    const recorded = await Promise.all(ids.map((id) => batcher.record({ owner, namespace: "lock", blobId: id, size: 1 })));
    await outside;
    expect(recorded.every((r) => r.wallet.address === keys[1]!.keypair.address)).toBe(true);
    expect(pool.inRotation().map((w) => w.address)).toEqual([keys[1]!.keypair.address]);
    const listed = await chain.listBlobs(owner, { namespace: "lock", limit: 20 });
    expect(new Set(listed.map((b) => b.blobId))).toEqual(new Set([...ids, (await outside).blobId]));
  });

  it("writes complete on the healthy wallet when the other's calls stall, without waiting for them", async () => {
    const { keys, pool } = await twoWallets();
    const owner = generateKeypair().keypair.address;
    const stalledKey = Buffer.from(keys[0]!.secretKey).toString("hex");
    // a port in front of the ledger that holds wallet 0's transactions for 8 s (a node that stopped answering it)
    const stalling = {
      recordBlobs: async (inputs: readonly BlobRecordInput[], secret: Uint8Array): Promise<BlobObject[]> => {
        if (Buffer.from(secret).toString("hex") === stalledKey) await new Promise((r) => setTimeout(r, 8_000));
        return chain.recordBlobs(inputs, secret);
      },
    } as unknown as ChainPort;
    const batcher = new RecordBatcher(stalling, pool, { maxInFlight: 2 });
    const ids = Array.from({ length: 20 }, (_, i) => blobId(`stall-${i}`));
    const t0 = performance.now();
    const recorded = await Promise.all(ids.map((id) => batcher.record({ owner, namespace: "stall", blobId: id, size: 1 })));
    const ms = performance.now() - t0;
    expect(ms).toBeLessThan(6_000);
    expect(recorded.every((r) => r.wallet.address === keys[1]!.keypair.address)).toBe(true);
    expect(new Set((await chain.listBlobs(owner, { namespace: "stall", limit: 50 })).map((b) => b.blobId))).toEqual(new Set(ids));
    expect(pool.inRotation().map((w) => w.address)).toEqual([keys[1]!.keypair.address]);
  }, 20_000);

  it("a wallet the profile stalls (MEMRELAY_NETWORK_STALLED_WALLETS) hangs for good, and its records still complete on the other", async () => {
    const { keys, pool } = await twoWallets();
    const owner = generateKeypair().keypair.address;
    const stalledAddress = keys[0]!.keypair.address;
    // the actor host's own ledger, with wallet 0's transactions never getting final
    const stalledChain = await LocalChain.open(log, { packageId: PACKAGE_ID, network: "localnet", healIntervalMs: 0, profile: { ...profile, stalledWallets: new Set([stalledAddress]) } });
    try {
      const batcher = new RecordBatcher(stalledChain, pool, { maxInFlight: 2, gatherMs: 20 });
      const ids = Array.from({ length: 12 }, (_, i) => blobId(`sigstop-${i}`));
      const t0 = performance.now();
      // the first record takes wallet 0 (its transaction hangs), the ones behind it go on wallet 1
      const first = batcher.record({ owner, namespace: "sigstop", blobId: ids[0]!, size: 1 });
      await new Promise((r) => setTimeout(r, 100));
      const recorded = await Promise.all([first, ...ids.slice(1).map((id) => batcher.record({ owner, namespace: "sigstop", blobId: id, size: 1 }))]);
      const ms = performance.now() - t0;
      // the stalled batch moved on after the pool's stall time (1 s), not after the stalled call (never)
      expect(ms).toBeGreaterThanOrEqual(1_000);
      expect(ms).toBeLessThan(6_000);
      expect(recorded.every((r) => r.wallet.address === keys[1]!.keypair.address)).toBe(true);
      expect(new Set((await chain.listBlobs(owner, { namespace: "sigstop", limit: 50 })).map((b) => b.blobId))).toEqual(new Set(ids));
      expect(pool.inRotation().map((w) => w.address)).toEqual([keys[1]!.keypair.address]);
      // its coin stays locked by the hung transaction: another transaction on it is refused as equivocation
      await expect(stalledChain.recordBlob({ owner, namespace: "sigstop", blobId: blobId("after"), size: 1, walletSecretKey: keys[0]!.secretKey })).rejects.toThrow(/already locked by a different transaction/);
    } finally {
      await stalledChain.close();
    }
  }, 20_000);

  it("a manual remember whose wallet stalls is recorded on the other wallet after the stall bound, not after the hung call", async () => {
    const { keys, pool } = await twoWallets();
    const owner = generateKeypair().keypair.address;
    const stalledChain = await LocalChain.open(log, { packageId: PACKAGE_ID, network: "localnet", healIntervalMs: 0, profile: { ...profile, stalledWallets: new Set([keys[0]!.keypair.address]) } });
    // the client's ciphertext is already in the blob store: only the record is under test
    const blobs = { store: async (bytes: Uint8Array) => ({ blobId: blobId(`manual-${bytes.length}`), size: bytes.length }) } as unknown as BlobPort;
    try {
      const t0 = performance.now();
      const stored = await storeManualMemory({ blobs, chain: stalledChain, wallets: () => pool }, { owner, namespace: "manual-stall", bytes: new Uint8Array(7) });
      const ms = performance.now() - t0;
      expect(ms).toBeGreaterThanOrEqual(1_000);
      expect(ms).toBeLessThan(6_000);
      expect(stored.object.namespace).toBe("manual-stall");
      expect((await chain.listBlobs(owner, { namespace: "manual-stall", limit: 5 })).map((b) => b.blobId)).toEqual([stored.blobId]);
      expect(pool.inRotation().map((w) => w.address)).toEqual([keys[1]!.keypair.address]);
    } finally {
      await stalledChain.close();
    }
  }, 20_000);

  it("with MEMRELAY_NETWORK_STALL_SWITCH, a stalled wallet answers until the switch file exists, then hangs", async () => {
    const { keys } = await twoWallets();
    const owner = generateKeypair().keypair.address;
    const dir = await mkdtemp(join(tmpdir(), "stall-switch-"));
    const stallSwitch = join(dir, "stall");
    const stalledChain = await LocalChain.open(log, { packageId: PACKAGE_ID, network: "localnet", healIntervalMs: 0, profile: { ...profile, stalledWallets: new Set([keys[0]!.keypair.address]), stallSwitch } });
    try {
      const record = (id: string) => stalledChain.recordBlob({ owner, namespace: "switch", blobId: id, size: 1, walletSecretKey: keys[0]!.secretKey });
      const before = blobId("before");
      await expect(record(before)).resolves.toMatchObject({ blobId: before });
      await writeFile(stallSwitch, "");
      const outcome = await Promise.race([record(blobId("after")).then(() => "final"), new Promise((r) => setTimeout(() => r("hung"), 1_500))]);
      expect(outcome).toBe("hung");
    } finally {
      await stalledChain.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 20_000);
});
