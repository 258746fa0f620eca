// The local chain against a private nats-server (test/support/local-chain-suite.ts): concurrent writers, restart
// and crash recovery.
import { describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { STREAMS } from "../eventlog/subjects.ts";
import { LocalChain } from "../adapters/chain/local/local-chain.ts";
import { addDelegateKey, createAccount, generateKeypair } from "../adapters/chain/local/accounts.ts";
import { buildSignedTx, deriveBlobObjectId, deriveObjectId } from "../adapters/chain/local/tx.ts";
import type { ChainBlock } from "../adapters/chain/local/model.ts";
import { GAS_FEE_MIST } from "../adapters/chain/sui/transaction-envelope.ts";
import type { SubmitResult } from "../adapters/chain/local/ledger.ts";
import { CHAIN_STATE_BUCKET, CHAIN_STATE_LAYOUT, CHAIN_TX_SUBJECT, KEYS } from "../adapters/chain/local/state-keys.ts";
import { Kvm } from "@nats-io/kv";
import { NETWORK, PACKAGE_ID, a, b, blobId, chainTxCount, fundedKey, log, operator, server, useLocalChainSuite } from "./support/local-chain-suite.ts";

useLocalChainSuite();

/** Transactions in all chain.tx blocks. */
async function chainRecordCount(): Promise<number> {
  const info = await log.jsm.streams.info(STREAMS.chain);
  let count = 0;
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await log.jsm.streams.getMessage(STREAMS.chain, { seq }).catch(() => null);
    if (m?.subject === CHAIN_TX_SUBJECT) count += (m.json() as ChainBlock).records.length;
  }
  return count;
}

describe("concurrency, restart and recovery", () => {
  it("two instances submitting concurrently never lose a transaction", async () => {
    const wallet = await fundedKey();
    const owner = generateKeypair().keypair.address;
    const receivers = Array.from({ length: 10 }, () => generateKeypair().keypair.address);
    const blocksBefore = await chainTxCount();
    const recordsBefore = await chainRecordCount();
    const n = 100;
    const jobs: Promise<SubmitResult>[] = [];
    for (let i = 0; i < n; i++) {
      const chain = i % 2 ? a : b;
      jobs.push(chain.signAndSubmit("record_blob", wallet.secretKey, { package_id: PACKAGE_ID, records: [{ owner, namespace: "race", blob_id: blobId(`race-${i}`), size: i }] }));
      jobs.push(chain.signAndSubmit("mint", operator.secretKey, { to: receivers[i % receivers.length]!, token: "SUI", amount: "1" }));
    }
    const results = await Promise.all(jobs);
    expect(results.every((r) => r.appended)).toBe(true);
    expect(new Set(results.map((r) => r.digest)).size).toBe(2 * n);
    const positions = new Set<string>();
    for (const r of results) {
      const receipt = await a.getTransaction(r.digest);
      expect(receipt?.seq).toBe(r.seq);
      positions.add(`${receipt!.seq}/${receipt!.index}`);
    }
    expect(positions.size).toBe(2 * n);
    expect(await chainRecordCount()).toBe(recordsBefore + 2 * n);
    expect(await chainTxCount()).toBeLessThan(blocksBefore + 2 * n); // group commit
    expect(await a.listBlobs(owner, { limit: 1000 })).toHaveLength(n);
    expect(await b.listBlobs(owner, { namespace: "race", limit: 1000 })).toHaveLength(n);
    expect((await b.balance(wallet.keypair.address)).balances.SUI).toBe(1_000_000_000n - BigInt(n) * GAS_FEE_MIST);
    for (const r of receivers) expect((await a.balance(r)).balances.SUI).toBe(BigInt(n / receivers.length));
  });

  it("a writer's cached state gives way to another writer's blocks (alternating records of one owner)", async () => {
    const wallet = await fundedKey();
    const owner = generateKeypair().keypair.address;
    const ids = Array.from({ length: 6 }, (_, i) => blobId(`alt-${i}`));
    const record = (chain: typeof a, i: number) => chain.signAndSubmit("record_blob", wallet.secretKey, { package_id: PACKAGE_ID, records: [{ owner, namespace: "alt", blob_id: ids[i]!, size: i }] });
    // a's rounds cache the owner's index heads and pages; each of b's blocks in between must make a read them again
    for (let i = 0; i < 6; i++) await record(i % 3 === 2 ? b : a, i);
    const listed = await b.listBlobs(owner, { namespace: "alt", limit: 100 });
    expect(listed.map((x) => x.blobId)).toEqual([...ids].reverse());
    expect((await a.balance(wallet.keypair.address)).balances.SUI).toBe(1_000_000_000n - 6n * GAS_FEE_MIST);
  });

  it("concurrent writers from separate processes over separate connections all land", async () => {
    const wallet = await fundedKey();
    const owner = generateKeypair().keypair.address;
    const conns = await Promise.all([0, 1, 2].map(() => connect({ servers: server.url })));
    try {
      const chains = await Promise.all(conns.map((nc) => LocalChain.open(nc, { packageId: PACKAGE_ID, network: NETWORK, healIntervalMs: 0, maxBlockTxs: 1 })));
      const ids = Array.from({ length: 45 }, (_, i) => blobId(`p-${i}`));
      await Promise.all(ids.map((id, i) => chains[i % 3]!.recordBlob({ owner, namespace: "p", blobId: id, size: 1, walletSecretKey: wallet.secretKey })));
      const listed = await a.listBlobs(owner, { limit: 100 });
      expect(new Set(listed.map((x) => x.blobId))).toEqual(new Set(ids));
      expect((await a.balance(wallet.keypair.address)).balances.SUI).toBe(1_000_000_000n - 45n * GAS_FEE_MIST);
      await Promise.all(chains.map((c) => c.close()));
    } finally {
      await Promise.all(conns.map((nc) => nc.close()));
    }
  });

  it("a new instance on a new connection sees the same state", async () => {
    const owner = await fundedKey();
    const account = await createAccount(a, { ownerKey: owner.secretKey });
    const delegate = generateKeypair();
    await addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: delegate.keypair.publicKeyHex });
    await a.recordBlob({ owner: owner.keypair.address, namespace: "r", blobId: blobId("restart"), size: 9, walletSecretKey: owner.secretKey });
    const nc = await connect({ servers: server.url });
    try {
      const c = await LocalChain.open(nc, { packageId: PACKAGE_ID, network: NETWORK, healIntervalMs: 0 });
      expect(await c.resolveDelegate(delegate.keypair.publicKeyHex, account.id)).toEqual({ owner: owner.keypair.address, accountId: account.id });
      expect(await c.listBlobs(owner.keypair.address, { limit: 10 })).toHaveLength(1);
      expect(await c.balance(owner.keypair.address)).toEqual(await a.balance(owner.keypair.address));
      await c.close();
    } finally {
      await nc.close();
    }
  });

  it("materialises the stream again when the state has another key layout (no blob index or blob objects of this layout)", async () => {
    const owner = await fundedKey();
    const ids = Array.from({ length: 20 }, (_, i) => blobId(`layout-${i}`));
    const recorded = await a.recordBlobs(ids.map((id, i) => ({ owner: owner.keypair.address, namespace: i % 2 ? "odd" : "even", blobId: id, size: i })), owner.secretKey);
    // State of an older layout: no layout marker, none of this layout's index keys, no blob objects at their ids.
    const kv = await new Kvm(log.nc).open(CHAIN_STATE_BUCKET);
    const planted: string[] = [];
    for await (const key of await kv.keys(`bi.${owner.keypair.address}.>`)) planted.push(key);
    expect(planted.length).toBeGreaterThan(2);
    for (const key of [...planted, ...recorded.map((r) => KEYS.object(r.objectId)), KEYS.layout]) await kv.purge(key);
    const nc = await connect({ servers: server.url });
    try {
      const c = await LocalChain.open(nc, { packageId: PACKAGE_ID, network: NETWORK, healIntervalMs: 0 });
      expect((await c.listBlobs(owner.keypair.address, { limit: 100 })).map((x) => x.blobId)).toEqual([...ids].reverse());
      expect((await c.listBlobs(owner.keypair.address, { namespace: "odd", limit: 100 })).map((x) => x.blobId)).toEqual(ids.filter((_, i) => i % 2).reverse());
      expect(await c.getBlob(owner.keypair.address, ids[7]!)).toEqual(recorded[7]);
      expect((await kv.get(KEYS.layout))?.json()).toEqual({ version: CHAIN_STATE_LAYOUT });
      await c.close();
    } finally {
      await nc.close();
    }
  });

  it("finds a blob recorded before state layout 4 (its object id from its transaction) by owner and blob id; serves it under that id only", async () => {
    const wallet = await fundedKey();
    const owner = generateKeypair().keypair.address;
    const id = blobId("legacy");
    const legacyId = deriveObjectId(new Uint8Array(32).fill(7), 0);
    const blob = { object_id: legacyId, owner, blob_id: id, namespace: "old", package_id: PACKAGE_ID, size: 5, created_at: 1_700_000_000_000 };
    const record = { v: 1, digest: "legacy" + "1".repeat(38), kind: "record_blob", sender: owner, gas_owner: null, gas_used: "0", executed_at: blob.created_at, events: [{ type: "BlobRecorded", blob, index_all: 0, index_ns: 0 }] };
    await log.js.publish(CHAIN_TX_SUBJECT, JSON.stringify({ v: 1, records: [record] }));
    await a.catchUp();
    const txsBefore = await chainTxCount();
    const expected = { objectId: legacyId, blobId: id, owner, namespace: "old", packageId: PACKAGE_ID, createdAtMs: blob.created_at, size: 5 };
    expect(await b.getBlob(owner, id)).toEqual(expected);
    expect(await b.recordBlob({ owner, namespace: "old", blobId: id, size: 5, walletSecretKey: wallet.secretKey })).toEqual(expected);
    expect(await chainTxCount()).toBe(txsBefore); // already recorded: nothing appended
    expect((await b.getObject(legacyId))?.owner).toEqual({ AddressOwner: owner });
    expect(await b.getObject(deriveBlobObjectId(b.registryId, owner, id))).toBeNull();
    expect(await b.listBlobs(owner, { limit: 10 })).toEqual([expected]);
  });

  it("catches up after a crash between the append and the KV write", async () => {
    const owner = await fundedKey();
    const account = await createAccount(a, { ownerKey: owner.secretKey });
    const delegate = generateKeypair();
    await addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: delegate.keypair.publicKeyHex });

    // the writer "crashes" right after appending the removal
    const removal = buildSignedTx({ target: a.target, kind: "remove_delegate_key", args: { account_id: account.id, public_key: delegate.keypair.publicKeyHex }, sender: owner.secretKey });
    const crashed = await a.submit(removal, { materialise: false });
    expect(crashed.appended).toBe(true);
    expect(await b.resolveDelegate(delegate.keypair.publicKeyHex)).not.toBeNull(); // the state is behind the stream

    // a new process catches up on open
    const nc = await connect({ servers: server.url });
    try {
      const c = await LocalChain.open(nc, { packageId: PACKAGE_ID, network: NETWORK, healIntervalMs: 0 });
      expect(await c.resolveDelegate(delegate.keypair.publicKeyHex)).toBeNull();
      expect(await b.resolveDelegate(delegate.keypair.publicKeyHex)).toBeNull();
      expect((await b.getTransaction(crashed.digest))?.seq).toBe(crashed.seq);
      await c.close();
    } finally {
      await nc.close();
    }

    // a later writer catches up too: crash again, then write through the other instance
    const second = generateKeypair();
    const add = buildSignedTx({ target: a.target, kind: "add_delegate_key", args: { account_id: account.id, public_key: second.keypair.publicKeyHex, label: "" }, sender: owner.secretKey });
    await b.submit(add, { materialise: false });
    const third = generateKeypair();
    const after = await addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: third.keypair.publicKeyHex });
    expect(after.delegate_keys.map((k) => k.public_key)).toEqual([second.keypair.publicKeyHex, third.keypair.publicKeyHex]);
    expect(await b.resolveDelegate(second.keypair.publicKeyHex)).not.toBeNull();
  });

  it("background healing repairs a crashed writer's state without any new write", async () => {
    const nc = await connect({ servers: server.url });
    try {
      const healer = await LocalChain.open(nc, { packageId: PACKAGE_ID, network: NETWORK, healIntervalMs: 50 });
      const owner = await fundedKey();
      const tx = buildSignedTx({ target: a.target, kind: "create_account", args: {}, sender: owner.secretKey });
      await b.submit(tx, { materialise: false });
      const deadline = Date.now() + 5_000;
      while (!(await a.accountExists(owner.keypair.address)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(await a.accountExists(owner.keypair.address)).toBe(true);
      await healer.close();
    } finally {
      await nc.close();
    }
  });

  it("rebuilds the whole state from the CHAIN stream when the KV bucket is lost", async () => {
    const owner = await fundedKey();
    const account = await createAccount(a, { ownerKey: owner.secretKey });
    const delegate = generateKeypair();
    await addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: delegate.keypair.publicKeyHex });
    const blob = await a.recordBlob({ owner: owner.keypair.address, namespace: "lost", blobId: blobId("lost"), size: 1, walletSecretKey: owner.secretKey });
    const balance = await a.balance(owner.keypair.address);
    const txs = await chainTxCount();
    expect(txs).toBeGreaterThan(32); // exercises the consumer-based range read

    await log.jsm.streams.delete(`KV_${CHAIN_STATE_BUCKET}`);
    const nc = await connect({ servers: server.url });
    try {
      const c = await LocalChain.open(nc, { packageId: PACKAGE_ID, network: NETWORK, healIntervalMs: 0 });
      expect(await c.resolveDelegate(delegate.keypair.publicKeyHex, account.id)).toEqual({ owner: owner.keypair.address, accountId: account.id });
      expect(await c.listBlobs(owner.keypair.address, { namespace: "lost", limit: 5 })).toEqual([blob]);
      expect(await c.balance(owner.keypair.address)).toEqual(balance);
      expect((await c.genesis())?.operator_address).toBe(operator.keypair.address);
      await c.close();
    } finally {
      await nc.close();
    }
  });
});
