// The local stack as `memrelay start` runs it: an unmodified WalrusClient, given the stack's packageConfig and its
// chain RPC, writes a blob to the stack's storage nodes and reads it back, while the relayer keeps storing memories
// through the blob store's publisher/aggregator API.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WalrusClient } from "@mysten/walrus";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { startTestStack, type TestStack } from "./support/stack.ts";

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
}, 120_000);
afterAll(async () => {
  await t?.teardown();
});

describe("the local stack's Walrus", () => {
  it("WalrusClient writes and reads a blob on the stack's storage nodes; remember and recall still go through the blob store", async () => {
    const { stack } = t;
    const signer = Ed25519Keypair.generate();
    await stack.chain.mint(signer.toSuiAddress(), 10n ** 9n, "SUI");
    await stack.chain.mint(signer.toSuiAddress(), 10n ** 9n, "WAL");
    const walrus = new WalrusClient({ packageConfig: stack.walrus.packageConfig, suiClient: new SuiJsonRpcClient({ url: stack.encryptionStack.rpcUrl, network: "localnet" }), storageNodeUrlScheme: "http" });
    const blob = new TextEncoder().encode("written by the Walrus SDK to the local committee");
    const { blobId, blobObject } = await walrus.writeBlob({ blob, deletable: true, epochs: 2, signer });
    expect(blobObject.certified_epoch).not.toBeNull();
    expect(Buffer.from(await walrus.readBlob({ blobId })).toString()).toBe("written by the Walrus SDK to the local committee");

    const client = await t.client();
    const job = await client.rememberAndWait("I keep my notes on Walrus");
    expect(job.status).toBe("done");
    const hits = await client.recall("where are my notes?");
    expect(hits.results.map((r: { text: string }) => r.text)).toContain("I keep my notes on Walrus");
  }, 120_000);
});
