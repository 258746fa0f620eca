// The unmodified `@mysten/walrus` WalrusClient against the local stack: the ledger serves the Walrus system and
// staking objects (walrus-deployment.ts) over its Sui JSON-RPC; local storage nodes take metadata and slivers and sign
// confirmations; the ledger executes register_blob / certify_blob.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WalrusClient, blobIdToInt } from "@mysten/walrus";
import { bcs } from "@mysten/sui/bcs";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { GrpcTypes, SuiGrpcClient } from "@mysten/sui/grpc";
import { bls12_381 } from "@noble/curves/bls12-381.js";
import { startChainRpcServer } from "../adapters/chain/local/rpc/server.ts";
import { ledgerObjectSource } from "../adapters/chain/local/rpc/ledger-source.ts";
import { localWalrusIds, localWalrusNodeId, walrusDeploymentObjects, LOCAL_WALRUS_EPOCH } from "../adapters/chain/local/walrus-deployment.ts";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import type { LocalCommittee } from "../adapters/walrus-nodes/local-committee.ts";
import { startLocalWalrus, type LocalWalrus } from "../adapters/walrus-nodes/local-walrus.ts";
import type { ChainRpcServerHandle } from "../adapters/chain/local/rpc/server.ts";
import { NETWORK, PACKAGE_ID, a, operator, useLocalChainSuite } from "./support/local-chain-suite.ts";
import { mint } from "../adapters/chain/local/accounts.ts";
import { GAS_FEE_MIST } from "../adapters/chain/sui/transaction-envelope.ts";
import { Transaction, coinWithBalance } from "@mysten/sui/transactions";
import { BlobMetadataBcs, blobIdFromString, confirmationMessage } from "../adapters/chain/local/walrus-layouts.ts";
import { decodeWalrusPtb } from "../adapters/chain/local/walrus-ptb.ts";

useLocalChainSuite();

/** The local stack's Walrus (four storage nodes, the deployment published on the ledger) and the ledger's RPC. */
async function walrusStack(dir: string, size: { count?: number; nShards?: number } = {}): Promise<{ walrus: LocalWalrus; committee: LocalCommittee; rpc: ChainRpcServerHandle; client: () => WalrusClient }> {
  const walrus = await startLocalWalrus({ ledger: a, dir, ...size });
  const rpc = await startChainRpcServer({ objects: ledgerObjectSource(a, { packageIds: [PACKAGE_ID], accounts: a }), transactions: a, chainName: NETWORK });
  const client = () => new WalrusClient({ packageConfig: walrus.packageConfig, suiClient: new SuiJsonRpcClient({ url: rpc.url, network: "localnet" }), storageNodeUrlScheme: "http" });
  return { walrus, committee: walrus.committee, rpc, client };
}

type WalrusStack = Awaited<ReturnType<typeof walrusStack>>;

/** A walrusStack for one describe block, in a temporary directory of its own, stopped and removed after it. */
function useWalrusStack(size: Parameters<typeof walrusStack>[1] = {}): { dir: string; stack: WalrusStack } {
  const ws = { dir: "", stack: undefined as unknown as WalrusStack };
  beforeAll(async () => {
    ws.dir = mkdtempSync(join(tmpdir(), "walrus-nodes-"));
    ws.stack = await walrusStack(ws.dir, size);
  });
  afterAll(async () => {
    await ws.stack?.rpc.close();
    await ws.stack?.committee.close();
    rmSync(ws.dir, { recursive: true, force: true });
  });
  return ws;
}

async function fundedSigner(wal = 1_000_000n): Promise<Ed25519Keypair> {
  const kp = Ed25519Keypair.generate();
  await mint(a, { operatorKey: operator.secretKey, to: kp.toSuiAddress(), amount: 10n ** 9n });
  await a.mint(kp.toSuiAddress(), wal, "WAL");
  return kp;
}

describe("WalrusClient reads the local Walrus deployment", () => {
  it("system state, staking state and committee parse from the ledger's objects", async () => {
    const keys = [0, 1, 2, 3].map(() => bls12_381.longSignatures.keygen());
    const shards = [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]];
    for (const { objectId, input } of walrusDeploymentObjects({
      network: NETWORK,
      nShards: 10,
      nodes: keys.map((k, i) => ({ name: `node-${i}`, networkAddress: `127.0.0.1:${9100 + i}`, publicKey: k.publicKey.toBytes(true), shards: shards[i]! })),
      storagePricePerUnit: 100n,
      writePricePerUnit: 200n,
      totalCapacity: 1n << 40n,
    })) await a.putObject(objectId, input);
    const rpc = await startChainRpcServer({ objects: ledgerObjectSource(a, { packageIds: [PACKAGE_ID], accounts: a }), transactions: a, chainName: NETWORK });
    try {
      const ids = localWalrusIds(NETWORK);
      const walrus = new WalrusClient({ packageConfig: { systemObjectId: ids.systemObjectId, stakingPoolId: ids.stakingObjectId }, suiClient: new SuiJsonRpcClient({ url: rpc.url, network: "localnet" }), storageNodeUrlScheme: "http" });
      const system = await walrus.systemState();
      expect(system.committee.n_shards).toBe(10);
      expect(system.committee.epoch).toBe(LOCAL_WALRUS_EPOCH);
      expect(system.committee.members.map((m) => m.weight)).toEqual([3, 3, 2, 2]);
      expect(system.storage_price_per_unit_size).toBe("100");
      const staking = await walrus.stakingState();
      expect(staking.epoch_state.$kind).toBe("EpochChangeDone");
      expect(staking.committee[0].contents.map((e) => e.key)).toEqual([0, 1, 2, 3].map((i) => localWalrusNodeId(NETWORK, i)));
      expect(await walrus.getBlobType()).toBe(`${ids.packageId}::blob::Blob`);
      // the committee's nodes come from their StakingPool objects: encodeBlob places each node's shards' slivers
      const encoded = await walrus.encodeBlob(new TextEncoder().encode("committee"));
      expect(encoded.sliversByNode.map((n) => n.primary.map((s) => s.shardIndex).sort((x, y) => x - y))).toEqual(shards);
      const cost = await walrus.storageCost(1000, 3);
      expect(cost).toEqual({ storageCost: 300n, writeCost: 200n, totalCost: 500n });
    } finally {
      await rpc.close();
    }
  });
});

describe("WalrusClient writes and reads blobs on the local ws.stack", () => {
  const ws = useWalrusStack();

  it("over the ledger's gRPC API (SuiGrpcClient) too: writeBlob with attributes, readBlob, extend", async () => {
    const signer = await fundedSigner();
    const grpc = new SuiGrpcClient({ baseUrl: ws.stack.rpc.grpcUrl, network: "localnet", format: "binary" });
    const walrus = new WalrusClient({ packageConfig: ws.stack.walrus.packageConfig, suiClient: grpc, storageNodeUrlScheme: "http" });
    expect((await walrus.systemState()).committee.n_shards).toBe(10);
    const blob = new TextEncoder().encode("written over gRPC-web ".repeat(20));
    const { blobId, blobObject } = await walrus.writeBlob({ blob, deletable: true, epochs: 2, signer, attributes: { via: "grpc" } });
    expect(blobObject.certified_epoch).toBe(LOCAL_WALRUS_EPOCH);
    expect(await walrus.readBlobAttributes({ blobObjectId: blobObject.id })).toEqual({ via: "grpc" });
    expect(Buffer.from(await walrus.readBlob({ blobId })).equals(Buffer.from(blob))).toBe(true);
    await walrus.executeExtendBlobTransaction({ blobObjectId: blobObject.id, epochs: 1, signer });
    const fresh = new WalrusClient({ packageConfig: ws.stack.walrus.packageConfig, suiClient: grpc, storageNodeUrlScheme: "http" });
    expect((await fresh.getBlobObject(blobObject.id)).storage.end_epoch).toBe(LOCAL_WALRUS_EPOCH + 3);
    // SimulateTransaction refuses what it cannot read
    const simulate = (transaction: GrpcTypes.Transaction | undefined) => grpc.transactionExecutionService.simulateTransaction({ transaction, doGasSelection: true, checks: 0 } as never).then(() => null, (e: { code: string; message: string }) => e);
    expect(await simulate(undefined)).toMatchObject({ code: "INVALID_ARGUMENT", message: "expected a transaction" });
    expect(await simulate(GrpcTypes.Transaction.create({ sender: signer.toSuiAddress() }))).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("only programmable transactions") });
    const publish = GrpcTypes.Transaction.create({ sender: signer.toSuiAddress(), kind: { data: { oneofKind: "programmableTransaction", programmableTransaction: { inputs: [], commands: [{ command: { oneofKind: "publish", publish: { modules: [], dependencies: [] } } }] } } } });
    expect(await simulate(publish)).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("command publish is not supported") });
    // a refusal comes back as the simulation's failure, with the ledger's reason
    await expect(walrus.executeCertifyBlobTransaction({ certificate: { signers: [0, 1], serializedMessage: new Uint8Array(3), signature: new Uint8Array(96) }, blobId, blobObjectId: blobObject.id, deletable: true, signer })).rejects.toThrow(/not a quorum/);
  });

  it("writeBlob registers, uploads to the nodes and certifies with their aggregate signature; readBlob returns the bytes", async () => {
    const signer = await fundedSigner();
    const owner = signer.toSuiAddress();
    const ids = localWalrusIds(NETWORK);
    const walrus = ws.stack.client();
    const blob = new TextEncoder().encode("a memory worth keeping ".repeat(40));
    const systemWalBefore = (await a.balance(ids.systemObjectId)).balances.WAL ?? 0n;
    const usedBefore = BigInt((await walrus.systemState()).used_capacity_size);
    const { blobId, blobObject } = await walrus.writeBlob({ blob, deletable: true, epochs: 3, signer });
    // the reservation covers the encoded size and counts against the System's capacity
    expect(BigInt((await ws.stack.client().systemState()).used_capacity_size)).toBe(usedBefore + BigInt(blobObject.storage.storage_size));
    expect(blobObject.certified_epoch).toBe(LOCAL_WALRUS_EPOCH);
    expect(blobObject.registered_epoch).toBe(LOCAL_WALRUS_EPOCH);
    expect(blobObject.storage.end_epoch).toBe(LOCAL_WALRUS_EPOCH + 3);
    expect(blobObject.deletable).toBe(true);
    expect(blobObject.size).toBe(String(blob.length));
    // the sender paid the storage for 3 epochs and the write, to the System; and the gas of two transactions
    const { totalCost } = await walrus.storageCost(blob.length, 3);
    const balances = (await a.balance(owner)).balances;
    expect(balances.WAL).toBe(1_000_000n - totalCost);
    expect(balances.SUI).toBe(10n ** 9n - 2n * GAS_FEE_MIST);
    expect(await walrus.readBlobAttributes({ blobObjectId: blobObject.id }).catch((e: Error) => e.message)).toMatch(/not found|does not exist|notExists/i);
    expect((await a.balance(ids.systemObjectId)).balances.WAL).toBe(systemWalBefore + totalCost);
    // the certified Blob is an object the sender owns, at its second version (registered, then certified)
    const stored = await a.getObject(blobObject.id);
    expect(stored).toMatchObject({ type: `${ids.packageId}::blob::Blob`, version: "2", owner: { AddressOwner: owner } });
    // every node kept its shards' slivers on disk
    for (const [i, shards] of ws.stack.committee.deployment.nodes.map((n) => n.shards).entries()) {
      expect(readdirSync(join(ws.dir, `node-${i}`, "blobs", Buffer.from(blobId, "base64url").toString("hex"))).filter((f) => f !== "metadata")).toHaveLength(2 * shards.length);
    }
    const read = await ws.stack.client().readBlob({ blobId });
    expect(Buffer.from(read).equals(Buffer.from(blob))).toBe(true);
    // attributes: written with the blob, then changed and removed on the existing blob object
    const withAttributes = await walrus.writeBlob({ blob: new TextEncoder().encode("an image, say"), deletable: false, epochs: 1, signer, attributes: { "content-type": "image/png", owner: "me" } });
    expect(await ws.stack.client().readBlobAttributes({ blobObjectId: withAttributes.blobObject.id })).toEqual({ "content-type": "image/png", owner: "me" });
    await ws.stack.client().executeWriteBlobAttributesTransaction({ blobObjectId: withAttributes.blobObject.id, attributes: { "content-type": "image/jpeg", owner: null, size: "12" }, signer });
    expect(await ws.stack.client().readBlobAttributes({ blobObjectId: withAttributes.blobObject.id })).toEqual({ "content-type": "image/jpeg", size: "12" });
    // the nodes report the blob's status from the chain
    expect(await ws.stack.client().getVerifiedBlobStatus({ blobId })).toMatchObject({ type: "deletable", initialCertifiedEpoch: LOCAL_WALRUS_EPOCH, deletableCounts: { countDeletableTotal: 1, countDeletableCertified: 1 } });
    // extended by two epochs (paid at the storage price), then deleted: its storage comes back as an object
    const walBefore = (await a.balance(owner)).balances.WAL!;
    await expect(ws.stack.client().executeExtendBlobTransaction({ blobObjectId: blobObject.id, epochs: 60, signer })).rejects.toThrow(/end at most 53 epochs ahead/);
    await ws.stack.client().executeExtendBlobTransaction({ blobObjectId: blobObject.id, epochs: 2, signer });
    expect((await ws.stack.client().getBlobObject(blobObject.id)).storage.end_epoch).toBe(LOCAL_WALRUS_EPOCH + 5);
    expect((await a.balance(owner)).balances.WAL).toBe(walBefore - 2n * 100n);
    const deleted = await ws.stack.client().executeDeleteBlobTransaction({ blobObjectId: blobObject.id, signer });
    expect(await a.getObject(blobObject.id)).toBeNull();
    const receipt = await a.getTransaction(deleted.digest);
    expect(receipt?.events.filter((e) => e.type === "WalrusObjectWritten").map((e) => (e as { object: { type: string; owner: unknown } }).object)).toEqual([
      expect.objectContaining({ type: `${ids.packageId}::storage_resource::Storage`, owner: { AddressOwner: owner } }),
    ]);
    expect(await ws.stack.client().getVerifiedBlobStatus({ blobId })).toEqual({ type: "nonexistent" });
    // the nodes no longer serve it, and drop what they kept for it
    await expect(ws.stack.client().readBlob({ blobId })).rejects.toThrow();
    for (const node of ws.stack.committee.nodes) {
      const r = await fetch(`${node.url}/v1/blobs/${blobId}/metadata`);
      expect(r.status).toBe(404);
    }
    for (let i = 0; i < ws.stack.committee.nodes.length; i++) expect(readdirSync(join(ws.dir, `node-${i}`, "blobs"))).not.toContain(Buffer.from(blobId, "base64url").toString("hex"));
    await expect(ws.stack.client().executeDeleteBlobTransaction({ blobObjectId: withAttributes.blobObject.id, signer })).rejects.toThrow(/not deletable/);
  });
});

/** The node keys on disk (test-only: to forge certificates the nodes never signed). */
function nodeKeys(dir: string, count = 4): Uint8Array[] {
  return Array.from({ length: count }, (_, i) => new Uint8Array(Buffer.from(readFileSync(join(dir, `node-${i}`, "bls.key"), "utf8").trim(), "hex")));
}

function certificate(keys: Uint8Array[], signers: number[], message: Uint8Array, bitmapSigners = signers) {
  const bls = bls12_381.longSignatures;
  const signature = bls.aggregateSignatures(signers.map((i) => bls.sign(bls.hash(message), keys[i]!))).toBytes(true);
  return { signers: bitmapSigners, serializedMessage: message, signature };
}

describe("Walrus transaction decoding", () => {
  it("refuses an object named by two inputs, other input kinds and other commands", () => {
    const ids = localWalrusIds(NETWORK);
    const owned = { Object: { ImmOrOwnedObject: { objectId: "0x" + "cd".repeat(32), version: "1", digest: "11111111111111111111111111111111" } } };
    const certify = { MoveCall: { package: ids.packageId, module: "system", function: "certify_blob", typeArguments: [], arguments: [{ Input: 0 }, { Input: 1 }] } };
    expect(decodeWalrusPtb({ inputs: [owned, owned], commands: [certify] } as never, NETWORK)).toEqual({ error: `object 0x${"cd".repeat(32)} is named by more than one input` });
    const receiving = { Object: { Receiving: owned.Object.ImmOrOwnedObject } };
    expect(decodeWalrusPtb({ inputs: [receiving], commands: [certify] } as never, NETWORK)).toEqual({ error: "input kind Object Receiving is not supported in Walrus transactions" });
    expect(decodeWalrusPtb({ inputs: [], commands: [] } as never, NETWORK)).toMatchObject({ error: expect.stringMatching(/1 to 128 commands/) });
  });
});

describe("refusals", () => {
  const ws = useWalrusStack();

  /** A registered, not yet certified blob (the certificates below are made with the nodes' keys). */
  async function registered(signer: Ed25519Keypair, deletable = true) {
    const walrus = ws.stack.client();
    const blob = new TextEncoder().encode(`blob ${Math.random()}`.repeat(30));
    const flow = walrus.writeBlobFlow({ blob });
    const { blobId } = await flow.encode();
    const { blobObjectId } = await flow.executeRegister({ signer, epochs: 2, deletable, owner: signer.toSuiAddress() });
    return { walrus, blobId, blobObjectId, blob };
  }

  it("certify_blob refuses certificates without a quorum, with a signature of other signers, for another blob or epoch, or twice", async () => {
    const signer = await fundedSigner();
    const keys = nodeKeys(ws.dir);
    const { walrus, blobId, blobObjectId } = await registered(signer);
    const bytes = blobIdFromString(blobId)!;
    const message = confirmationMessage(LOCAL_WALRUS_EPOCH, bytes, { deletable: true, objectId: blobObjectId });
    const certify = (cert: ReturnType<typeof certificate>, deletable = true) => walrus.executeCertifyBlobTransaction({ certificate: cert, blobId, blobObjectId, deletable, signer });
    // nodes 0 and 1 hold 6 of 10 shards: not more than two thirds
    await expect(certify(certificate(keys, [0, 1], message))).rejects.toThrow(/not a quorum/);
    // signed by 0, 1, 2 but the bitmap names 0, 1, 3
    await expect(certify(certificate(keys, [0, 1, 2], message, [0, 1, 3]))).rejects.toThrow(/aggregate signature does not verify/);
    // a quorum's signature over a message for another blob, a permanent blob, or another epoch
    const other = new Uint8Array(32).fill(7);
    await expect(certify(certificate(keys, [0, 1, 2], confirmationMessage(LOCAL_WALRUS_EPOCH, other, { deletable: true, objectId: blobObjectId })))).rejects.toThrow(/another blob id/);
    await expect(certify(certificate(keys, [0, 1, 2], confirmationMessage(LOCAL_WALRUS_EPOCH, bytes, { deletable: false })))).rejects.toThrow(/not for this deletable blob object/);
    await expect(certify(certificate(keys, [0, 1, 2], confirmationMessage(LOCAL_WALRUS_EPOCH + 1, bytes, { deletable: true, objectId: blobObjectId })))).rejects.toThrow(/for epoch 2/);
    // a message that is not a storage confirmation
    await expect(certify(certificate(keys, [0, 1, 2], new TextEncoder().encode("certify everything")))).rejects.toThrow(/not a storage confirmation/);
    expect((await walrus.getBlobObject(blobObjectId)).certified_epoch).toBeNull();
    // a genuine certificate, but from someone who does not own the blob object
    const stranger = await fundedSigner();
    await expect(walrus.executeCertifyBlobTransaction({ certificate: certificate(keys, [0, 2, 3], message), blobId, blobObjectId, deletable: true, signer: stranger })).rejects.toThrow(/not owned by the sender/);
    // a quorum's genuine certificate (nodes 0, 2, 3: 7 shards) certifies; a second time is refused
    const sui = new SuiJsonRpcClient({ url: ws.stack.rpc.url, network: "localnet" });
    const before = (await sui.getObject({ id: blobObjectId })).data!;
    await certify(certificate(keys, [0, 2, 3], message));
    expect((await ws.stack.client().getBlobObject(blobObjectId)).certified_epoch).toBe(LOCAL_WALRUS_EPOCH);
    await expect(certify(certificate(keys, [0, 1, 2, 3], message))).rejects.toThrow(/already certified/);
    // the blob object at the version it had before: refused as stale
    const cert = certificate(keys, [0, 1, 2, 3], message);
    const stale = new Transaction();
    stale.setSender(signer.toSuiAddress());
    const ids = localWalrusIds(NETWORK);
    stale.moveCall({
      target: `${ids.packageId}::system::certify_blob`,
      arguments: [stale.object(ids.systemObjectId), stale.objectRef({ objectId: blobObjectId, version: before.version, digest: before.digest }), stale.pure.vector("u8", cert.signature), stale.pure.vector("u8", [0x0f]), stale.pure.vector("u8", cert.serializedMessage)],
    });
    await expect(signer.signAndExecuteTransaction({ transaction: stale, client: sui })).rejects.toThrow(/is at version 2; the transaction names another version/);
  });

  it("the JSON-RPC methods SDK-built transactions need refuse bad parameters; a dry run of bytes the ledger cannot read fails with the reason", async () => {
    const rpc = async (method: string, params: unknown[]) =>
      (await (await fetch(ws.stack.rpc.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })).json()) as { result?: Record<string, unknown>; error?: { code: number; message: string } };
    expect((await rpc("sui_dryRunTransactionBlock", [42])).error).toMatchObject({ code: -32602 });
    expect((await rpc("suix_getCoins", [])).error).toMatchObject({ code: -32602 });
    expect((await rpc("suix_getCoins", ["0x" + "ab".repeat(32)])).result).toEqual({ data: [], nextCursor: null, hasNextPage: false });
    expect((await rpc("suix_getLatestSuiSystemState", [])).result).toMatchObject({ epoch: "0", referenceGasPrice: "1000" });
    const garbage = await rpc("sui_dryRunTransactionBlock", [Buffer.from("not a transaction").toString("base64")]);
    expect(garbage.result).toMatchObject({ effects: { status: { status: "failure", error: expect.stringMatching(/not BCS TransactionData|unsupported/) } } });
  });

  it("register_blob refuses a blob id not derived from the root hash; reserve_space refuses an underpayment; unknown calls, unused coins and the gas coin are refused", async () => {
    const signer = await fundedSigner();
    const walrus = ws.stack.client();
    const blob = new TextEncoder().encode("registered under a false id");
    const { rootHash } = await walrus.encodeBlob(blob);
    const { blobId: otherId } = await walrus.encodeBlob(new TextEncoder().encode("another blob"));
    await expect(walrus.executeRegisterBlobTransaction({ signer, size: blob.length, epochs: 1, blobId: otherId, rootHash, deletable: false, owner: signer.toSuiAddress() })).rejects.toThrow(/blob_id is not derived from root_hash/);

    const ids = localWalrusIds(NETWORK);
    const run = async (build: (tx: Transaction) => void) => {
      const tx = new Transaction();
      tx.setSender(signer.toSuiAddress());
      build(tx);
      return signer.signAndExecuteTransaction({ transaction: tx, client: new SuiJsonRpcClient({ url: ws.stack.rpc.url, network: "localnet" }) });
    };
    // the price of 1 MiB for 2 epochs is 200; the coin holds 150
    await expect(
      run((tx) => {
        const coin = tx.add(coinWithBalance({ balance: 150, type: ids.walCoinType }));
        const storage = tx.moveCall({ target: `${ids.packageId}::system::reserve_space`, arguments: [tx.object(ids.systemObjectId), tx.pure.u64(1000), tx.pure.u32(2), coin] });
        tx.transferObjects([storage, coin], signer.toSuiAddress());
      }),
    ).rejects.toThrow(/costs 200 WAL; the payment coin holds 150/);
    await expect(
      run((tx) => {
        const coin = tx.add(coinWithBalance({ balance: 500, type: ids.walCoinType }));
        tx.moveCall({ target: `${ids.packageId}::system::reserve_space`, arguments: [tx.object(ids.systemObjectId), tx.pure.u64(1000), tx.pure.u32(54), coin] });
      }),
    ).rejects.toThrow(/epochs_ahead must be 1..53/);
    // more than the committee's capacity (1 TiB)
    await expect(
      run((tx) => {
        const coin = tx.add(coinWithBalance({ balance: 500, type: ids.walCoinType }));
        const storage = tx.moveCall({ target: `${ids.packageId}::system::reserve_space`, arguments: [tx.object(ids.systemObjectId), tx.pure.u64(2n ** 41n), tx.pure.u32(1), coin] });
        tx.transferObjects([storage, coin], signer.toSuiAddress());
      }),
    ).rejects.toThrow(/not enough free storage/);
    // a primitive where a coin type belongs
    await expect(
      run((tx) => {
        const coin = tx.add(coinWithBalance({ balance: 100, type: ids.walCoinType }));
        const storage = tx.moveCall({ target: `${ids.packageId}::system::reserve_space`, arguments: [tx.object(ids.systemObjectId), tx.pure.u64(1000), tx.pure.u32(1), coin] });
        tx.moveCall({ target: "0x2::coin::destroy_zero", typeArguments: ["u64"], arguments: [coin] });
        tx.transferObjects([storage], signer.toSuiAddress());
      }),
    ).rejects.toThrow(/takes coin types \(struct types\) as type arguments/);
    // a reservation nobody uses, and a coin left over
    await expect(
      run((tx) => {
        const coin = tx.add(coinWithBalance({ balance: 500, type: ids.walCoinType }));
        tx.moveCall({ target: `${ids.packageId}::system::reserve_space`, arguments: [tx.object(ids.systemObjectId), tx.pure.u64(1000), tx.pure.u32(1), coin] });
        tx.transferObjects([coin], signer.toSuiAddress());
      }),
    ).rejects.toThrow(/result of command \d+ \(a Storage\) is never used/);
    await expect(
      run((tx) => {
        const coin = tx.add(coinWithBalance({ balance: 500, type: ids.walCoinType }));
        const storage = tx.moveCall({ target: `${ids.packageId}::system::reserve_space`, arguments: [tx.object(ids.systemObjectId), tx.pure.u64(1000), tx.pure.u32(1), coin] });
        tx.transferObjects([storage], signer.toSuiAddress());
      }),
    ).rejects.toThrow(/a Coin\) is never used/);
    await expect(
      run((tx) => {
        tx.moveCall({ target: `${ids.packageId}::staking::stake_with_pool`, arguments: [tx.object(ids.stakingObjectId), tx.add(coinWithBalance({ balance: 5, type: ids.walCoinType })), tx.pure.address(ids.systemObjectId)] });
      }),
    ).rejects.toThrow(/unknown Move call .*staking::stake_with_pool/);
    await expect(
      run((tx) => {
        const [sui] = tx.splitCoins(tx.gas, [1]);
        const storage = tx.moveCall({ target: `${ids.packageId}::system::reserve_space`, arguments: [tx.object(ids.systemObjectId), tx.pure.u64(1000), tx.pure.u32(1), sui!] });
        tx.transferObjects([storage], signer.toSuiAddress());
      }),
    ).rejects.toThrow(/gas coin cannot be used|gas/);
    await expect(
      run((tx) => {
        const coin = tx.add(coinWithBalance({ balance: 100, type: ids.walCoinType }));
        const storage = tx.moveCall({ target: `${ids.packageId}::system::reserve_space`, arguments: [tx.object(ids.systemObjectId), tx.pure.u64(1000), tx.pure.u32(1), coin] });
        tx.moveCall({ target: "0x2::coin::destroy_zero", typeArguments: [ids.walCoinType], arguments: [coin] });
        tx.transferObjects([tx.makeMoveVec({ elements: [storage] })], signer.toSuiAddress());
      }),
    ).rejects.toThrow(/command MakeMoveVec is not supported/);
    // a transfer of a storage reservation works, and the reservation is an object the recipient owns
    const ok = await run((tx) => {
      const coin = tx.add(coinWithBalance({ balance: 100, type: ids.walCoinType }));
      const storage = tx.moveCall({ target: `${ids.packageId}::system::reserve_space`, arguments: [tx.object(ids.systemObjectId), tx.pure.u64(1 << 20), tx.pure.u32(1), coin] });
      tx.moveCall({ target: "0x2::coin::destroy_zero", typeArguments: [ids.walCoinType], arguments: [coin] });
      tx.transferObjects([storage], signer.toSuiAddress());
    });
    const created = ok.Transaction!.effects!.changedObjects.filter((o) => o.idOperation === "Created");
    expect(created).toHaveLength(1);
    const storageId = created[0]!.objectId;
    expect(await a.getObject(storageId)).toMatchObject({ type: `${ids.packageId}::storage_resource::Storage`, owner: { AddressOwner: signer.toSuiAddress() } });
    // that reservation registers one blob; it is then inside the blob, so it cannot register a second one
    const sui = new SuiJsonRpcClient({ url: ws.stack.rpc.url, network: "localnet" });
    const ref = (await sui.getObject({ id: storageId })).data!;
    const registerWith = (encoded: Awaited<ReturnType<WalrusClient["encodeBlob"]>>, size: number) =>
      run((tx) => {
        const coin = tx.add(coinWithBalance({ balance: 200, type: ids.walCoinType }));
        const blob = tx.moveCall({
          target: `${ids.packageId}::system::register_blob`,
          arguments: [tx.object(ids.systemObjectId), tx.objectRef({ objectId: storageId, version: ref.version, digest: ref.digest }), tx.pure.u256(blobIdToInt(encoded.blobId)), tx.pure.u256(BigInt(bcs.u256().parse(encoded.rootHash))), tx.pure.u64(size), tx.pure.u8(1), tx.pure.bool(false), coin],
        });
        tx.moveCall({ target: "0x2::coin::destroy_zero", typeArguments: [ids.walCoinType], arguments: [coin] });
        tx.transferObjects([blob], signer.toSuiAddress());
      });
    const first = new TextEncoder().encode("first blob in a reserved storage");
    const registeredFirst = await registerWith(await walrus.encodeBlob(first), first.length);
    expect(await a.getObject(storageId)).toBeNull();
    const firstBlobId = registeredFirst.Transaction!.effects!.changedObjects.find((o) => o.idOperation === "Created")!.objectId;
    // attributes: a second Metadata on a blob that has one, and removing a key it does not have
    await run((tx) => {
      tx.moveCall({ target: `${ids.packageId}::blob::insert_or_update_metadata_pair`, arguments: [tx.object(firstBlobId), tx.pure.string("k"), tx.pure.string("v")] });
    });
    await expect(
      run((tx) => {
        tx.moveCall({ target: `${ids.packageId}::blob::add_metadata`, arguments: [tx.object(firstBlobId), tx.moveCall({ target: `${ids.packageId}::metadata::new` })] });
      }),
    ).rejects.toThrow(/already has metadata/);
    await expect(
      run((tx) => {
        tx.moveCall({ target: `${ids.packageId}::blob::remove_metadata_pair`, arguments: [tx.object(firstBlobId), tx.pure.string("missing")] });
      }),
    ).rejects.toThrow(/no metadata key "missing"/);
    expect(await walrus.readBlobAttributes({ blobObjectId: firstBlobId })).toEqual({ k: "v" });
    await expect(walrus.executeExtendBlobTransaction({ blobObjectId: firstBlobId, epochs: 1, signer })).rejects.toThrow(/only a certified blob can be extended/);
    const second = new TextEncoder().encode("second blob in the same storage");
    await expect(registerWith(await walrus.encodeBlob(second), second.length)).rejects.toThrow(/is not a Walrus Blob or Storage/);
    // merging a coin into itself is refused
    await expect(
      run((tx) => {
        const coin = tx.add(coinWithBalance({ balance: 50, type: ids.walCoinType }));
        tx.mergeCoins(coin, [coin]);
        const storage = tx.moveCall({ target: `${ids.packageId}::system::reserve_space`, arguments: [tx.object(ids.systemObjectId), tx.pure.u64(1000), tx.pure.u32(1), coin] });
        tx.transferObjects([storage, coin], signer.toSuiAddress());
      }),
    ).rejects.toThrow(/merge a coin into itself/);
  });
});

describe("storage nodes", () => {
  const ws = useWalrusStack();

  const metadataBytes = (metadata: Awaited<ReturnType<WalrusClient["encodeBlob"]>>["metadata"]) =>
    BlobMetadataBcs.serialize({ V1: { ...metadata.V1, encoding_type: { RS2: true } } } as never).toBytes();

  it("refuse bad blob ids, metadata of another blob or of an unregistered one, misplaced or malformed slivers, and confirm only a complete upload", async () => {
    const walrus = ws.stack.client();
    const blob = new TextEncoder().encode("sliver by sliver ".repeat(20));
    const encoded = await walrus.encodeBlob(blob);
    const other = await walrus.encodeBlob(new TextEncoder().encode("another"));
    const node0 = ws.stack.committee.nodes[0]!.url;
    const call = (path: string, init?: RequestInit) => fetch(`${node0}/v1/blobs/${path}`, init);
    const put = (path: string, body: Uint8Array) => call(path, { method: "PUT", body, headers: { "content-type": "application/octet-stream" } });
    const error = async (r: Response) => ({ status: r.status, body: (await r.json()) as { error: { message: string; details: { reason: string }[] } } });

    expect((await error(await call("not-a-blob-id/metadata"))).status).toBe(400);
    expect((await error(await call(`${encoded.blobId}/metadata`))).status).toBe(404);
    expect(await (await call(`${encoded.blobId}/metadata/status`)).json()).toEqual({ success: { code: 200, data: "Nonexistent" } });
    // metadata that derives another blob id; metadata with a trailing byte
    const otherMeta = await error(await put(`${encoded.blobId}/metadata`, metadataBytes(other.metadata)));
    expect(otherMeta.status).toBe(400);
    expect(otherMeta.body.error.message).toMatch(/does not match blob/);
    expect((await error(await put(`${encoded.blobId}/metadata`, Uint8Array.from([...metadataBytes(encoded.metadata), 0])))).body.error.message).toMatch(/trailing/);
    // consistent metadata of a blob the chain has not registered: NOT_REGISTERED (the SDK's BlobNotRegisteredError)
    const unregistered = await error(await put(`${encoded.blobId}/metadata`, metadataBytes(encoded.metadata)));
    expect(unregistered.status).toBe(400);
    expect(unregistered.body.error.details[0]?.reason).toBe("NOT_REGISTERED");

    expect(await (await call(`${encoded.blobId}/status`)).json()).toEqual({ success: { code: 200, data: "nonexistent" } });
    const signer = await fundedSigner();
    await walrus.executeRegisterBlobTransaction({ signer, size: blob.length, epochs: 1, blobId: encoded.blobId, rootHash: encoded.rootHash, deletable: false, owner: signer.toSuiAddress() });
    expect(await (await call(`${encoded.blobId}/status`)).json()).toMatchObject({ success: { data: { permanent: { endEpoch: LOCAL_WALRUS_EPOCH + 1, isCertified: false, initialCertifiedEpoch: null } } } });
    const mine = encoded.sliversByNode[0]!;
    const pair = mine.primary[0]!.sliverPairIndex;
    // a sliver before the metadata
    expect((await error(await put(`${encoded.blobId}/slivers/${pair}/primary`, mine.primary[0]!.sliver))).status).toBe(400);
    expect((await put(`${encoded.blobId}/metadata`, metadataBytes(encoded.metadata))).status).toBe(200);
    expect(await (await call(`${encoded.blobId}/metadata/status`)).json()).toEqual({ success: { code: 200, data: "Stored" } });
    // a pair held by another node; an index out of range; a sliver cut short; a primary sent as secondary
    const elsewhere = encoded.sliversByNode[1]!.primary[0]!;
    expect((await error(await put(`${encoded.blobId}/slivers/${elsewhere.sliverPairIndex}/primary`, elsewhere.sliver))).status).toBe(421);
    expect((await error(await put(`${encoded.blobId}/slivers/10/primary`, mine.primary[0]!.sliver))).status).toBe(400);
    expect((await error(await put(`${encoded.blobId}/slivers/${pair}/primary`, mine.primary[0]!.sliver.subarray(0, 20)))).status).toBe(400);
    expect((await error(await put(`${encoded.blobId}/slivers/${pair}/secondary`, mine.primary[0]!.sliver))).body.error.message).toMatch(/secondary sliver/);
    // no confirmation until every sliver of its shards is stored
    expect((await error(await call(`${encoded.blobId}/confirmation/permanent`))).status).toBe(404);
    for (const type of ["primary", "secondary"] as const) {
      for (const s of mine[type]) expect((await put(`${encoded.blobId}/slivers/${s.sliverPairIndex}/${type}`, s.sliver)).status).toBe(200);
    }
    expect(await (await call(`${encoded.blobId}/slivers/${pair}/primary/status`)).json()).toEqual({ success: { code: 200, data: "Stored" } });
    expect((await error(await call(`${encoded.blobId}/confirmation/deletable/0x12`))).status).toBe(400);
    // the blob is registered as permanent: no confirmation for a deletable object the chain does not have
    const unknownObject = await error(await call(`${encoded.blobId}/confirmation/deletable/0x${"ab".repeat(32)}`));
    expect(unknownObject.status).toBe(400);
    expect(unknownObject.body.error.details[0]?.reason).toBe("NOT_REGISTERED");
    const confirmation = (await (await call(`${encoded.blobId}/confirmation/permanent`)).json()) as { success: { data: { signed: { serializedMessage: string; signature: string } } } };
    const { serializedMessage, signature } = confirmation.success.data.signed;
    expect(Buffer.from(serializedMessage, "base64").equals(Buffer.from(confirmationMessage(LOCAL_WALRUS_EPOCH, blobIdFromString(encoded.blobId)!, { deletable: false })))).toBe(true);
    const bls = bls12_381.longSignatures;
    expect(bls.verify(Buffer.from(signature, "base64"), bls.hash(Buffer.from(serializedMessage, "base64")), ws.stack.committee.nodes[0]!.publicKey)).toBe(true);
  });

});

// @mysten/walrus 1.2.13 reads metadata from one random node and, when that node fails, splits the rest into
// floor(rest / 10) sized chunks: below 11 nodes that is 0 and the read throws (RangeError in chunk). So reading with a
// node down needs a committee of at least 11 nodes; this suite runs one.
describe("a committee with a node down", () => {
  const ws = useWalrusStack({ count: 11, nShards: 11 });

  it("a permanent blob is written and read with one node down; the nodes keep their slivers across a restart", async () => {
    const signer = await fundedSigner();
    const blob = new TextEncoder().encode("survives a node and a restart ".repeat(30));
    await ws.stack.committee.stop(3);
    const { blobId, blobObject } = await ws.stack.client().writeBlob({ blob, deletable: false, epochs: 1, signer });
    expect(blobObject).toMatchObject({ deletable: false, certified_epoch: LOCAL_WALRUS_EPOCH });
    expect(await ws.stack.client().getVerifiedBlobStatus({ blobId })).toMatchObject({ type: "permanent", isCertified: true, initialCertifiedEpoch: LOCAL_WALRUS_EPOCH, endEpoch: LOCAL_WALRUS_EPOCH + 1 });
    for (let i = 0; i < 5; i++) expect(Buffer.from(await ws.stack.client().readBlob({ blobId })).equals(Buffer.from(blob))).toBe(true);
    // restart: new ports, the deployment published again; the slivers are read from disk
    const used = (await ws.stack.client().systemState()).used_capacity_size;
    await ws.stack.committee.close();
    const restarted = await startLocalWalrus({ ledger: a, dir: ws.dir, count: 11, nShards: 11 });
    expect((await ws.stack.client().systemState()).used_capacity_size).toBe(used);
    ws.stack = { ...ws.stack, walrus: restarted, committee: restarted.committee };
    expect(Buffer.from(await ws.stack.client().readBlob({ blobId })).equals(Buffer.from(blob))).toBe(true);
  });
});
