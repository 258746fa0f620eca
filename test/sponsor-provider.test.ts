// Black-box: the sponsorship provider protocol (Enoki's) as the local stack serves it on its ledger's RPC listener, used
// through the real client (adapters/sponsor/provider-client.ts, @mysten/enoki's EnokiClient) over HTTP: sponsor → sign →
// execute, a refused key, the relayer's /sponsor going through it (SPONSOR_API_KEY), blob registrations it pays for
// (SPONSOR_DURABLE_REGISTER_ENABLED), expired sponsorships sponsored again (SPONSOR_INVALIDATED_*), and a provider that is
// down, with and without SPONSOR_FALLBACK_TO_DIRECT_SIGN. Who paid is read from the ledger's balances.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";
import { request } from "undici";
import { Transaction } from "@mysten/sui/transactions";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { sponsorAuthMessage, transactionKindHash } from "../schemas/relayer/sponsor.ts";
import { SponsorProviderClient } from "../adapters/sponsor/provider-client.ts";
import { sponsoredTransactions } from "../adapters/chain/server-transactions.ts";
import { localSponsorProvider } from "../runtime/local-sponsor-provider.ts";
import { generateKeypair, keypairFromSecret, mint } from "../adapters/chain/local/accounts.ts";
import { GAS_FEE_MIST } from "../adapters/chain/sui/transaction-envelope.ts";
import { PortError, type SponsorshipPort } from "../adapters/ports.ts";
import { silentLogger } from "../config/logger.ts";
import type { LocalChain } from "../adapters/chain/local/local-chain.ts";

const RELAYER_KEY = "relayer-sponsor-key-0123456789";
const sui = async (chain: LocalChain, address: string) => (await chain.balance(address)).balances.SUI ?? 0n;
const walletAddresses = (t: TestStack) => t.stack.config.serverChainPrivateKeys.map((k) => keypairFromSecret(k).address);
const walletsTotal = async (t: TestStack) => (await Promise.all(walletAddresses(t).map((a) => sui(t.stack.chain, a)))).reduce((a, b) => a + b, 0n);

function createAccountKind(t: TestStack): Promise<Uint8Array> {
  const tx = new Transaction();
  tx.moveCall({
    target: `${t.stack.chain.packageId}::account::create_account`,
    arguments: [tx.sharedObjectRef({ objectId: t.stack.chain.target.registryId, initialSharedVersion: 1, mutable: true }), tx.object.clock()],
  });
  return tx.build({ onlyTransactionKind: true });
}

async function post(t: TestStack, path: string, body: unknown) {
  const res = await request(t.stack.relayerUrl + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, string> };
}

/** A provider whose first `slow` executions wait `delayMs` first (past the sponsorship's lifetime). */
function slowToExecute(inner: SponsorshipPort, slow: number, delayMs: number): SponsorshipPort & { sponsored: number } {
  let executions = 0;
  const p = {
    sponsored: 0,
    async sponsor(input: Parameters<SponsorshipPort["sponsor"]>[0]) {
      p.sponsored++;
      return inner.sponsor(input);
    },
    async execute(input: Parameters<SponsorshipPort["execute"]>[0]) {
      if (executions++ < slow) await new Promise((r) => setTimeout(r, delayMs));
      return inner.execute(input);
    },
  };
  return p;
}

const recordInput = (owner: string, walletSecretKey: Uint8Array) => ({ owner, namespace: "sponsored", blobId: `blob-${randomUUID()}`, size: 10, walletSecretKey });

describe("the local sponsorship provider, with sponsored blob registration", () => {
  let t: TestStack;
  let client: SponsorProviderClient;
  beforeAll(async () => {
    t = await startTestStack({ SPONSOR_API_KEY: RELAYER_KEY, SPONSOR_DURABLE_REGISTER_ENABLED: "true" });
    client = new SponsorProviderClient({ apiKey: t.stack.sponsorProvider.apiKey, apiUrl: t.stack.sponsorProvider.url, network: t.stack.chain.network });
  }, 120_000);
  afterAll(async () => t?.teardown());

  it("sponsors, and executes with the sender's signature, the provider paying the gas", async () => {
    const wallet = Ed25519Keypair.generate();
    const before = await sui(t.stack.chain, t.stack.sponsorProvider.address);
    const sponsored = await client.sponsor({ kindBytes: await createAccountKind(t), sender: wallet.toSuiAddress() });
    const { signature } = await wallet.signTransaction(Buffer.from(sponsored.bytes, "base64"));
    const executed = await client.execute({ digest: sponsored.digest, signature });
    expect(executed.digest).toBe(sponsored.digest);
    expect(await t.stack.chain.accountExists(wallet.toSuiAddress())).toBe(true);
    expect((await t.stack.chain.getTransaction(executed.digest))?.gas_owner).toBe(t.stack.sponsorProvider.address);
    expect(await sui(t.stack.chain, t.stack.sponsorProvider.address)).toBe(before - GAS_FEE_MIST);
    expect(await sui(t.stack.chain, wallet.toSuiAddress())).toBe(0n);
    // Executable once.
    await expect(client.execute({ digest: sponsored.digest, signature })).rejects.toThrow(/already_executed/);
  });

  it("refuses an unknown API key with a clear 401 that never shows the key, and calls outside the allowed targets", async () => {
    const wrongKey = "not-the-provider-key-42";
    const bad = new SponsorProviderClient({ apiKey: wrongKey, apiUrl: t.stack.sponsorProvider.url, network: t.stack.chain.network });
    const err = await bad.sponsor({ kindBytes: await createAccountKind(t), sender: Ed25519Keypair.generate().toSuiAddress() }).catch((e) => e);
    expect(err).toBeInstanceOf(PortError);
    expect(err.kind).toBe("forbidden");
    expect(err.message).toMatch(/refused the API key \(HTTP 401, invalid_api_key\)/);
    expect(JSON.stringify({ message: err.message, stack: err.stack })).not.toContain(wrongKey);
    const other = await client
      .sponsor({ kindBytes: await createAccountKind(t), sender: Ed25519Keypair.generate().toSuiAddress(), allowedMoveCallTargets: [`${t.stack.chain.packageId}::account::add_delegate_key`] })
      .catch((e) => e);
    expect(other.kind).toBe("rejected");
    expect(other.message).toMatch(/HTTP 403, move_call_target_not_allowed/);
    const wrongNetwork = new SponsorProviderClient({ apiKey: t.stack.sponsorProvider.apiKey, apiUrl: t.stack.sponsorProvider.url, network: "mainnet" });
    await expect(wrongNetwork.sponsor({ kindBytes: await createAccountKind(t), sender: Ed25519Keypair.generate().toSuiAddress() })).rejects.toThrow(/sponsors transactions on localnet, not mainnet/);
  });

  it("POST /sponsor and /sponsor/execute go through the provider when SPONSOR_API_KEY is set", async () => {
    const wallet = Ed25519Keypair.generate();
    const kind = await createAccountKind(t);
    const authTimestamp = Math.floor(Date.now() / 1000);
    const authNonce = randomUUID();
    const { signature: authSignature } = await wallet.signPersonalMessage(new TextEncoder().encode(sponsorAuthMessage(wallet.toSuiAddress(), transactionKindHash(kind), authTimestamp, authNonce)));
    const before = await sui(t.stack.chain, t.stack.sponsorProvider.address);
    const sponsored = await post(t, "/sponsor", { sender: wallet.toSuiAddress(), transactionBlockKindBytes: Buffer.from(kind).toString("base64"), authTimestamp, authNonce, authSignature });
    expect(sponsored.status).toBe(200);
    const { signature } = await wallet.signTransaction(Buffer.from(sponsored.body.bytes!, "base64"));
    const executed = await post(t, "/sponsor/execute", { digest: sponsored.body.digest, signature, sender: wallet.toSuiAddress() });
    expect(executed).toEqual({ status: 200, body: { digest: sponsored.body.digest } });
    expect(await t.stack.chain.accountExists(wallet.toSuiAddress())).toBe(true);
    expect((await t.stack.chain.getTransaction(sponsored.body.digest!))?.gas_owner).toBe(t.stack.sponsorProvider.address);
    expect(await sui(t.stack.chain, t.stack.sponsorProvider.address)).toBe(before - GAS_FEE_MIST);
  });

  it("a remembered memory's blob registration is paid by the sponsor, not the server wallets", async () => {
    const memory = await t.client();
    const walletsBefore = await walletsTotal(t);
    const sponsorBefore = await sui(t.stack.chain, t.stack.sponsorProvider.address);
    const job = await memory.rememberAndWait("The ferry leaves the north pier at seven", "sponsored");
    expect(job.status).toBe("done");
    expect(await t.stack.chain.getBlob(job.owner!, job.blob_id!)).not.toBeNull();
    expect(await walletsTotal(t)).toBe(walletsBefore);
    expect(await sui(t.stack.chain, t.stack.sponsorProvider.address)).toBe(sponsorBefore - GAS_FEE_MIST);
  });

  describe("an expiring sponsorship (a provider whose sponsored transactions live 400 ms)", () => {
    let server: Server;
    let shortLived: SponsorProviderClient;
    beforeAll(async () => {
      const provider = await localSponsorProvider({ log: t.stack.log, chain: t.stack.chain, operatorSecretKey: t.stack.operatorSecretKey, dataDir: t.stack.config.dataDir, logger: silentLogger, ttlMs: 400 });
      server = createServer((req, res) => {
        provider.routes(req, res).then((handled) => {
          if (!handled) res.writeHead(404).end();
        });
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      shortLived = new SponsorProviderClient({ apiKey: provider.apiKey, apiUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, network: t.stack.chain.network });
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));

    const sponsoredChain = (provider: SponsorshipPort, delays: number[], maxAttempts = 3) =>
      t.stack.chain.withServerTransactions((direct) =>
        sponsoredTransactions({
          provider,
          direct,
          fallbackToDirect: false,
          invalidatedRetry: { maxAttempts, baseDelayMs: 20, maxDelayMs: 30 },
          allowedMoveCallTargets: [`${t.stack.chain.packageId}::blob_registry::record_blob`],
          sleep: async (ms) => void delays.push(ms),
        }),
      );

    it("is refused by the ledger as expired, sponsored again, and then recorded", async () => {
      const provider = slowToExecute(shortLived, 1, 900);
      const delays: number[] = [];
      const wallet = generateKeypair(); // holds no gas: only a sponsor can pay
      const blob = await sponsoredChain(provider, delays).recordBlob(recordInput(Ed25519Keypair.generate().toSuiAddress(), wallet.secretKey));
      expect(blob.objectId).toMatch(/^0x[0-9a-f]{64}$/);
      expect(provider.sponsored).toBe(2);
      expect(delays).toEqual([20]);
    });

    it("fails clearly once every attempt expired", async () => {
      const provider = slowToExecute(shortLived, 99, 900);
      const delays: number[] = [];
      const err = await sponsoredChain(provider, delays, 2).recordBlob(recordInput(Ed25519Keypair.generate().toSuiAddress(), generateKeypair().secretKey)).catch((e) => e);
      expect(err).toBeInstanceOf(PortError);
      expect(err.message).toMatch(/sponsored execution failed: .*invalidated 2 times in a row \(SPONSOR_INVALIDATED_MAX_ATTEMPTS=2\)/);
      expect(provider.sponsored).toBe(2);
      expect(delays).toEqual([20]);
    });
  });

  it("with the provider unreachable: the server wallet pays when falling back, else the write fails", async () => {
    const down = new SponsorProviderClient({ apiKey: RELAYER_KEY, apiUrl: "http://127.0.0.1:9", network: t.stack.chain.network });
    const chainWith = (fallbackToDirect: boolean) =>
      t.stack.chain.withServerTransactions((direct) =>
        sponsoredTransactions({ provider: down, direct, fallbackToDirect, invalidatedRetry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 1 }, allowedMoveCallTargets: [] }),
      );
    const wallet = generateKeypair();
    await mint(t.stack.chain, { operatorKey: t.stack.operatorSecretKey, to: wallet.keypair.address, amount: 10n * GAS_FEE_MIST });
    const owner = Ed25519Keypair.generate().toSuiAddress();
    const err = await chainWith(false).recordBlob(recordInput(owner, wallet.secretKey)).catch((e) => e);
    expect(err).toBeInstanceOf(PortError);
    expect(err.message).toMatch(/sponsored execution failed: .*sponsorship provider is unreachable/);
    expect(err.message).not.toContain(RELAYER_KEY);
    expect(await sui(t.stack.chain, wallet.keypair.address)).toBe(10n * GAS_FEE_MIST);
    await chainWith(true).recordBlob(recordInput(owner, wallet.secretKey));
    expect(await sui(t.stack.chain, wallet.keypair.address)).toBe(9n * GAS_FEE_MIST);
  });
});

describe("sponsored blob registration with the provider down", () => {
  const downEnv = { SPONSOR_API_KEY: RELAYER_KEY, SPONSOR_API_URL: "http://127.0.0.1:9", SPONSOR_DURABLE_REGISTER_ENABLED: "true" };

  it("without fallback, each attempt fails and the job fails saying why", async () => {
    const t = await startTestStack({ ...downEnv, SPONSOR_FALLBACK_TO_DIRECT_SIGN: "false" });
    try {
      const walletsBefore = await walletsTotal(t);
      const job = await (await t.client()).rememberAndWait("The orchard gate sticks after rain", "sponsored");
      expect(job.status).toBe("failed");
      expect(job.error).toMatch(/sponsored execution failed: .*sponsorship provider is unreachable/);
      expect(job.error).not.toContain(RELAYER_KEY);
      expect(await walletsTotal(t)).toBe(walletsBefore);
    } finally {
      await t.teardown();
    }
  }, 120_000);

  it("with SPONSOR_FALLBACK_TO_DIRECT_SIGN=true, the server wallet pays and the memory is recorded", async () => {
    const t = await startTestStack({ ...downEnv, SPONSOR_FALLBACK_TO_DIRECT_SIGN: "true" });
    try {
      const walletsBefore = await walletsTotal(t);
      const job = await (await t.client()).rememberAndWait("The orchard gate sticks after rain", "sponsored");
      expect(job.status).toBe("done");
      expect(await walletsTotal(t)).toBe(walletsBefore - GAS_FEE_MIST);
    } finally {
      await t.teardown();
    }
  }, 120_000);
});
