// The local ledger under a network profile (MEMRELAY_NETWORK_PROFILE), black-box over a real nats-server: a write
// answers after the profile's finality instead of at once, and Sui's owned-object rule refuses a second transaction
// on a gas coin that a transaction in flight holds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { LocalChain } from "../adapters/chain/local/local-chain.ts";
import { generateKeypair, mint } from "../adapters/chain/local/accounts.ts";
import { PortError } from "../adapters/ports.ts";
import { NETWORK_PROFILES } from "../config/network-profile.ts";
import { blobId } from "./support/local-chain-suite.ts";

const PACKAGE_ID = "0x" + "ab".repeat(32);
const NETWORK = "localnet";
const testnet = NETWORK_PROFILES.testnet;

let server: NatsServerHandle;
let log: EventLog;
let nc: NatsConnection;
let local: LocalChain;
let profiled: LocalChain;
const operator = generateKeypair();

beforeAll(async () => {
  server = await startNatsServer();
  log = await openEventLog({ servers: server.url, name: "profile-test-local" });
  nc = await connect({ servers: server.url, name: "profile-test-testnet" });
  local = await LocalChain.open(log, { packageId: PACKAGE_ID, network: NETWORK, operatorKey: operator.secretKey, healIntervalMs: 0 });
  profiled = await LocalChain.open(nc, { packageId: PACKAGE_ID, network: NETWORK, healIntervalMs: 0, profile: testnet });
});

afterAll(async () => {
  await local?.close();
  await profiled?.close();
  await nc?.close();
  await log?.close();
  await server?.cleanup();
});

async function fundedWallet() {
  const k = generateKeypair();
  await mint(local, { operatorKey: operator.secretKey, to: k.keypair.address, amount: 1_000_000_000n });
  return k;
}

async function timed(p: Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await p;
  return performance.now() - t0;
}

describe("the local ledger under the testnet profile", () => {
  it("answers a write after Sui's finality, where the local profile answers at once", async () => {
    const wallet = await fundedWallet();
    const owner = generateKeypair().keypair.address;
    const record = (chain: LocalChain, id: string) => chain.recordBlob({ owner, namespace: "lat", blobId: id, size: 1, walletSecretKey: wallet.secretKey });
    const ids = [blobId("warm"), blobId("local"), blobId("testnet")];
    await record(local, ids[0]!); // first-use costs (state reads, caches) are not the profile's
    const localMs = await timed(record(local, ids[1]!));
    const profiledMs = await timed(record(profiled, ids[2]!));
    expect(profiledMs).toBeGreaterThanOrEqual(testnet.ownedTxFinality.minMs - 5);
    expect(profiledMs).toBeGreaterThan(localMs);
    // loose: the wait is the profile's, not a pile-up
    expect(profiledMs).toBeLessThan(testnet.ownedTxFinality.maxMs + 5_000);
    // and what it wrote is there for the other process as soon as it answered
    expect((await local.listBlobs(owner, { namespace: "lat", limit: 10 })).map((b) => b.blobId)).toContain(ids[2]);
  });

  it("refuses a second transaction on a gas coin held by one in flight, as Sui refuses equivocation", async () => {
    const wallet = await fundedWallet();
    const owner = generateKeypair().keypair.address;
    const ids = [blobId("eq-1"), blobId("eq-2"), blobId("eq-3")];
    const first = profiled.recordBlob({ owner, namespace: "eq", blobId: ids[0]!, size: 1, walletSecretKey: wallet.secretKey });
    const second = await profiled.recordBlob({ owner, namespace: "eq", blobId: ids[1]!, size: 1, walletSecretKey: wallet.secretKey }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(second).toBeInstanceOf(PortError);
    expect((second as PortError).kind).toBe("rejected");
    expect((second as PortError).message).toMatch(
      /^chain: Transaction is rejected as invalid by more than 1\/3 of validators by stake \(non-retriable\)\. Non-retriable errors: \[Object \(0x[0-9a-f]{64}, SequenceNumber\(\d+\)\) already locked by a different transaction: TransactionDigest\(\w+\)\]$/,
    );
    // the first one lands; the refused one wrote nothing and charged nothing
    await first;
    expect((await local.listBlobs(owner, { namespace: "eq", limit: 10 })).map((b) => b.blobId)).toEqual([ids[0]]);
    // once the first is final the coin is free again
    await profiled.recordBlob({ owner, namespace: "eq", blobId: ids[2]!, size: 1, walletSecretKey: wallet.secretKey });
    expect(await local.listBlobs(owner, { namespace: "eq", limit: 10 })).toHaveLength(2);
  });

  it("lets transactions on different gas coins be in flight together", async () => {
    const [w1, w2] = await Promise.all([fundedWallet(), fundedWallet()]);
    const owner = generateKeypair().keypair.address;
    const both = await timed(
      Promise.all([w1, w2].map((w, i) => profiled.recordBlob({ owner, namespace: "par", blobId: blobId(`par-${i}`), size: 1, walletSecretKey: w.secretKey }))),
    );
    expect(both).toBeLessThan(2 * testnet.ownedTxFinality.maxMs);
    expect(await local.listBlobs(owner, { namespace: "par", limit: 10 })).toHaveLength(2);
  });

  it("does not hold the operator's set-up transactions (mint) to the profile", async () => {
    const to = generateKeypair().keypair.address;
    const opNc = await connect({ servers: server.url });
    const op = await LocalChain.open(opNc, { packageId: PACKAGE_ID, network: NETWORK, operatorKey: operator.secretKey, healIntervalMs: 0, profile: testnet });
    try {
      const ms = await timed(Promise.all([1, 2, 3].map(() => mint(op, { operatorKey: operator.secretKey, to, amount: 1n }))));
      expect(ms).toBeLessThan(testnet.ownedTxFinality.minMs);
    } finally {
      await op.close();
      await opNc.close();
    }
  });
});
