// The ledger's Sui TransactionData codec (adapters/chain/local/transaction-data.ts): every kind round-trips through
// real BCS, the SDK reads the bytes as the same Move calls, and whatever a builder would not produce is refused.
import { describe, expect, it } from "vitest";
import { bcs } from "@mysten/sui/bcs";
import { Transaction } from "@mysten/sui/transactions";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { decodeTransactionData, encodeTransactionData, localTarget, transactionValidUntil } from "../adapters/chain/local/transaction-data.ts";
import { encodeTransactionKind } from "../adapters/chain/sui/transaction-kind.ts";
import { wrapTransactionKindBytes } from "../adapters/chain/sui/transaction-envelope.ts";
import { decodePure, encodePure, MOVE_CALLS } from "../adapters/chain/sui/move-calls.ts";
import { generateKeypair, suiAddressOf } from "../adapters/chain/sui/keys.ts";
import { buildSignedTx, signOwnTransaction, verifySignedTx } from "../adapters/chain/local/tx.ts";
import type { CallKind, TxArgs, TxBody } from "../adapters/chain/local/model.ts";

const PKG = "0x" + "5a".repeat(32);
const target = localTarget("localnet", PKG);
const id = (n: number) => "0x" + n.toString(16).padStart(64, "0");
const sender = id(0xa1);
const sponsor = id(0xb2);
const pk = generateKeypair().keypair.publicKeyHex;
const UUID = "0b6c3a5e-8f1d-4c2a-9e7b-1d2c3b4a5f60";

const SAMPLES: { [K in CallKind]: TxArgs[K] } = {
  genesis: { operator_public_key: pk, package_id: PKG },
  create_account: {},
  add_delegate_key: { account_id: id(1), public_key: pk, label: "laptop ✓" },
  remove_delegate_key: { account_id: id(1), public_key: pk },
  deactivate_account: { account_id: id(1) },
  reactivate_account: { account_id: id(1) },
  record_blob: { package_id: PKG, records: [{ owner: id(2), blob_id: "bLoB_id-1=", namespace: "notes", size: 4096 }, { owner: id(3), blob_id: "other", namespace: "notes", size: 1 }] },
  transfer: { to: id(3), token: "WAL", amount: "18446744073709551615" },
  mint: { to: id(3), token: "SUI", amount: "5" },
  put_object: { object: { object_id: id(4), type: "package", version: "1", fields: { nested: [1, "x"] } } },
  bucket_policy_create: { bucket_id: UUID, space_id: UUID },
  bucket_group_create: { policy_id: id(5), bucket_id: UUID },
  grant_bucket_access: { group_ids: [id(6), id(7)], recipient: id(8), scope: "readwrite" },
  share_admin: { group_id: id(6), member: id(8) },
  unshare: { group_id: id(6), member: id(8) },
  unshare_bucket_access: { group_id: id(6), service_signer: id(8) },
};

function body<K extends CallKind>(kind: K, args: TxArgs[K] = SAMPLES[kind] as TxArgs[K]): TxBody<K> {
  return { chain: "localnet", kind, sender, gas_owner: sponsor, nonce: 42, valid_from_ms: 1_000, valid_until_ms: 2_000, args };
}

/** Encodes, lets `edit` change the parsed TransactionData, and decodes the result. */
function decodeEdited(edit: (d: NonNullable<ReturnType<typeof bcs.TransactionData.parse>["V1"]>) => void, kind: CallKind = "add_delegate_key") {
  const parsed = bcs.TransactionData.parse(encodeTransactionData(body(kind), target));
  edit(parsed.V1!);
  return decodeTransactionData(bcs.TransactionData.serialize(parsed).toBytes(), target);
}

const refused = (r: ReturnType<typeof decodeTransactionData>) => ("error" in r ? r.error : "accepted");

describe("TransactionData codec", () => {
  it.each(Object.keys(SAMPLES) as CallKind[])("%s round-trips; the SDK reads and rebuilds the identical bytes", async (kind) => {
    const bytes = encodeTransactionData(body(kind), target);
    expect(decodeTransactionData(bytes, target)).toEqual({ body: body(kind) });
    const sdk = Transaction.from(bytes);
    const calls = sdk.getData().commands.map((c) => c.MoveCall!);
    expect(calls[0]).toMatchObject({ package: PKG, module: MOVE_CALLS[kind].module, function: MOVE_CALLS[kind].fn });
    expect(await sdk.build()).toEqual(bytes);
    expect(transactionValidUntil(bytes)).toBe(2_000);
  });

  it.each(Object.keys(SAMPLES) as CallKind[])("%s: a kind's BCS wrapped as bytes is the TransactionData encoded whole", (kind) => {
    const b = body(kind);
    const envelope = { target, sender: b.sender, gasOwner: b.gas_owner!, validFromMs: b.valid_from_ms, validUntilMs: b.valid_until_ms, nonce: b.nonce };
    expect(wrapTransactionKindBytes(encodeTransactionKind(kind, b.args, target), envelope)).toEqual(encodeTransactionData(b, target));
  });

  it("a grant is one call per group, sharing the recipient and scope inputs", () => {
    const data = bcs.TransactionData.parse(encodeTransactionData(body("grant_bucket_access"), target)).V1!;
    expect(data.kind.ProgrammableTransaction!.commands).toHaveLength(2);
    expect(data.kind.ProgrammableTransaction!.inputs).toHaveLength(4);
  });

  it("the delegate's address is carried and must match its public key", () => {
    const data = bcs.TransactionData.parse(encodeTransactionData(body("add_delegate_key"), target)).V1!;
    expect(bcs.Address.parse(Buffer.from(data.kind.ProgrammableTransaction!.inputs[2]!.Pure!.bytes, "base64"))).toBe(suiAddressOf(Buffer.from(pk, "hex")));
    expect(refused(decodeEdited((d) => (d.kind.ProgrammableTransaction!.inputs[2] = { Pure: { bytes: bcs.Address.serialize(id(9)).toBase64() } } as never)))).toMatch(/sui_address does not match/);
  });

  it("refuses what a builder would not produce, with the reason", () => {
    const ptb = (d: Parameters<Parameters<typeof decodeEdited>[0]>[0]) => d.kind.ProgrammableTransaction!;
    const call = (d: Parameters<Parameters<typeof decodeEdited>[0]>[0]) => ptb(d).commands[0]!.MoveCall!;
    expect(refused(decodeEdited((d) => (call(d).function = "migrate_account")))).toMatch(/unknown Move call account::migrate_account/);
    expect(refused(decodeEdited((d) => (call(d).package = id(0xdead))))).toMatch(/memory package/);
    expect(refused(decodeEdited((d) => call(d).typeArguments.push("0x2::sui::SUI")))).toMatch(/no type arguments/);
    expect(refused(decodeEdited((d) => (call(d).arguments[1] = { GasCoin: true } as never)))).toMatch(/transaction inputs/);
    expect(refused(decodeEdited((d) => ptb(d).inputs.push({ Pure: { bytes: "AA==" } } as never)))).toMatch(/inputs no call uses/);
    expect(refused(decodeEdited((d) => ptb(d).commands.push(ptb(d).commands[0]!)))).toMatch(/at most 1 add_delegate_key/);
    expect(refused(decodeEdited((d) => d.gasData.payment.push({ objectId: id(1), version: "1", digest: "11111111111111111111111111111111" } as never)))).toMatch(/address balance/);
    expect(refused(decodeEdited((d) => (d.gasData.budget = "10")))).toMatch(/gas budget/);
    expect(refused(decodeEdited((d) => (d.expiration = { None: true } as never)))).toMatch(/ValidDuring/);
    expect(refused(decodeEdited((d) => (d.expiration.ValidDuring!.maxTimestamp = String(10_000_000_000))))).toMatch(/validity window/);
    expect(refused(decodeEdited((d) => (d.expiration.ValidDuring!.minEpoch = "1")))).toMatch(/epoch bounds/);
    // epoch bounds (what the SDK sets when gas comes from an address balance) must hold the local epoch 0, one change at most
    const epochs = (min: string | null, max: string | null) => (d: Parameters<Parameters<typeof decodeEdited>[0]>[0]) => {
      d.expiration.ValidDuring = { ...d.expiration.ValidDuring!, minEpoch: min, maxEpoch: max, minTimestamp: null, maxTimestamp: null };
    };
    expect(decodeEdited(epochs("0", "1"))).toMatchObject({ body: { kind: "add_delegate_key", valid_from_ms: 0, valid_until_ms: Number.MAX_SAFE_INTEGER } });
    expect(refused(decodeEdited(epochs("1", "2")))).toMatch(/must contain the current epoch 0/);
    expect(refused(decodeEdited(epochs("0", "5")))).toMatch(/at most one epoch change/);
    expect(refused(decodeEdited(epochs("0", null)))).toMatch(/both epochs/);
    // the account passed immutably, and a pure argument with a trailing byte
    expect(refused(decodeEdited((d) => ((ptb(d).inputs[0] as { Object: { SharedObject: { mutable: boolean } } }).Object.SharedObject.mutable = false)))).toMatch(/mutably/);
    expect(refused(decodeEdited((d) => (ptb(d).inputs[3] = { Pure: { bytes: Buffer.concat([Buffer.from(bcs.String.serialize("x").toBytes()), Buffer.from([0])]).toString("base64") } } as never)))).toMatch(/not a canonical BCS string/);
    // the wrong registry and another object as the Clock
    expect(refused(decodeEdited((d) => ((ptb(d).inputs[0] as { Object: { SharedObject: { objectId: string } } }).Object.SharedObject.objectId = id(77)), "create_account"))).toMatch(/account registry/);
    expect(refused(decodeEdited((d) => ((ptb(d).inputs[1] as { Object: { SharedObject: { objectId: string } } }).Object.SharedObject.objectId = id(77)), "create_account"))).toMatch(/Clock/);
    // another chain, and bytes that are not TransactionData at all or carry trailing bytes
    expect(refused(decodeTransactionData(encodeTransactionData(body("create_account"), target), localTarget("testnet", PKG)))).toMatch(/another chain/);
    expect(refused(decodeTransactionData(new TextEncoder().encode('{"v":1,"kind":"create_account"}'), target))).toMatch(/not BCS TransactionData|unsupported/);
    const bytes = encodeTransactionData(body("create_account"), target);
    expect(refused(decodeTransactionData(new Uint8Array([...bytes, 0]), target))).toMatch(/trailing bytes/);
  });

  it("verifies the validity window and the sender's and the gas owner's signatures", async () => {
    const owner = Ed25519Keypair.generate();
    const gas = generateKeypair();
    const now = Date.now();
    const signed = buildSignedTx({ target, kind: "create_account", args: {}, sender: owner.getSecretKey(), gasOwner: gas.secretKey, timestampMs: now });
    expect(verifySignedTx(signed, target, now)).toMatchObject({ body: { sender: owner.toSuiAddress(), gas_owner: gas.keypair.address } });
    expect(verifySignedTx(signed, target, now + 11 * 60_000)).toMatchObject({ kind: "invalid", message: /validity window/ });
    expect(verifySignedTx({ ...signed, signatures: [signed.signatures[0]!] }, target, now)).toMatchObject({ kind: "forbidden", message: /gas owner/ });
    // the client's SDK signature over the same bytes is the same kind of signature
    const sdkSig = (await owner.signTransaction(Buffer.from(signed.tx_bytes, "base64"))).signature;
    expect(verifySignedTx({ ...signed, signatures: [sdkSig, signed.signatures[1]!] }, target, now)).toMatchObject({ gasOwner: gas.keypair.address });
  });

  it("an own record_blob transaction is given what verifying its bytes finds; a body it cannot be is refused", () => {
    const wallet = generateKeypair();
    const now = Date.now();
    const own: TxBody<"record_blob"> = { ...body("record_blob"), sender: wallet.keypair.address, gas_owner: undefined, valid_from_ms: now - 1_000, valid_until_ms: now + 1_000 };
    delete (own as { gas_owner?: string }).gas_owner;
    const { tx, vtx } = signOwnTransaction(own, target, wallet.secretKey);
    expect(verifySignedTx(tx, target, now)).toEqual(vtx);
    expect(() => signOwnTransaction({ ...own, sender: sender }, target, wallet.secretKey)).toThrow(/signer/);
    expect(() => signOwnTransaction({ ...own, gas_owner: sponsor }, target, wallet.secretKey)).toThrow(/signer/);
  });
});

describe("pure arguments", () => {
  it("decode only canonical BCS: shortest length prefixes, exact sizes, UTF-8 strings", () => {
    expect(decodePure("string", Uint8Array.of(2, 0x68, 0x69))).toEqual({ value: "hi" });
    expect(decodePure("string", Uint8Array.of(0x82, 0x00, 0x68, 0x69))).toMatchObject({ error: /canonical/ }); // over-long length
    expect(decodePure("string", Uint8Array.of(3, 0x68, 0x69))).toMatchObject({ error: /canonical/ }); // short payload
    expect(decodePure("string", Uint8Array.of(1, 0xff))).toMatchObject({ error: /valid string/ });
    expect(decodePure("u64", encodePure("u64", 2 ** 40))).toEqual({ value: 2 ** 40 });
    expect(decodePure("u64", encodePure("u64-decimal", "18446744073709551615"))).toMatchObject({ error: /out of range/ });
    expect(decodePure("u64-decimal", encodePure("u64-decimal", "18446744073709551615"))).toEqual({ value: "18446744073709551615" });
    expect(() => encodePure("u64-decimal", "18446744073709551616")).toThrow(/u64/);
    expect(decodePure("address", new Uint8Array(31))).toMatchObject({ error: /canonical/ });
    expect(decodePure("scope", Uint8Array.of(2))).toMatchObject({ error: /scope/ });
    const long = "x".repeat(300);
    expect(decodePure("key-bytes", encodePure("key-bytes", "ab".repeat(200)))).toEqual({ value: "ab".repeat(200) });
    expect(decodePure("json-bytes", encodePure("json-bytes", { long }))).toEqual({ value: { long } });
  });
});
