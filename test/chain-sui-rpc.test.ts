// The chain port over a Sui node (adapters/chain/sui-rpc), wire-tested over both transports against the local ledger's
// RPC listener, which speaks Sui's JSON-RPC and its gRPC API (gRPC-web): what a deployment on a real network runs
// (CHAIN_RPC_URL, or CHAIN_GRPC_URL), with the local ledger's state as the reference for every answer. The same cases
// run over each transport.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { startChainRpcServer, type ChainRpcServerHandle } from "../adapters/chain/local/rpc/server.ts";
import { ledgerObjectSource } from "../adapters/chain/local/rpc/ledger-source.ts";
import { SuiRpcChain } from "../adapters/chain/sui-rpc/sui-rpc-chain.ts";
import { addDelegateKey, createAccount, deactivate, generateKeypair, removeDelegateKey } from "../adapters/chain/local/accounts.ts";
import { buildSponsoredTx } from "../actors/console/chain.ts";
import { cosign } from "../adapters/chain/sui/signatures.ts";
import { signingDigest } from "../adapters/chain/sui/digest.ts";
import { toSerializedSignature } from "../adapters/chain/sui/keys.ts";
import { bucketPolicyType, type ChainTransport } from "../schemas/chain.ts";
import { SignatureRejected } from "../adapters/ports.ts";
import { NETWORK, PACKAGE_ID, a, blobId, expectPortError, fundedKey, useLocalChainSuite } from "./support/local-chain-suite.ts";

useLocalChainSuite();

/** Requests the node was sent, as "<content type> <path>". */
const requests: string[] = [];
const startNode = () =>
  startChainRpcServer({
    objects: ledgerObjectSource(a, { packageIds: [PACKAGE_ID], accounts: a }),
    transactions: a,
    chainName: NETWORK,
    routes: async (req) => {
      requests.push(`${req.headers["content-type"]} ${req.url}`);
      return false;
    },
  });
/** The port's options for reaching `node` over `transport`. */
const reach = (node: ChainRpcServerHandle, transport: ChainTransport) => ({
  ...(transport === "grpc" ? { grpcUrl: node.grpcUrl } : { rpcUrl: node.url }),
  network: NETWORK,
  packageId: PACKAGE_ID,
  registryId: a.registryId,
});

let rpc: ChainRpcServerHandle;
beforeAll(async () => {
  rpc = await startNode();
});
afterAll(async () => rpc?.close());

describe.each(["jsonrpc", "grpc"] as const)("the chain port over %s", (transport) => {
  let remote: SuiRpcChain;
  beforeAll(async () => {
    requests.length = 0;
    remote = await SuiRpcChain.connect(reach(rpc, transport));
    expect(remote.transport).toBe(transport);
  });
  afterAll(() => {
    // every call went over the transport asked for: gRPC-web POSTs to /sui.rpc.v2.<Service>/<Method>, or JSON-RPC
    const grpc = /^application\/grpc-web\+proto \/sui\.rpc\.v2\.\w+\/\w+$/;
    expect(requests.length).toBeGreaterThan(10);
    for (const r of requests) expect(transport === "grpc" ? grpc.test(r) : r === "application/json /").toBe(true);
  });

  it("names the same chain, and answers accounts and delegate keys as the ledger holds them", async () => {
    expect(remote.target).toEqual(a.target);
    const owner = await fundedKey();
    expect(await remote.accountExists(owner.keypair.address)).toBe(false);
    const account = await createAccount(a, { ownerKey: owner.secretKey });
    expect(await remote.accountExists(owner.keypair.address)).toBe(true);
    const delegate = generateKeypair().keypair;
    await addDelegateKey(a, { ownerKey: owner.secretKey, publicKey: delegate.publicKeyHex, label: "laptop agent", accountId: account.id });
    expect(await remote.resolveDelegate(delegate.publicKeyHex, account.id)).toEqual({ owner: owner.keypair.address, accountId: account.id });
    expect(await remote.resolveDelegate(delegate.publicKeyHex)).toBeNull(); // a node has no key → account index: the account id is required
    expect(await remote.resolveDelegate(generateKeypair().keypair.publicKeyHex, account.id)).toBeNull();
    // an owner's account through the registry's owner → account table, keys with label and creation time
    const held = (await a.getAccount(account.id))!;
    expect(await remote.getAccountByOwner(owner.keypair.address)).toEqual({
      id: account.id,
      owner: owner.keypair.address,
      active: true,
      delegate_keys: held.delegate_keys.map((k) => ({ public_key: k.public_key, sui_address: k.sui_address, label: k.label, created_at: k.created_at })),
    });
    expect(held.delegate_keys[0]!.created_at).toBeGreaterThan(0);
    expect(await remote.getAccountByOwner(generateKeypair().keypair.address)).toBeNull();
    await deactivate(a, { signerKey: owner.secretKey, accountId: account.id });
    expect(await remote.resolveDelegate(delegate.publicKeyHex, account.id)).toBeNull();
    await removeDelegateKey(a, { ownerKey: owner.secretKey, publicKey: delegate.publicKeyHex, accountId: account.id });
    expect(await remote.resolveDelegate(delegate.publicKeyHex, account.id)).toBeNull();
  });

  it("records blobs through the node (idempotently), lists them newest first by namespace, and reads balances", async () => {
    const wallet = await fundedKey();
    const owner = generateKeypair().keypair.address;
    const ids = [blobId("r1"), blobId("r2"), blobId("r3")];
    const first = await remote.recordBlob({ owner, namespace: "notes", blobId: ids[0]!, size: 10, walletSecretKey: wallet.secretKey });
    expect(first).toMatchObject({ owner, namespace: "notes", blobId: ids[0], size: 10, packageId: PACKAGE_ID });
    expect((await a.getBlob(owner, ids[0]!))?.objectId).toBe(first.objectId);
    await remote.recordBlob({ owner, namespace: "other", blobId: ids[1]!, size: 20, walletSecretKey: wallet.secretKey });
    await remote.recordBlob({ owner, namespace: "notes", blobId: ids[2]!, size: 30, walletSecretKey: wallet.secretKey });
    const before = (await remote.balance(wallet.keypair.address)).balances.SUI;
    expect((await remote.recordBlob({ owner, namespace: "notes", blobId: ids[0]!, size: 10, walletSecretKey: wallet.secretKey })).objectId).toBe(first.objectId);
    expect((await remote.balance(wallet.keypair.address)).balances.SUI).toBe(before); // nothing executed twice
    expect(before).toBe((await a.balance(wallet.keypair.address)).balances.SUI);

    const listed = await remote.listBlobs(owner, { namespace: "notes", limit: 10 });
    expect(listed.map((b) => b.blobId)).toEqual((await a.listBlobs(owner, { namespace: "notes", limit: 10 })).map((b) => b.blobId));
    expect(listed.map((b) => b.blobId).sort()).toEqual([ids[0], ids[2]].sort());
    expect((await remote.listBlobs(owner, { limit: 2 })).length).toBe(2);
  });

  it("executes a sponsored transaction and reads back the objects it made; refusals and outages are typed", async () => {
    const service = generateKeypair();
    const sponsor = await fundedKey();
    const built = buildSponsoredTx({ target: remote.target, kind: "bucket_policy_create", args: { bucket_id: randomUUID(), space_id: randomUUID() }, sender: service.keypair.address, sponsorAddress: sponsor.keypair.address });
    const senderSig = toSerializedSignature(service.keypair.sign(signingDigest(Buffer.from(built.bytes, "base64"))), service.keypair.publicKey);
    const executed = await remote.execute(cosign(built.bytes, senderSig, sponsor.secretKey));
    expect(executed.digest).toBe(built.digest);
    const policy = executed.objects.find((o) => o.type === bucketPolicyType(PACKAGE_ID));
    expect(policy?.fields).toMatchObject({ admins: [service.keypair.address] });
    expect(await remote.getObject(policy!.object_id)).toMatchObject({ object_id: policy!.object_id, owner: { Shared: { initial_shared_version: "1" } } });
    // the same transaction again answers the same digest (executed once)
    expect((await remote.execute(cosign(built.bytes, senderSig, sponsor.secretKey))).digest).toBe(built.digest);
    // a sender signature that does not verify is the port's SignatureRejected, as a Sui node words it; a valid signature
    // by someone other than the sender is a refusal like any other
    const digest = signingDigest(Buffer.from(built.bytes, "base64"));
    const forged = toSerializedSignature(generateKeypair().keypair.sign(digest), generateKeypair().keypair.publicKey);
    expect(await expectPortError(remote.execute(cosign(built.bytes, forged, sponsor.secretKey)), "forbidden")).toBeInstanceOf(SignatureRejected);
    const stranger = generateKeypair().keypair;
    const notTheSender = await expectPortError(remote.execute(cosign(built.bytes, toSerializedSignature(stranger.sign(digest), stranger.publicKey), sponsor.secretKey)), "rejected");
    expect(notTheSender).not.toBeInstanceOf(SignatureRejected);
    const node = await startNode();
    const down = await SuiRpcChain.connect(reach(node, transport));
    await node.close();
    await expectPortError(down.balance(sponsor.keypair.address), "unavailable");
    // a node that is not there at all: connecting fails as unavailable
    await expectPortError(SuiRpcChain.connect(reach(node, transport)), "unavailable");
  });
});
