// The local chain against a private nats-server (test/support/local-chain-suite.ts): genesis and the operator,
// accounts and delegate keys.
import { describe, expect, it } from "vitest";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { LocalChain } from "../adapters/chain/local/local-chain.ts";
import { addDelegateKey, createAccount, deactivate, generateKeypair, reactivate, removeDelegateKey } from "../adapters/chain/local/accounts.ts";
import { GAS_FEE_MIST } from "../adapters/chain/sui/transaction-envelope.ts";
import { NETWORK, PACKAGE_ID, a, b, expectPortError, fundedKey, log, operator, useLocalChainSuite } from "./support/local-chain-suite.ts";

useLocalChainSuite();

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
