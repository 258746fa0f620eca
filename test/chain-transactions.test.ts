// The local chain against a private nats-server (test/support/local-chain-suite.ts): signatures, blob objects and
// gas, and the objects the Sui RPC serves.
import { describe, expect, it } from "vitest";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { bcs } from "@mysten/sui/bcs";
import { deriveDynamicFieldID } from "@mysten/sui/utils";
import { TypeTagSerializer } from "@mysten/sui/bcs";
import { SignatureRejected, type PortError } from "../adapters/ports.ts";
import { createAccount, generateKeypair, mint, transfer } from "../adapters/chain/local/accounts.ts";
import { buildSignedTx } from "../adapters/chain/local/tx.ts";
import { GAS_FEE_MIST } from "../adapters/chain/sui/transaction-envelope.ts";
import { chainIdentifierDigest, localTarget } from "../adapters/chain/local/transaction-data.ts";
import { Transaction } from "@mysten/sui/transactions";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { startChainRpcServer } from "../adapters/chain/local/rpc/server.ts";
import { ledgerObjectSource } from "../adapters/chain/local/rpc/ledger-source.ts";
import { NETWORK, PACKAGE_ID, a, b, blobId, chainTxCount, expectPortError, fundedKey, operator, useLocalChainSuite } from "./support/local-chain-suite.ts";

useLocalChainSuite();

describe("signatures", () => {
  it("rejects forged, tampered, replayed-elsewhere and wrongly signed transactions", async () => {
    const owner = await fundedKey();
    const account = await createAccount(a, { ownerKey: owner.secretKey });
    const attacker = await fundedKey();
    const delegate = generateKeypair().keypair.publicKeyHex;
    const args = { account_id: account.id, public_key: delegate, label: "" };

    // signature by another key over a body naming the owner as sender
    const signed = buildSignedTx({ target: a.target, kind: "add_delegate_key", args, sender: owner.secretKey });
    const forged = buildSignedTx({ target: a.target, kind: "add_delegate_key", args, sender: attacker.secretKey });
    // a signature that does not verify is the port's SignatureRejected (the console answers it invalid_signature)
    expect(await expectPortError(a.submit({ tx_bytes: signed.tx_bytes, signatures: forged.signatures }), "forbidden")).toBeInstanceOf(SignatureRejected);

    // body altered after signing
    const altered = bcs.TransactionData.parse(Buffer.from(signed.tx_bytes, "base64"));
    altered.V1!.gasData.budget = String(BigInt(altered.V1!.gasData.budget) * 2n);
    expect(await expectPortError(a.submit({ tx_bytes: bcs.TransactionData.serialize(altered).toBase64(), signatures: signed.signatures }), "forbidden")).toBeInstanceOf(SignatureRejected);

    // a corrupted signature
    const raw = Buffer.from(signed.signatures[0]!, "base64");
    raw[10] ^= 0xff;
    expect(await expectPortError(a.submit({ tx_bytes: signed.tx_bytes, signatures: [raw.toString("base64")] }), "forbidden")).toBeInstanceOf(SignatureRejected);

    // validly signed by the attacker, for the owner's account: the signature verifies, the sender did not sign
    expect(await expectPortError(a.submit(forged), "forbidden")).not.toBeInstanceOf(SignatureRejected);

    // for another network
    await expectPortError(a.submit(buildSignedTx({ target: localTarget("testnet", a.packageId), kind: "add_delegate_key", args, sender: owner.secretKey })), "invalid");

    // stale timestamp
    await expectPortError(a.submit(buildSignedTx({ target: a.target, kind: "add_delegate_key", args, sender: owner.secretKey, timestampMs: Date.now() - 3_600_000 })), "invalid");

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

  it("executes a transaction built with @mysten/sui's Transaction and signed with Ed25519Keypair.signTransaction; its digest is the SDK's", async () => {
    const sui = Ed25519Keypair.generate();
    await mint(a, { operatorKey: operator.secretKey, to: sui.toSuiAddress(), amount: 10n * GAS_FEE_MIST });
    const tx = new Transaction();
    tx.setSender(sui.toSuiAddress());
    tx.setGasPayment([]);
    tx.setGasPrice(1000);
    tx.setGasBudget(GAS_FEE_MIST);
    const now = Date.now();
    tx.setExpiration({ ValidDuring: { minEpoch: null, maxEpoch: null, minTimestamp: String(now - 60_000), maxTimestamp: String(now + 60_000), chain: chainIdentifierDigest(NETWORK), nonce: 7 } });
    tx.moveCall({
      target: `${a.packageId}::account::create_account`,
      arguments: [tx.sharedObjectRef({ objectId: a.target.registryId, initialSharedVersion: 1, mutable: true }), tx.object.clock()],
    });
    const txBytes = await tx.build();
    const { signature } = await sui.signTransaction(txBytes);
    const res = await b.submit({ tx_bytes: Buffer.from(txBytes).toString("base64"), signatures: [signature] });
    expect(res.outcome.account?.owner).toBe(sui.toSuiAddress());
    expect(res.digest).toBe(await tx.getDigest());
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

  it("records several blobs in one transaction, in order, for several owners; recorded ones stay as they were; gas once", async () => {
    const wallet = await fundedKey();
    const [o1, o2] = [generateKeypair().keypair.address, generateKeypair().keypair.address];
    const ids = Array.from({ length: 6 }, (_, i) => blobId(`batch-${i}`));
    const earlier = await a.recordBlob({ owner: o1, namespace: "n", blobId: ids[0]!, size: 1, walletSecretKey: wallet.secretKey });
    const before = (await a.balance(wallet.keypair.address)).balances.SUI;
    const txsBefore = await chainTxCount();
    const inputs = [
      { owner: o1, namespace: "n", blobId: ids[1]!, size: 2 },
      { owner: o2, namespace: "m", blobId: ids[2]!, size: 3 },
      { owner: o1, namespace: "n", blobId: ids[0]!, size: 1 },
      { owner: o1, namespace: "k", blobId: ids[3]!, size: 4 },
      { owner: o2, namespace: "m", blobId: ids[2]!, size: 3 },
    ];
    const got = await b.recordBlobs(inputs, wallet.secretKey);
    expect(got.map((g) => [g.owner, g.blobId, g.namespace, g.size])).toEqual(inputs.map((i) => [i.owner, i.blobId, i.namespace, i.size]));
    expect(got[2]).toEqual(earlier);
    expect(got[4]).toEqual(got[1]);
    expect(new Set(got.map((g) => g.objectId)).size).toBe(4);
    expect(await chainTxCount()).toBe(txsBefore + 1);
    expect((await a.balance(wallet.keypair.address)).balances.SUI).toBe(before - GAS_FEE_MIST);
    expect((await a.listBlobs(o1, { limit: 10 })).map((x) => x.blobId)).toEqual([ids[3]!, ids[1]!, ids[0]!]);
    expect((await a.listBlobs(o1, { namespace: "n", limit: 10 })).map((x) => x.blobId)).toEqual([ids[1]!, ids[0]!]);
    expect((await a.listBlobs(o2, { limit: 10 })).map((x) => x.blobId)).toEqual([ids[2]!]);
    // the same records again: nothing appended
    expect(await a.recordBlobs(inputs, wallet.secretKey)).toEqual(got);
    expect(await chainTxCount()).toBe(txsBefore + 1);
    // one bad record refuses the whole transaction
    await expectPortError(a.recordBlobs([{ owner: o1, namespace: "n", blobId: ids[4]!, size: 1 }, { owner: o1, namespace: "", blobId: ids[5]!, size: 1 }], wallet.secretKey), "invalid");
    expect(await a.getBlob(o1, ids[4]!)).toBeNull();
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

describe("transactions over the Sui JSON-RPC", () => {
  it("SuiJsonRpcClient executes SDK-built transactions on the ledger, reads them back and the balances; a refusal is a JSON-RPC error with the reason", async () => {
    const rpc = await startChainRpcServer({ objects: ledgerObjectSource(a, { packageIds: [PACKAGE_ID], accounts: a }), transactions: a, chainName: NETWORK });
    try {
      const client = new SuiJsonRpcClient({ url: rpc.url, network: "localnet" });
      const kp = Ed25519Keypair.generate();
      await mint(a, { operatorKey: operator.secretKey, to: kp.toSuiAddress(), amount: 10n * GAS_FEE_MIST });
      const checkpointDigest = (await client.getCheckpoint({ id: "0" })).digest;
      const baseTx = () => {
        const tx = new Transaction();
        tx.setGasPayment([]);
        tx.setGasPrice(BigInt(1000));
        tx.setGasBudget(GAS_FEE_MIST);
        const now = Date.now();
        tx.setExpiration({ ValidDuring: { minEpoch: null, maxEpoch: null, minTimestamp: String(now - 60_000), maxTimestamp: String(now + 60_000), chain: checkpointDigest, nonce: (now & 0xffff) + Math.floor(Math.random() * 1000) } });
        return tx;
      };
      const createAccountTx = () => {
        const tx = baseTx();
        tx.moveCall({ target: `${PACKAGE_ID}::account::create_account`, arguments: [tx.sharedObjectRef({ objectId: a.target.registryId, initialSharedVersion: 1, mutable: true }), tx.object.clock()] });
        return tx;
      };
      const executed = await client.signAndExecuteTransaction({ transaction: createAccountTx(), signer: kp, options: { showEffects: true, showObjectChanges: true, showBalanceChanges: true, showRawInput: true } });
      expect(executed.effects?.status.status).toBe("success");
      const account = executed.objectChanges?.find((c) => c.type === "created");
      expect(account).toMatchObject({ objectType: `${PACKAGE_ID}::account::MemWalAccount`, sender: kp.toSuiAddress() });
      expect(await a.accountExists(kp.toSuiAddress())).toBe(true);
      expect(executed.balanceChanges).toEqual([{ owner: { AddressOwner: kp.toSuiAddress() }, coinType: "0x2::sui::SUI", amount: String(-GAS_FEE_MIST) }]);
      expect(bcs.SenderSignedData.parse(Buffer.from(executed.rawTransaction!, "base64"))[0]!.txSignatures).toHaveLength(1);
      const read = await client.getTransactionBlock({ digest: executed.digest, options: { showEffects: true } });
      expect(read).toMatchObject({ digest: executed.digest, effects: { status: { status: "success" } } });
      expect(await client.getBalance({ owner: kp.toSuiAddress() })).toMatchObject({ totalBalance: String(9n * GAS_FEE_MIST), fundsInAddressBalance: String(9n * GAS_FEE_MIST) });
      expect(await client.getReferenceGasPrice()).toBe(1000n);
      await expect(client.signAndExecuteTransaction({ transaction: createAccountTx(), signer: kp })).rejects.toThrow(/already has account/);

      // the account is a shared MemWalAccount object: the SDK resolves `tx.object(accountId)` through the RPC
      const accountId = (account as { objectId: string }).objectId;
      const delegate = Ed25519Keypair.generate();
      const addKey = baseTx();
      addKey.moveCall({
        target: `${PACKAGE_ID}::account::add_delegate_key`,
        arguments: [addKey.object(accountId), addKey.pure.vector("u8", delegate.getPublicKey().toRawBytes()), addKey.pure.address(delegate.toSuiAddress()), addKey.pure.string("agent"), addKey.object.clock()],
      });
      expect((await client.signAndExecuteTransaction({ transaction: addKey, signer: kp, options: { showEffects: true } })).effects?.status.status).toBe("success");
      const object = await client.getObject({ id: accountId, options: { showBcs: true, showOwner: true, showContent: true } });
      expect(object.data?.owner).toEqual({ Shared: { initial_shared_version: 1 } });
      expect((object.data?.content as unknown as { fields: { delegate_keys: { fields: { sui_address: string } }[] } }).fields.delegate_keys.map((k) => k.fields.sui_address)).toEqual([delegate.toSuiAddress()]);
      await expect(client.executeTransactionBlock({ transactionBlock: "AAAA", signature: [] })).rejects.toThrow(/Transaction refused/);
    } finally {
      await rpc.close();
    }
  });
});
