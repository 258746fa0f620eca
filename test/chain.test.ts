// The local chain against a private nats-server: accounts and delegate keys, signatures, gas, blob objects,
// concurrent writers, restart and crash recovery.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { bcs } from "@mysten/sui/bcs";
import { deriveDynamicFieldID } from "@mysten/sui/utils";
import { TypeTagSerializer } from "@mysten/sui/bcs";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { STREAMS } from "../eventlog/subjects.ts";
import { PortError } from "../adapters/ports.ts";
import { LocalChain } from "../adapters/chain/local/local-chain.ts";
import { addDelegateKey, createAccount, deactivate, generateKeypair, mint, reactivate, removeDelegateKey, transfer } from "../adapters/chain/local/accounts.ts";
import { buildSignedTx } from "../adapters/chain/local/tx.ts";
import { GAS_FEE_MIST, type ChainBlock, type TxBody } from "../adapters/chain/local/model.ts";
import type { SubmitResult } from "../adapters/chain/local/ledger.ts";
import { CHAIN_STATE_BUCKET, CHAIN_TX_SUBJECT } from "../adapters/chain/local/state-keys.ts";

const PACKAGE_ID = "0x" + "ab".repeat(32);
const NETWORK = "localnet";

let server: NatsServerHandle;
let log: EventLog;
let rawNc: NatsConnection;
let a: LocalChain; // opened on the EventLog
let b: LocalChain; // a second process: its own bare connection
const operator = generateKeypair();

async function expectPortError(p: Promise<unknown>, kind: PortError["kind"]): Promise<PortError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PortError);
  expect((err as PortError).kind).toBe(kind);
  return err as PortError;
}

async function fundedKey(amountSui = 1n) {
  const k = generateKeypair();
  await mint(a, { operatorKey: operator.secretKey, to: k.keypair.address, amount: amountSui * 1_000_000_000n });
  return k;
}

function blobId(n: number | string): string {
  return Buffer.from(`blob-${n}-${Math.random()}`).toString("base64url").slice(0, 43);
}

async function chainTxCount(): Promise<number> {
  const info = await log.jsm.streams.info(STREAMS.chain, { subjects_filter: CHAIN_TX_SUBJECT });
  return info.state.messages;
}

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

beforeAll(async () => {
  server = await startNatsServer();
  log = await openEventLog({ servers: server.url, name: "chain-test-a" });
  rawNc = await connect({ servers: server.url, name: "chain-test-b" });
  // no background healing on these two, so the crash tests can observe a state left behind
  a = await LocalChain.open(log, { packageId: PACKAGE_ID, network: NETWORK, operatorKey: operator.secretKey, healIntervalMs: 0 });
  b = await LocalChain.open(rawNc, { packageId: PACKAGE_ID, network: NETWORK, healIntervalMs: 0 });
});

afterAll(async () => {
  await a?.close();
  await b?.close();
  await rawNc?.close();
  await log?.close();
  await server?.cleanup();
});

describe("genesis and keys", () => {
  it("records the operator and refuses another operator key on the same ledger", async () => {
    const g = await b.genesis();
    expect(g?.operator_address).toBe(operator.keypair.address);
    expect(g?.network).toBe(NETWORK);
    const other = generateKeypair();
    await expectPortError(LocalChain.open(log, { packageId: PACKAGE_ID, network: NETWORK, operatorKey: other.secretKey, healIntervalMs: 0 }), "forbidden");
    await expectPortError(LocalChain.open(log, { packageId: PACKAGE_ID, network: "testnet", healIntervalMs: 0 }), "invalid");
  });

  it("derives Sui addresses exactly like @mysten/sui", () => {
    const { secretKey, keypair } = generateKeypair();
    const sui = Ed25519Keypair.fromSecretKey(secretKey);
    expect(keypair.address).toBe(sui.toSuiAddress());
    expect(keypair.address).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it("only the operator may mint or publish objects", async () => {
    const k = await fundedKey();
    await expectPortError(b.signAndSubmit("mint", k.secretKey, { to: k.keypair.address, token: "SUI", amount: "5" }), "forbidden");
    await expectPortError(b.putObject("0x" + "01".repeat(32), { type: "package", version: 1, fields: {} }), "forbidden");
  });
});

describe("accounts and delegate keys", () => {
  it("creates one account per owner, paying gas", async () => {
    const owner = await fundedKey();
    const account = await createAccount(b, { ownerKey: owner.secretKey });
    expect(account.id).toMatch(/^0x[0-9a-f]{64}$/);
    expect(account.owner).toBe(owner.keypair.address);
    expect(account.active).toBe(true);
    expect(account.delegate_keys).toEqual([]);
    expect(await a.accountExists(owner.keypair.address)).toBe(true);
    expect((await a.getAccount(account.id))?.owner).toBe(owner.keypair.address);
    expect((await a.balance(owner.keypair.address)).balances.SUI).toBe(1_000_000_000n - GAS_FEE_MIST);
    await expectPortError(createAccount(a, { ownerKey: owner.secretKey }), "rejected");
    expect(await a.accountExists(generateKeypair().keypair.address)).toBe(false);
  });

  it("a sponsor can pay the gas of an unfunded owner", async () => {
    const sponsor = await fundedKey();
    const owner = generateKeypair();
    const account = await createAccount(a, { ownerKey: owner.secretKey, sponsorKey: sponsor.secretKey });
    expect(account.owner).toBe(owner.keypair.address);
    expect((await b.balance(sponsor.keypair.address)).balances.SUI).toBe(1_000_000_000n - GAS_FEE_MIST);
    expect((await b.balance(owner.keypair.address)).balances.SUI).toBe(0n);
  });

  it("adds and removes delegate keys; a removal is visible at once from another process", async () => {
    const owner = await fundedKey();
    const account = await createAccount(a, { ownerKey: owner.secretKey });
    const delegate = generateKeypair();
    const withKey = await addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: delegate.keypair.publicKey, label: "laptop" });
    expect(withKey.delegate_keys).toHaveLength(1);
    expect(withKey.delegate_keys[0]).toMatchObject({ public_key: delegate.keypair.publicKeyHex, sui_address: delegate.keypair.address, label: "laptop" });

    expect(await b.resolveDelegate(delegate.keypair.publicKeyHex)).toEqual({ owner: owner.keypair.address, accountId: account.id });
    expect(await b.resolveDelegate(delegate.keypair.publicKeyHex.toUpperCase(), account.id)).toEqual({ owner: owner.keypair.address, accountId: account.id });
    expect(await b.resolveDelegate(delegate.keypair.publicKeyHex, "0x" + "00".repeat(32))).toBeNull();
    expect(await b.ownerOfDelegateAddress(delegate.keypair.address)).toEqual({ owner: owner.keypair.address, accountId: account.id });

    await removeDelegateKey(a, { ownerKey: owner.secretKey, publicKey: delegate.keypair.publicKeyHex });
    expect(await b.resolveDelegate(delegate.keypair.publicKeyHex)).toBeNull();
    expect(await b.resolveDelegate(delegate.keypair.publicKeyHex, account.id)).toBeNull();
    expect(await b.ownerOfDelegateAddress(delegate.keypair.address)).toBeNull();
    await expectPortError(removeDelegateKey(b, { ownerKey: owner.secretKey, publicKey: delegate.keypair.publicKeyHex }), "not_found");

    // and back again through the other process
    await addDelegateKey(b, { ownerKey: owner.secretKey, publicKey: delegate.keypair.publicKeyHex });
    expect(await a.resolveDelegate(delegate.keypair.publicKeyHex)).not.toBeNull();
  });

  it("deactivation hides the account's keys but keeps the account; reactivation restores them", async () => {
    const owner = await fundedKey();
    const account = await createAccount(a, { ownerKey: owner.secretKey });
    const delegate = generateKeypair();
    await addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: delegate.keypair.publicKeyHex });
    await deactivate(b, { signerKey: owner.secretKey });
    expect(await a.resolveDelegate(delegate.keypair.publicKeyHex)).toBeNull();
    expect(await a.ownerOfDelegateAddress(delegate.keypair.address)).toBeNull();
    expect(await a.accountExists(owner.keypair.address)).toBe(true);
    expect((await a.getAccount(account.id))?.active).toBe(false);
    await expectPortError(addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: generateKeypair().keypair.publicKeyHex }), "rejected");
    await reactivate(a, { signerKey: owner.secretKey });
    expect(await b.resolveDelegate(delegate.keypair.publicKeyHex)).toEqual({ owner: owner.keypair.address, accountId: account.id });
  });

  it("enforces the delegate key rules: owner only, 20 keys, 64-byte labels, one account per key", async () => {
    const owner = await fundedKey();
    const account = await createAccount(a, { ownerKey: owner.secretKey });
    const stranger = await fundedKey();
    const key = generateKeypair().keypair.publicKeyHex;
    await expectPortError(addDelegateKey(a, { ownerKey: stranger.secretKey, accountId: account.id, publicKey: key }), "forbidden");
    await expectPortError(addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: key, label: "é".repeat(33) }), "invalid");
    await addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: key, label: "x".repeat(64) });
    await expectPortError(addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: key }), "rejected");
    const otherOwner = await fundedKey();
    await createAccount(a, { ownerKey: otherOwner.secretKey });
    await expectPortError(addDelegateKey(a, { ownerKey: otherOwner.secretKey, publicKey: key }), "rejected");
    for (let i = 1; i < 20; i++) await addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: generateKeypair().keypair.publicKeyHex });
    expect((await b.getAccount(account.id))?.delegate_keys).toHaveLength(20);
    await expectPortError(addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: generateKeypair().keypair.publicKeyHex }), "rejected");
  });
});

describe("signatures", () => {
  it("rejects forged, tampered, replayed-elsewhere and wrongly signed transactions", async () => {
    const owner = await fundedKey();
    const account = await createAccount(a, { ownerKey: owner.secretKey });
    const attacker = await fundedKey();
    const delegate = generateKeypair().keypair.publicKeyHex;
    const args = { account_id: account.id, public_key: delegate, label: "" };

    // signature by another key over a body naming the owner as sender
    const signed = buildSignedTx({ chain: NETWORK, kind: "add_delegate_key", args, sender: owner.secretKey });
    const forged = buildSignedTx({ chain: NETWORK, kind: "add_delegate_key", args, sender: attacker.secretKey });
    await expectPortError(a.submit({ tx_bytes: signed.tx_bytes, signatures: forged.signatures }), "forbidden");

    // body altered after signing
    const body = JSON.parse(Buffer.from(signed.tx_bytes, "base64").toString()) as TxBody<"add_delegate_key">;
    const altered = { ...body, args: { ...body.args, public_key: generateKeypair().keypair.publicKeyHex } };
    await expectPortError(a.submit({ tx_bytes: Buffer.from(JSON.stringify(altered)).toString("base64"), signatures: signed.signatures }), "forbidden");

    // a corrupted signature
    const raw = Buffer.from(signed.signatures[0]!, "base64");
    raw[10] ^= 0xff;
    await expectPortError(a.submit({ tx_bytes: signed.tx_bytes, signatures: [raw.toString("base64")] }), "forbidden");

    // validly signed by the attacker, for the owner's account
    await expectPortError(a.submit(forged), "forbidden");

    // for another network
    await expectPortError(a.submit(buildSignedTx({ chain: "testnet", kind: "add_delegate_key", args, sender: owner.secretKey })), "invalid");

    // stale timestamp
    await expectPortError(a.submit(buildSignedTx({ chain: NETWORK, kind: "add_delegate_key", args, sender: owner.secretKey, timestampMs: Date.now() - 3_600_000 })), "invalid");

    expect(await a.resolveDelegate(delegate)).toBeNull();

    // the genuine one works; submitting it again returns the same result without a second execution
    const first = await a.submit(signed);
    const again = await b.submit(signed);
    expect(first.appended).toBe(true);
    expect(again.appended).toBe(false);
    expect(again.digest).toBe(first.digest);
    expect(again.outcome.account?.version).toBe(first.outcome.account?.version);
    expect(await b.resolveDelegate(delegate)).toEqual({ owner: owner.keypair.address, accountId: account.id });
    expect((await a.getTransaction(first.digest))?.seq).toBe(first.seq);
  });

  it("accepts a transaction signed with @mysten/sui's Ed25519Keypair.signTransaction", async () => {
    const sui = Ed25519Keypair.generate();
    await mint(a, { operatorKey: operator.secretKey, to: sui.toSuiAddress(), amount: 10n * GAS_FEE_MIST });
    const body: TxBody<"create_account"> = { v: 1, chain: NETWORK, kind: "create_account", sender: sui.toSuiAddress(), nonce: "n-1", timestamp_ms: Date.now(), args: {} };
    const txBytes = new TextEncoder().encode(JSON.stringify(body));
    const { signature } = await sui.signTransaction(txBytes);
    const res = await b.submit({ tx_bytes: Buffer.from(txBytes).toString("base64"), signatures: [signature] });
    expect(res.outcome.account?.owner).toBe(sui.toSuiAddress());
  });
});

describe("blob objects and gas", () => {
  it("records blob objects idempotently per (owner, blob_id), charging gas once", async () => {
    const wallet = await fundedKey();
    const owner = generateKeypair().keypair.address;
    const id = blobId("idem");
    const before = (await a.balance(wallet.keypair.address)).balances.SUI;
    const first = await a.recordBlob({ owner, namespace: "notes", blobId: id, size: 123, walletSecretKey: wallet.secretKey });
    expect(first).toMatchObject({ owner, namespace: "notes", blobId: id, size: 123, packageId: PACKAGE_ID });
    expect(first.objectId).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await a.balance(wallet.keypair.address)).balances.SUI).toBe(before - GAS_FEE_MIST);

    const txsBefore = await chainTxCount();
    const second = await b.recordBlob({ owner, namespace: "notes", blobId: id, size: 123, walletSecretKey: wallet.secretKey });
    expect(second).toEqual(first);
    expect((await a.balance(wallet.keypair.address)).balances.SUI).toBe(before - GAS_FEE_MIST);
    expect(await chainTxCount()).toBe(txsBefore);

    const obj = await b.getObject(first.objectId);
    expect(obj?.owner).toEqual({ AddressOwner: owner });
    expect(await b.getBlob(owner, id)).toEqual(first);
  });

  it("lists an owner's blobs newest first, by namespace, across index pages", async () => {
    const wallet = await fundedKey();
    const owner = generateKeypair().keypair.address;
    const ids: string[] = [];
    for (let i = 0; i < 140; i++) {
      const id = blobId(i);
      ids.push(id);
      await (i % 2 ? a : b).recordBlob({ owner, namespace: i % 3 === 0 ? "three" : "other", blobId: id, size: i, walletSecretKey: wallet.secretKey });
    }
    const all = await a.listBlobs(owner, { limit: 1000 });
    expect(all.map((x) => x.blobId)).toEqual([...ids].reverse());
    const top = await b.listBlobs(owner, { limit: 5 });
    expect(top.map((x) => x.blobId)).toEqual(ids.slice(-5).reverse());
    const three = await b.listBlobs(owner, { namespace: "three", limit: 1000 });
    expect(three.map((x) => x.blobId)).toEqual(ids.filter((_, i) => i % 3 === 0).reverse());
    expect(await b.listBlobs(owner, { namespace: "three", limit: 3 })).toEqual(three.slice(0, 3));
    expect(await b.listBlobs(owner, { namespace: "none", limit: 10 })).toEqual([]);
    expect(await b.listBlobs(generateKeypair().keypair.address, { limit: 10 })).toEqual([]);
    expect((await a.balance(wallet.keypair.address)).balances.SUI).toBe(1_000_000_000n - 140n * GAS_FEE_MIST);
  });

  it("fails with insufficient_funds when the paying wallet lacks gas", async () => {
    const empty = generateKeypair();
    const owner = generateKeypair().keypair.address;
    await expectPortError(a.recordBlob({ owner, namespace: "n", blobId: blobId("poor"), size: 1, walletSecretKey: empty.secretKey }), "insufficient_funds");
    await expectPortError(createAccount(a, { ownerKey: empty.secretKey }), "insufficient_funds");
    expect(await a.listBlobs(owner, { limit: 10 })).toEqual([]);

    const almost = generateKeypair();
    await mint(a, { operatorKey: operator.secretKey, to: almost.keypair.address, amount: GAS_FEE_MIST - 1n });
    await expectPortError(a.recordBlob({ owner, namespace: "n", blobId: blobId("poor2"), size: 1, walletSecretKey: almost.secretKey }), "insufficient_funds");
    expect((await a.balance(almost.keypair.address)).balances.SUI).toBe(GAS_FEE_MIST - 1n);
  });

  it("transactions committed in one block see each other: no double spend of the last gas", async () => {
    const wallet = generateKeypair();
    await mint(a, { operatorKey: operator.secretKey, to: wallet.keypair.address, amount: GAS_FEE_MIST });
    const owner = generateKeypair().keypair.address;
    const shared = blobId("same");
    const attempts = await Promise.allSettled([
      a.recordBlob({ owner, namespace: "n", blobId: blobId("one"), size: 1, walletSecretKey: wallet.secretKey }),
      a.recordBlob({ owner, namespace: "n", blobId: blobId("two"), size: 1, walletSecretKey: wallet.secretKey }),
      b.recordBlob({ owner, namespace: "n", blobId: blobId("three"), size: 1, walletSecretKey: wallet.secretKey }),
    ]);
    expect(attempts.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    for (const r of attempts) if (r.status === "rejected") expect((r.reason as PortError).kind).toBe("insufficient_funds");
    expect((await b.balance(wallet.keypair.address)).balances.SUI).toBe(0n);
    expect(await b.listBlobs(owner, { limit: 10 })).toHaveLength(1);

    // the same blob twice in one block: one object, one charge
    const payer = await fundedKey();
    const [x, y] = await Promise.all([
      a.recordBlob({ owner, namespace: "n", blobId: shared, size: 1, walletSecretKey: payer.secretKey }),
      a.recordBlob({ owner, namespace: "n", blobId: shared, size: 1, walletSecretKey: payer.secretKey }),
    ]);
    expect(x).toEqual(y);
    expect((await b.balance(payer.keypair.address)).balances.SUI).toBe(1_000_000_000n - GAS_FEE_MIST);
  });

  it("transfers balances, charging gas on top", async () => {
    const from = await fundedKey();
    const to = generateKeypair();
    await transfer(b, { fromKey: from.secretKey, to: to.keypair.address, amount: 500n });
    await mint(a, { operatorKey: operator.secretKey, to: from.keypair.address, amount: 7n, token: "WAL" });
    await transfer(a, { fromKey: from.secretKey, to: to.keypair.address, amount: 7n, token: "WAL" });
    expect((await a.balance(from.keypair.address)).balances).toEqual({ SUI: 1_000_000_000n - 500n - 2n * GAS_FEE_MIST, WAL: 0n });
    expect((await b.balance(to.keypair.address)).balances).toEqual({ SUI: 500n, WAL: 7n });
    await expectPortError(transfer(a, { fromKey: to.secretKey, to: from.keypair.address, amount: 1n }), "insufficient_funds");
  });
});

describe("objects for the Sui RPC", () => {
  it("publishes objects with dynamic fields readable by value, by BCS and at the derived field id", async () => {
    const ksId = "0x" + "5e".repeat(32);
    const nameBcs = Buffer.from(bcs.u64().serialize(1).toBytes()).toString("base64");
    const valueBcs = Buffer.from([1, 2, 3]).toString("base64");
    const stored = await a.putObject(ksId, {
      type: `${PACKAGE_ID}::key_server::KeyServer`,
      version: 7,
      owner: { Shared: { initial_shared_version: "1" } },
      fields: { first_version: "1", last_version: "1" },
      dynamicFields: [{ name: { type: "u64", value: "1", bcs: nameBcs }, value_type: `${PACKAGE_ID}::key_server::KeyServerV1`, value: { url: "http://127.0.0.1:1" }, value_bcs: valueBcs }],
    });
    expect(stored.version).toBe("7");
    expect((await b.getObject(ksId))?.type).toBe(`${PACKAGE_ID}::key_server::KeyServer`);
    const byValue = await b.getDynamicField(ksId, { type: "u64", value: 1 });
    expect(byValue?.value).toEqual({ url: "http://127.0.0.1:1" });
    const byBcs = await b.getDynamicField(ksId, { type: "u64", bcs: nameBcs });
    expect(byBcs?.field_id).toBe(deriveDynamicFieldID(ksId, TypeTagSerializer.parseFromStr("u64"), bcs.u64().serialize(1).toBytes()));
    const fieldObject = await b.getObject(byBcs!.field_id!);
    expect(fieldObject?.type).toBe(`0x2::dynamic_field::Field<u64, ${PACKAGE_ID}::key_server::KeyServerV1>`);
    const content = Buffer.from(fieldObject!.bcs!, "base64");
    expect(content.subarray(32 + 8).toString("base64")).toBe(valueBcs);
    expect(await b.getDynamicField(ksId, { type: "u64", value: "2" })).toBeNull();
  });
});

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
      jobs.push(chain.signAndSubmit("record_blob", wallet.secretKey, { owner, namespace: "race", blob_id: blobId(`race-${i}`), package_id: PACKAGE_ID, size: i }));
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

  it("catches up after a crash between the append and the KV write", async () => {
    const owner = await fundedKey();
    const account = await createAccount(a, { ownerKey: owner.secretKey });
    const delegate = generateKeypair();
    await addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: delegate.keypair.publicKeyHex });

    // the writer "crashes" right after appending the removal
    const removal = buildSignedTx({ chain: NETWORK, kind: "remove_delegate_key", args: { account_id: account.id, public_key: delegate.keypair.publicKeyHex }, sender: owner.secretKey });
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
    const add = buildSignedTx({ chain: NETWORK, kind: "add_delegate_key", args: { account_id: account.id, public_key: second.keypair.publicKeyHex, label: "" }, sender: owner.secretKey });
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
      const tx = buildSignedTx({ chain: NETWORK, kind: "create_account", args: {}, sender: owner.secretKey });
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
