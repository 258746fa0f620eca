// The sponsorship's execution policy (actors/relayer/sponsorship.ts) over the gas station against a private nats-server's KV and a chain
// that fails on cue: transient failures are retried with the configured backoff, a refusal is not retried, and
// a failed execution leaves the binding executable.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { Transaction } from "@mysten/sui/transactions";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { PortError, type ExecutedTx, type SponsoredChainPort } from "../adapters/ports.ts";
import { SponsorBindings } from "../adapters/sponsor/bindings.ts";
import { Sponsorship } from "../actors/relayer/sponsorship.ts";
import { SponsorRefusal } from "../actors/relayer/sponsor-refusals.ts";
import { sponsorHttpError } from "../gateway/relayer/sponsor-refusals.ts";
import { GasStation } from "../adapters/sponsor/gas-station.ts";
import { localTarget } from "../adapters/chain/local/transaction-data.ts";
import { generateKeypair } from "../adapters/chain/sui/keys.ts";
import { sponsorAuthMessage, transactionKindHash } from "../schemas/relayer/sponsor.ts";
import type { SignedTx } from "../schemas/chain.ts";

const PKG = "0x" + "3c".repeat(32);
let nats: NatsServerHandle;
let log: EventLog;
beforeAll(async () => {
  nats = await startNatsServer();
  log = await openEventLog({ servers: nats.url, name: "sponsorship-units" });
});
afterAll(async () => {
  await log?.close();
  await nats?.stop();
});

/** A chain that answers each execute with the next scripted outcome. */
function scriptedChain(outcomes: (PortError | "ok")[]): SponsoredChainPort & { calls: SignedTx[] } {
  const calls: SignedTx[] = [];
  return {
    packageId: PKG,
    network: "localnet",
    target: localTarget("localnet", PKG),
    calls,
    async execute(tx: SignedTx): Promise<ExecutedTx> {
      calls.push(tx);
      const next = outcomes.shift() ?? "ok";
      if (next !== "ok") throw next;
      return { digest: "executed", objects: [] };
    },
    getObject: async () => null,
  };
}

async function station(chain: SponsoredChainPort, transientRetry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number }, sleep: (ms: number) => Promise<void>) {
  return new Sponsorship({
    bindings: await SponsorBindings.open(log, { nonceTtlMs: 60_000, bindingTtlMs: 60_000 }),
    provider: new GasStation(chain, generateKeypair().secretKey, { ttlMs: 60_000 }),
    packageId: PKG,
    clockWindowSecs: 300,
    transientRetry,
    sleep,
  });
}

async function sponsoredFor(s: Sponsorship, wallet: Ed25519Keypair) {
  const tx = new Transaction();
  tx.moveCall({ target: `${PKG}::account::create_account`, arguments: [tx.sharedObjectRef({ objectId: localTarget("localnet", PKG).registryId, initialSharedVersion: 1, mutable: true }), tx.object.clock()] });
  const kind = await tx.build({ onlyTransactionKind: true });
  const authTimestamp = Math.floor(Date.now() / 1000);
  const authNonce = randomUUID();
  const { signature } = await wallet.signPersonalMessage(new TextEncoder().encode(sponsorAuthMessage(wallet.toSuiAddress(), transactionKindHash(kind), authTimestamp, authNonce)));
  const sponsored = await s.sponsor({ sender: wallet.toSuiAddress(), transactionBlockKindBytes: Buffer.from(kind).toString("base64"), authTimestamp, authNonce, authSignature: signature });
  const { signature: txSig } = await wallet.signTransaction(Buffer.from(sponsored.bytes, "base64"));
  return { digest: sponsored.digest, signature: txSig, sender: wallet.toSuiAddress() };
}

/** A refusal as the sidecar answers it (gateway/relayer/sponsor-refusals.ts). */
const answered = <T>(p: Promise<T>) => p.catch((e) => {
  throw e instanceof SponsorRefusal ? sponsorHttpError(e.error) : e;
});

describe("sponsored execution", () => {
  it("retries transient failures with exponential delays up to the limit, then succeeds", async () => {
    const chain = scriptedChain([new PortError("chain", "unavailable", "down"), new PortError("chain", "unavailable", "down"), "ok"]);
    const delays: number[] = [];
    const s = await station(chain, { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 150 }, async (ms) => void delays.push(ms));
    expect(await s.execute(await sponsoredFor(s, Ed25519Keypair.generate()))).toEqual({ digest: "executed" });
    expect(delays).toEqual([100, 150]);
    expect(chain.calls).toHaveLength(3);
    expect(chain.calls[0]!.signatures).toHaveLength(2); // the sender's and the sponsor's
  });

  it("gives up after the last transient attempt with 503, does not retry a refusal (422), and keeps the binding executable", async () => {
    const chain = scriptedChain([new PortError("chain", "unavailable", "down"), new PortError("chain", "unavailable", "down"), new PortError("chain", "rejected", "account exists"), "ok"]);
    const s = await station(chain, { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1 }, async () => undefined);
    const req = await sponsoredFor(s, Ed25519Keypair.generate());
    await expect(answered(s.execute(req))).rejects.toMatchObject({ status: 503 });
    await expect(answered(s.execute(req))).rejects.toMatchObject({ status: 422, message: /account exists/ });
    expect(chain.calls).toHaveLength(3);
    expect(await s.execute(req)).toEqual({ digest: "executed" });
    await expect(answered(s.execute(req))).rejects.toMatchObject({ status: 409 });
  });
});
