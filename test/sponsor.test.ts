// Black-box: POST /sponsor and /sponsor/execute through the relayer to the sidecar's gas station, with a wallet that
// holds no gas. The client side is the SDK's: TransactionKind bytes from `Transaction.build({ onlyTransactionKind })`,
// a personal-message signature over the request, `signTransaction` over the sponsored bytes. Every refusal is a 4xx.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { request } from "undici";
import { Transaction } from "@mysten/sui/transactions";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { sponsorAuthMessage, transactionKindHash } from "../schemas/relayer/sponsor.ts";

let t: TestStack;
beforeAll(async () => {
  // These tests are about the sponsorship itself; the per-address limit has its own (test/sponsor-limits.test.ts).
  t = await startTestStack({ SPONSOR_RATE_LIMIT_PER_MINUTE: "0", SPONSOR_RATE_LIMIT_PER_HOUR: "0" });
}, 120_000);
afterAll(async () => t?.teardown());

async function post(path: string, body: unknown) {
  const res = await request(t.stack.relayerUrl + path, { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, string> };
}

const pkg = () => t.stack.chain.packageId;
const registry = (tx: Transaction) => tx.sharedObjectRef({ objectId: t.stack.chain.target.registryId, initialSharedVersion: 1, mutable: true });

async function kindBytes(build: (tx: Transaction) => void): Promise<Uint8Array> {
  const tx = new Transaction();
  build(tx);
  return tx.build({ onlyTransactionKind: true });
}
const createAccountKind = () => kindBytes((tx) => tx.moveCall({ target: `${pkg()}::account::create_account`, arguments: [registry(tx), tx.object.clock()] }));

/** The /sponsor body a wallet sends: its request signed as a personal message (by `signer`, normally the sender). */
async function sponsorBody(sender: Ed25519Keypair, kind: Uint8Array, opts: { signer?: Ed25519Keypair; timestamp?: number; nonce?: string } = {}) {
  const authTimestamp = opts.timestamp ?? Math.floor(Date.now() / 1000);
  const authNonce = opts.nonce ?? randomUUID();
  const message = sponsorAuthMessage(sender.toSuiAddress(), transactionKindHash(kind), authTimestamp, authNonce);
  const { signature } = await (opts.signer ?? sender).signPersonalMessage(new TextEncoder().encode(message));
  return { sender: sender.toSuiAddress(), transactionBlockKindBytes: Buffer.from(kind).toString("base64"), authTimestamp, authNonce, authSignature: signature };
}

async function execute(wallet: Ed25519Keypair, sponsored: { bytes: string; digest: string }, sender = wallet.toSuiAddress()) {
  const { signature } = await wallet.signTransaction(Buffer.from(sponsored.bytes, "base64"));
  return post("/sponsor/execute", { digest: sponsored.digest, signature, sender });
}

describe("sponsorship", () => {
  it("a wallet without gas creates its account and adds a delegate key, the sponsor paying; the binding is single-use", async () => {
    const wallet = Ed25519Keypair.generate();
    const sponsored = await post("/sponsor", await sponsorBody(wallet, await createAccountKind()));
    expect(sponsored.status).toBe(200);
    const data = Transaction.from(sponsored.body.bytes!).getData();
    expect(data.sender).toBe(wallet.toSuiAddress());
    expect(data.gasData.owner).not.toBe(wallet.toSuiAddress());
    expect(data.commands[0]!.MoveCall).toMatchObject({ module: "account", function: "create_account" });

    // another sender cannot execute it; a signature of other bytes is refused and does not consume the binding
    const other = Ed25519Keypair.generate();
    expect((await execute(other, sponsored.body as { bytes: string; digest: string }, other.toSuiAddress())).status).toBe(403);
    const wrongSig = (await wallet.signTransaction(await createAccountKind())).signature;
    expect((await post("/sponsor/execute", { digest: sponsored.body.digest, signature: wrongSig, sender: wallet.toSuiAddress() })).status).toBe(400);

    const executed = await execute(wallet, sponsored.body as { bytes: string; digest: string });
    expect(executed).toMatchObject({ status: 200, body: { digest: sponsored.body.digest } });
    expect(await t.stack.chain.accountExists(wallet.toSuiAddress())).toBe(true);
    expect((await t.stack.chain.balance(wallet.toSuiAddress())).balances.SUI ?? 0n).toBe(0n);
    const receipt = await t.stack.chain.getTransaction(sponsored.body.digest!);
    expect(receipt?.gas_owner).toBe(data.gasData.owner);
    // replaying the binding
    const replay = await execute(wallet, sponsored.body as { bytes: string; digest: string });
    expect(replay.status).toBe(409);
    expect(replay.body.error).toMatch(/already executed/);

    // then a delegate key for an agent, also sponsored
    const account = (await t.stack.chain.getAccountByOwner(wallet.toSuiAddress()))!;
    const delegate = Ed25519Keypair.generate();
    const addKey = await kindBytes((tx) =>
      tx.moveCall({
        target: `${pkg()}::account::add_delegate_key`,
        arguments: [
          tx.sharedObjectRef({ objectId: account.id, initialSharedVersion: 1, mutable: true }),
          tx.pure.vector("u8", delegate.getPublicKey().toRawBytes()),
          tx.pure.address(delegate.toSuiAddress()),
          tx.pure.string("agent"),
          tx.object.clock(),
        ],
      }),
    );
    const second = await post("/sponsor", await sponsorBody(wallet, addKey));
    expect((await execute(wallet, second.body as { bytes: string; digest: string })).status).toBe(200);
    expect(await t.stack.chain.resolveDelegate(Buffer.from(delegate.getPublicKey().toRawBytes()).toString("hex"))).toMatchObject({ owner: wallet.toSuiAddress() });
  });

  it("refuses stale, replayed, forged and non-allowlisted requests, and bad bodies, with a clear 4xx", async () => {
    const wallet = Ed25519Keypair.generate();
    const kind = await createAccountKind();
    const expectRefused = async (body: unknown, status: number, error: RegExp, path = "/sponsor") => {
      const r = await post(path, body);
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      expect(r.body.error).toMatch(error);
    };
    await expectRefused(await sponsorBody(wallet, kind, { timestamp: Math.floor(Date.now() / 1000) - 3600 }), 401, /clock window/);
    await expectRefused(await sponsorBody(wallet, kind, { signer: Ed25519Keypair.generate() }), 401, /personal-message signature/);
    // signed over other kind bytes than sent
    await expectRefused({ ...(await sponsorBody(wallet, kind)), transactionBlockKindBytes: Buffer.from(await createAccountKind()).toString("base64").replace(/^A/, "B") }, 401, /personal-message signature|TransactionKind/);
    const once = await sponsorBody(wallet, kind);
    expect((await post("/sponsor", once)).status).toBe(200);
    await expectRefused(once, 409, /authNonce was already used/);
    // another call than the allowlisted account calls, two calls, and the right call of another package
    const deactivate = await kindBytes((tx) => tx.moveCall({ target: `${pkg()}::account::deactivate_account`, arguments: [tx.sharedObjectRef({ objectId: t.stack.chain.target.registryId, initialSharedVersion: 1, mutable: true })] }));
    await expectRefused(await sponsorBody(wallet, deactivate), 403, /only one call to account::create_account/);
    const twice = await kindBytes((tx) => {
      tx.moveCall({ target: `${pkg()}::account::create_account`, arguments: [registry(tx), tx.object.clock()] });
      tx.moveCall({ target: `${pkg()}::account::create_account`, arguments: [registry(tx), tx.object.clock()] });
    });
    await expectRefused(await sponsorBody(wallet, twice), 403, /only one call/);
    const elsewhere = await kindBytes((tx) => tx.moveCall({ target: `0x${"77".repeat(32)}::account::create_account`, arguments: [registry(tx), tx.object.clock()] }));
    await expectRefused(await sponsorBody(wallet, elsewhere), 403, /only one call/);
    await expectRefused(await sponsorBody(wallet, new Uint8Array(40).fill(7)), 400, /not a BCS TransactionKind|trailing/);
    // malformed bodies, answered by the relayer before anything is forwarded
    const good = await sponsorBody(wallet, kind);
    await expectRefused({ ...good, sender: "0x12" }, 400, /sender/);
    await expectRefused({ ...good, authNonce: "not-a-uuid" }, 400, /UUID v4/);
    await expectRefused({ ...good, authNonce: "6ba7b810-9dad-11d1-80b4-00c04fd430c8" }, 400, /UUID v4/); // a v1 UUID
    await expectRefused({ ...good, authTimestamp: "now" }, 400, /authTimestamp/);
    await expectRefused({ ...good, transactionBlockKindBytes: "%%%" }, 400, /base64/);
    await expectRefused("{not json", 400, /JSON/);
    // execute: unknown digest, bad digest, bad signature
    await expectRefused({ digest: "4".repeat(44), signature: Buffer.alloc(97).toString("base64"), sender: wallet.toSuiAddress() }, 404, /unknown or expired/, "/sponsor/execute");
    await expectRefused({ digest: "0OIl", signature: Buffer.alloc(97).toString("base64"), sender: wallet.toSuiAddress() }, 400, /digest/, "/sponsor/execute");
    await expectRefused({ digest: "4".repeat(44), signature: "AA==", sender: wallet.toSuiAddress() }, 400, /signature/, "/sponsor/execute");
    expect(await t.stack.chain.accountExists(wallet.toSuiAddress())).toBe(false);
  });
});
