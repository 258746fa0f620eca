// End to end against the real local ledger (event-sourced on a private nats-server): key-server objects are
// published with put_object, the Sui JSON-RPC subset reads them through ledgerObjectSource, and the key servers'
// policy reads accounts and delegate keys from the ledger (ownerOrDelegate over ownerOfDelegateAddress).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { PortError } from "../adapters/ports.ts";
import { LocalChain } from "../adapters/chain/local/local-chain.ts";
import { addDelegateKey, createAccount, generateKeypair, mint, removeDelegateKey } from "../adapters/chain/local/accounts.ts";
import { EnvelopeEncryption } from "../adapters/encryption/envelope.ts";
import { createDelegateSession } from "../adapters/encryption/session.ts";
import { startLocalEncryptionStack, type LocalEncryptionStack } from "../adapters/encryption/local-keyservers/local-stack.ts";
import { ownerOrDelegate } from "../adapters/encryption/local-keyservers/policy.ts";

const PKG = "0x" + "c4".repeat(32);
const enc = new TextEncoder();
const dec = new TextDecoder();

let nats: NatsServerHandle;
let log: EventLog;
let chain: LocalChain;
let dir: string;
let stack: LocalEncryptionStack;
let port: EnvelopeEncryption;
const operator = generateKeypair();

async function account() {
  const owner = generateKeypair();
  await mint(chain, { operatorKey: operator.secretKey, to: owner.keypair.address, amount: 1_000_000_000n });
  await createAccount(chain, { ownerKey: owner.secretKey });
  const delegate = generateKeypair();
  await addDelegateKey(chain, { ownerKey: owner.secretKey, publicKey: delegate.keypair.publicKey, label: "agent" });
  return { owner, delegate };
}

async function cred(secret: Uint8Array) {
  return { kind: "session" as const, exported: (await createDelegateSession({ delegateSecretKey: secret, packageId: PKG, rpcUrl: stack.rpcUrl })).header };
}

beforeAll(async () => {
  nats = await startNatsServer();
  log = await openEventLog({ servers: nats.url, name: "encryption-ledger-test" });
  chain = await LocalChain.open(log, { packageId: PKG, network: "localnet", operatorKey: operator.secretKey });
  dir = mkdtempSync(join(tmpdir(), "memrelay-enc-ledger-"));
  stack = await startLocalEncryptionStack({ dir, packageId: PKG, ledger: chain, isAuthorized: ownerOrDelegate(chain) });
  port = new EnvelopeEncryption({ packageId: PKG, rpcUrl: stack.rpcUrl, serverConfigs: stack.serverConfigs.map((s) => ({ ...s })), threshold: 2 });
});

afterAll(async () => {
  port?.close();
  await stack?.close();
  await chain?.close();
  await log?.close();
  await nats?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("encryption port over the local ledger", () => {
  it("grants a delegate its own owner's memories and refuses another owner's", async () => {
    const a = await account();
    const b = await account();
    const blobA = await port.encrypt(a.owner.keypair.address, "default", enc.encode("A's memory"));
    const blobB = await port.encrypt(b.owner.keypair.address, "default", enc.encode("B's memory"));
    expect(dec.decode((await port.decryptMany(a.owner.keypair.address, [blobA], await cred(a.delegate.secretKey)))[0]!)).toBe("A's memory");
    const err = await port.decryptMany(b.owner.keypair.address, [blobB], await cred(a.delegate.secretKey)).catch((e) => e);
    expect(err).toBeInstanceOf(PortError);
    expect((err as PortError).kind).toBe("forbidden");
    expect(dec.decode((await port.decryptMany(b.owner.keypair.address, [blobB], await cred(b.owner.secretKey)))[0]!)).toBe("B's memory");
  });

  it("stops granting a delegate key once the owner removes it on the ledger", async () => {
    const a = await account();
    const blob = await port.encrypt(a.owner.keypair.address, "default", enc.encode("until removal"));
    expect(dec.decode((await port.decryptMany(a.owner.keypair.address, [blob], await cred(a.delegate.secretKey)))[0]!)).toBe("until removal");
    await removeDelegateKey(chain, { ownerKey: a.owner.secretKey, publicKey: a.delegate.keypair.publicKey });
    const err = await port.decryptMany(a.owner.keypair.address, [blob], await cred(a.delegate.secretKey)).catch((e) => e);
    expect((err as PortError).kind).toBe("forbidden");
  });
});
