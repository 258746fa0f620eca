// The local EncryptionPort: envelope encryption (one Seal-encrypted data key per owner, namespace and key epoch;
// AES-256-GCM per memory) over the unmodified Seal SDK against local 2-of-3 key servers, and weighted ones (threshold 3 of weights 2, 1, 1).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createCipheriv, randomBytes } from "node:crypto";
import { SealClient } from "@mysten/seal";
import { decodeSuiPrivateKey } from "@mysten/sui/cryptography";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { PortError, type DecryptCredential } from "../adapters/ports.ts";
import { EnvelopeEncryption } from "../adapters/encryption/envelope.ts";
import { parseEnvelope } from "../adapters/encryption/envelope-format.ts";
import { createDelegateSession, decodeSessionHeader } from "../adapters/encryption/session.ts";
import { parseServerConfigs, thresholdFromEnv } from "../adapters/encryption/config.ts";
import { bcs } from "@mysten/sui/bcs";
import { moveObject } from "../adapters/chain/local/rpc/objects.ts";
import { startLocalEncryptionStack, type LocalEncryptionStack } from "../adapters/encryption/local-keyservers/local-stack.ts";
import { ownerOrDelegate } from "../adapters/encryption/local-keyservers/policy.ts";

const PKG = "0x" + "e1".repeat(32);
const enc = new TextEncoder();
const dec = new TextDecoder();

const ownerA = Ed25519Keypair.generate();
const ownerB = Ed25519Keypair.generate();
const delegateA = Ed25519Keypair.generate();
const delegateB = Ed25519Keypair.generate();
const A = ownerA.toSuiAddress();
const B = ownerB.toSuiAddress();
const delegates = new Map<string, string>([
  [delegateA.toSuiAddress(), A],
  [delegateB.toSuiAddress(), B],
]);

let dir: string;
let stack: LocalEncryptionStack;
let port: EnvelopeEncryption;

function newPort(): EnvelopeEncryption {
  return new EnvelopeEncryption({ packageId: PKG, rpcUrl: stack.rpcUrl, serverConfigs: stack.serverConfigs.map((s) => ({ ...s })), threshold: 2 });
}

async function sessionCred(signer: Ed25519Keypair, ttlMin = 5): Promise<DecryptCredential> {
  const s = await createDelegateSession({ delegateSecretKey: signer.getSecretKey(), packageId: PKG, rpcUrl: stack.rpcUrl, ttlMin });
  return { kind: "session", exported: s.header };
}

function fetchCount(): number {
  return stack.cluster.servers.reduce((n, s) => n + s.stats.fetchKeyRequests, 0);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "memrelay-enc-"));
  stack = await startLocalEncryptionStack({
    dir,
    packageId: PKG,
    isAuthorized: ownerOrDelegate({ ownerOfDelegateAddress: async (a) => (delegates.has(a) ? { owner: delegates.get(a)! } : null) }),
  });
  port = newPort();
});

afterAll(async () => {
  port?.close();
  await stack?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

afterEach(() => {
  vi.useRealTimers();
});

describe("envelope encryption port", () => {
  it("round-trips memories and unlocks each data key once per session", async () => {
    const texts = Array.from({ length: 40 }, (_, i) => `memory ${i}: ${"x".repeat(i * 7)}`);
    const blobs = await Promise.all(texts.map((t) => port.encrypt(A, "default", enc.encode(t))));
    // One data key for the (owner, namespace): every blob names the same key id.
    expect(new Set(blobs.map((b) => Buffer.from(parseEnvelope(b).keyId).toString("hex"))).size).toBe(1);
    const cred = await sessionCred(delegateA);
    const before = fetchCount();
    const out = await port.decryptMany(A, blobs, cred);
    expect(out.map((o) => (o ? dec.decode(o) : null))).toEqual(texts);
    const afterFirst = fetchCount();
    expect(afterFirst - before).toBeGreaterThanOrEqual(2); // threshold 2 of 3
    expect(afterFirst - before).toBeLessThanOrEqual(3); // one fetch_key round for the whole batch
    // The unlocked key is cached for this session: no key-server traffic the second time.
    const again = await port.decryptMany(A, blobs.slice(0, 5), cred);
    expect(again.map((o) => dec.decode(o!))).toEqual(texts.slice(0, 5));
    expect(fetchCount()).toBe(afterFirst);
  });

  it("uses one key per namespace and fetches all distinct keys of a batch in one round", async () => {
    const b1 = await port.encrypt(A, "ns-1", enc.encode("one"));
    const b2 = await port.encrypt(A, "ns-2", enc.encode("two"));
    const b3 = await port.encrypt(A, "ns-1", enc.encode("three"));
    expect(Buffer.from(parseEnvelope(b1).keyId)).toEqual(Buffer.from(parseEnvelope(b3).keyId));
    expect(Buffer.from(parseEnvelope(b1).keyId)).not.toEqual(Buffer.from(parseEnvelope(b2).keyId));
    const before = fetchCount();
    const out = await port.decryptMany(A, [b1, b2, b3], await sessionCred(ownerA));
    expect(out.map((o) => dec.decode(o!))).toEqual(["one", "two", "three"]);
    expect(fetchCount() - before).toBeLessThanOrEqual(3);
  });

  it("accepts the legacy delegate private key credential", async () => {
    const blob = await port.encrypt(A, "legacy", enc.encode("via x-delegate-key"));
    const hex = Buffer.from(decodeSuiPrivateKey(delegateA.getSecretKey()).secretKey).toString("hex");
    const out = await port.decryptMany(A, [blob], { kind: "delegate-key", privateKeyHex: hex });
    expect(dec.decode(out[0]!)).toBe("via x-delegate-key");
  });

  it("is self-contained: a restarted relayer opens old blobs and mints a new key epoch", async () => {
    const blob = await port.encrypt(B, "default", enc.encode("before restart"));
    const restarted = newPort();
    try {
      const out = await restarted.decryptMany(B, [blob], await sessionCred(delegateB));
      expect(dec.decode(out[0]!)).toBe("before restart");
      const fresh = await restarted.encrypt(B, "default", enc.encode("after restart"));
      expect(Buffer.from(parseEnvelope(fresh).keyId)).not.toEqual(Buffer.from(parseEnvelope(blob).keyId));
    } finally {
      restarted.close();
    }
  });

  it("refuses a delegate of account A for owner B's memories with PortError(forbidden)", async () => {
    const blob = await port.encrypt(B, "default", enc.encode("B only"));
    const err = await port.decryptMany(B, [blob], await sessionCred(delegateA)).catch((e) => e);
    expect(err).toBeInstanceOf(PortError);
    expect((err as PortError).kind).toBe("forbidden");
    // Same with the legacy credential.
    const hex = Buffer.from(decodeSuiPrivateKey(delegateA.getSecretKey()).secretKey).toString("hex");
    const err2 = await port.decryptMany(B, [blob], { kind: "delegate-key", privateKeyHex: hex }).catch((e) => e);
    expect((err2 as PortError).kind).toBe("forbidden");
  });

  it("does not let a caller pass B's blob off as A's (foreign owner → null)", async () => {
    const blobB = await port.encrypt(B, "default", enc.encode("B's"));
    const blobA = await port.encrypt(A, "default", enc.encode("A's"));
    const out = await port.decryptMany(A, [blobB, blobA], await sessionCred(delegateA));
    expect(out[0]).toBeNull();
    expect(dec.decode(out[1]!)).toBe("A's");
  });

  it("a second sealed key under the same identity cannot poison the legitimate one", async () => {
    const legit = await port.encrypt(A, "poison", enc.encode("legit"));
    const { owner, keyId } = parseEnvelope(legit);
    // Anyone can Seal-encrypt to an identity: forge another data key for A's key id and a blob under it.
    const seal = new SealClient({ suiClient: new SuiJsonRpcClient({ url: stack.rpcUrl, network: "localnet" }), serverConfigs: stack.serverConfigs.map((s) => ({ ...s })) });
    const forgedKey = randomBytes(32);
    const { encryptedObject } = await seal.encrypt({ threshold: 2, packageId: PKG, id: owner.slice(2) + Buffer.from(keyId).toString("hex"), data: forgedKey });
    const header = Buffer.concat([Buffer.from([0x4d, 0x52, 1, 0]), Buffer.from(owner.slice(2), "hex"), Buffer.from(keyId), Buffer.from([encryptedObject.length >> 8, encryptedObject.length & 0xff]), encryptedObject]);
    const nonce = randomBytes(12);
    const c = createCipheriv("aes-256-gcm", forgedKey, nonce);
    c.setAAD(header);
    const forged = Buffer.concat([header, nonce, c.update("forged"), c.final(), c.getAuthTag()]);
    const out = await port.decryptMany(A, [forged, legit, legit], await sessionCred(delegateA));
    expect(out.map((o) => (o ? dec.decode(o) : null))).toEqual(["forged", "legit", "legit"]);
  });

  it("yields null for tampered or malformed items and opens the rest", async () => {
    const good = await port.encrypt(A, "tamper", enc.encode("intact"));
    const flippedBody = new Uint8Array(await port.encrypt(A, "tamper", enc.encode("will be flipped")));
    flippedBody[flippedBody.length - 20]! ^= 0x01;
    const flippedHeader = new Uint8Array(await port.encrypt(A, "tamper", enc.encode("header flipped")));
    flippedHeader[40]! ^= 0x01; // key id byte: authenticated as AAD, and names no sealed key
    const truncated = (await port.encrypt(A, "tamper", enc.encode("cut short"))).slice(0, 60);
    const garbage = new Uint8Array([1, 2, 3, 4, 5]);
    const out = await port.decryptMany(A, [flippedBody, good, flippedHeader, truncated, garbage, new Uint8Array()], await sessionCred(ownerA));
    expect(out[0]).toBeNull();
    expect(dec.decode(out[1]!)).toBe("intact");
    expect(out.slice(2)).toEqual([null, null, null, null]);
  });

  it("can pass the owner's account object to seal_approve (MemWal-shaped PTB, resolved through the local RPC)", async () => {
    const accountId = "0x" + "a0".repeat(32);
    stack.registry!.putObject(
      moveObject({ objectId: accountId, type: `${PKG}::account::MemWalAccount`, contents: bcs.Address.serialize(accountId).toBytes(), owner: { kind: "Shared", initialSharedVersion: "7" } }),
    );
    const withAccount = new EnvelopeEncryption({
      packageId: PKG,
      rpcUrl: stack.rpcUrl,
      serverConfigs: stack.serverConfigs.map((s) => ({ ...s })),
      threshold: 2,
      approveObjects: async (owner) => (owner === A ? [accountId] : []),
    });
    try {
      const blob = await withAccount.encrypt(A, "acct", enc.encode("with account arg"));
      expect(dec.decode((await withAccount.decryptMany(A, [blob], await sessionCred(delegateA)))[0]!)).toBe("with account arg");
    } finally {
      withAccount.close();
    }
  });

  it("re-asks the key servers once cached keys age out, so a removed delegate loses access", async () => {
    const short = new EnvelopeEncryption({
      packageId: PKG,
      rpcUrl: stack.rpcUrl,
      serverConfigs: stack.serverConfigs.map((s) => ({ ...s })),
      threshold: 2,
      keyCacheMaxAgeMs: 50,
    });
    const gone = Ed25519Keypair.generate();
    delegates.set(gone.toSuiAddress(), A);
    try {
      const blob = await short.encrypt(A, "removal", enc.encode("until removed"));
      const cred = await sessionCred(gone);
      expect(dec.decode((await short.decryptMany(A, [blob], cred))[0]!)).toBe("until removed");
      delegates.delete(gone.toSuiAddress()); // the owner removes the key on chain
      await new Promise((r) => setTimeout(r, 80));
      const err = await short.decryptMany(A, [blob], cred).catch((e) => e);
      expect((err as PortError).kind).toBe("forbidden");
    } finally {
      delegates.delete(gone.toSuiAddress());
      short.close();
    }
  });

  it("fetches an aging data key again in the background: warm requests never wait for the key servers", async () => {
    const maxAge = 60_000;
    const aging = new EnvelopeEncryption({ packageId: PKG, rpcUrl: stack.rpcUrl, serverConfigs: stack.serverConfigs.map((s) => ({ ...s })), threshold: 2, keyCacheMaxAgeMs: maxAge });
    try {
      const blob = await aging.encrypt(A, "aging", enc.encode("kept warm"));
      const cred = await sessionCred(delegateA);
      await aging.decryptMany(A, [blob], cred);
      const cold = fetchCount();
      // The clock is moved by hand while the background fetch runs in real time, so how loaded the machine is cannot
      // decide whether the refresh beat the key's age (the key's age starts when its fetch ends, just above).
      vi.useFakeTimers({ toFake: ["Date"] });
      const t0 = Date.now();
      vi.setSystemTime(t0 + maxAge * 0.8);
      // past 75 % of its age: served from the cache at once, and fetched again behind the answer
      expect(dec.decode((await aging.decryptMany(A, [blob], cred))[0]!)).toBe("kept warm");
      await vi.waitFor(() => expect(fetchCount()).toBeGreaterThan(cold), { timeout: 10_000, interval: 20 });
      await vi.waitFor(() => expect(aging.cacheStats()).toMatchObject({ unlockedKeys: 1, refreshing: 0 }), { timeout: 10_000, interval: 20 });
      const refreshed = fetchCount();
      vi.setSystemTime(t0 + maxAge * 1.1);
      // past the first fetch's full age: the refreshed key answers, no request reaches the key servers
      expect(dec.decode((await aging.decryptMany(A, [blob], cred))[0]!)).toBe("kept warm");
      expect(fetchCount()).toBe(refreshed);
    } finally {
      vi.useRealTimers();
      aging.close();
    }
  });

  it("drops an aging key at once when its background fetch is refused (a delegate removed on chain)", async () => {
    const maxAge = 60_000;
    const aging = new EnvelopeEncryption({ packageId: PKG, rpcUrl: stack.rpcUrl, serverConfigs: stack.serverConfigs.map((s) => ({ ...s })), threshold: 2, keyCacheMaxAgeMs: maxAge });
    const gone = Ed25519Keypair.generate();
    delegates.set(gone.toSuiAddress(), A);
    try {
      const blob = await aging.encrypt(A, "aging-removed", enc.encode("until refused"));
      const cred = await sessionCred(gone);
      await aging.decryptMany(A, [blob], cred);
      delegates.delete(gone.toSuiAddress());
      // The clock stands at 80 % of the key's age while the refused refresh runs in real time: the key can only be
      // gone because of the refusal, never because it aged out, however loaded the machine is.
      vi.useFakeTimers({ toFake: ["Date"] });
      vi.setSystemTime(Date.now() + maxAge * 0.8);
      await aging.decryptMany(A, [blob], cred); // still within its age: served, and the refresh is refused
      await vi.waitFor(() => expect(aging.cacheStats().unlockedKeys).toBe(0), { timeout: 10_000, interval: 20 });
      // and still well within the age, the next request asks the servers again (not the session's SealClient cache)
      expect(((await aging.decryptMany(A, [blob], cred).catch((e) => e)) as PortError).kind).toBe("forbidden");
    } finally {
      delegates.delete(gone.toSuiAddress());
      aging.close();
    }
  });

  it("renews a legacy x-delegate-key session before it ends and keeps its unlocked keys (no cold fetch every TTL)", async () => {
    const legacy = new EnvelopeEncryption({ packageId: PKG, rpcUrl: stack.rpcUrl, serverConfigs: stack.serverConfigs.map((s) => ({ ...s })), threshold: 2, legacySessionTtlMin: 1, keyCacheMaxAgeMs: 10 * 60_000 });
    const cred: DecryptCredential = { kind: "delegate-key", privateKeyHex: Buffer.from(decodeSuiPrivateKey(delegateA.getSecretKey()).secretKey).toString("hex") };
    try {
      const blobs = await Promise.all(["n1", "n2", "n3"].map((ns) => legacy.encrypt(A, ns, enc.encode(`in ${ns}`))));
      await legacy.decryptMany(A, blobs, cred);
      const warm = fetchCount();
      expect(legacy.cacheStats().opened).toBe(1);
      vi.useFakeTimers({ toFake: ["Date"] });
      const t0 = Date.now();
      // 1-minute session, ends 10 s early: at +40 s it is within 30 s of its end, so this request starts the renewal
      vi.setSystemTime(t0 + 40_000);
      expect((await legacy.decryptMany(A, blobs, cred)).map((b) => dec.decode(b!))).toEqual(["in n1", "in n2", "in n3"]);
      await vi.waitFor(() => expect(legacy.cacheStats()).toMatchObject({ opened: 2, sessions: 1, unlockedKeys: 3 }), { timeout: 5_000, interval: 20 });
      // past the first session's end: the renewed one answers from the keys it took over
      vi.setSystemTime(t0 + 55_000);
      expect((await legacy.decryptMany(A, blobs, cred)).map((b) => dec.decode(b!))).toEqual(["in n1", "in n2", "in n3"]);
      expect(fetchCount()).toBe(warm);
    } finally {
      legacy.close();
    }
  });

  it("still decrypts with one of three key servers down", async () => {
    const blob = await port.encrypt(A, "outage", enc.encode("threshold holds"));
    await stack.cluster.stop(0);
    const out = await port.decryptMany(A, [blob], await sessionCred(delegateA)); // fresh session: nothing cached
    expect(dec.decode(out[0]!)).toBe("threshold holds");
  });

  it("refuses an expired session, and never serves cached keys past the session's end", async () => {
    const blob = await port.encrypt(A, "expiry", enc.encode("short-lived"));
    const cred = await sessionCred(delegateA, 1);
    expect(dec.decode((await port.decryptMany(A, [blob], cred))[0]!)).toBe("short-lived");
    expect(port.cacheStats().unlockedKeys).toBeGreaterThan(0);
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now() + 2 * 60_000);
    const err = await port.decryptMany(A, [blob], cred).catch((e) => e);
    expect(err).toBeInstanceOf(PortError);
    expect((err as PortError).kind).toBe("forbidden");
  });

  it("rejects malformed credentials and sessions for another package", async () => {
    const blob = await port.encrypt(A, "default", enc.encode("x"));
    expect(((await port.decryptMany(A, [blob], { kind: "session", exported: "bm90IGpzb24=" }).catch((e) => e)) as PortError).kind).toBe("invalid");
    expect(((await port.decryptMany(A, [blob], { kind: "delegate-key", privateKeyHex: "zz" }).catch((e) => e)) as PortError).kind).toBe("invalid");
    const cred = await sessionCred(ownerA);
    const data = decodeSessionHeader((cred as { exported: string }).exported);
    const foreign = Buffer.from(JSON.stringify({ ...data, packageId: "0x" + "99".repeat(32) })).toString("base64");
    expect(((await port.decryptMany(A, [blob], { kind: "session", exported: foreign }).catch((e) => e)) as PortError).kind).toBe("forbidden");
    // A session whose signature was forged is refused by the key servers.
    const other = decodeSessionHeader((await sessionCred(ownerB) as { exported: string }).exported);
    const forged = Buffer.from(JSON.stringify({ ...data, personalMessageSignature: other.personalMessageSignature })).toString("base64");
    expect(((await port.decryptMany(A, [blob], { kind: "session", exported: forged }).catch((e) => e)) as PortError).kind).toBe("forbidden");
  });
});

describe("encryption configuration", () => {
  it("parses ENCRYPTION_SERVER_CONFIGS and ENCRYPTION_THRESHOLD", () => {
    const id = "0x" + "ab".repeat(32);
    expect(parseServerConfigs({ ENCRYPTION_SERVER_CONFIGS: JSON.stringify([{ objectId: id, weight: 2 }]) })).toEqual([{ objectId: id, weight: 2 }]);
    expect(parseServerConfigs({ ENCRYPTION_KEY_SERVERS: `${id}, ${id.replace("ab", "cd")}` })).toHaveLength(2);
    expect(parseServerConfigs({})).toBeUndefined();
    expect(() => parseServerConfigs({ ENCRYPTION_SERVER_CONFIGS: "[{}]" })).toThrow();
    expect(thresholdFromEnv(3, {})).toBe(2);
    expect(thresholdFromEnv(1, {})).toBe(1);
    expect(thresholdFromEnv(3, { ENCRYPTION_THRESHOLD: "3" })).toBe(3);
    expect(() => thresholdFromEnv(3, { ENCRYPTION_THRESHOLD: "4" })).toThrow();
  });
});

describe("weighted key servers (ENCRYPTION_SERVER_CONFIGS weights)", () => {
  let wdir: string;
  let wstack: LocalEncryptionStack;
  let weighted: EnvelopeEncryption;

  beforeAll(async () => {
    wdir = mkdtempSync(join(tmpdir(), "memrelay-enc-weights-"));
    wstack = await startLocalEncryptionStack({
      dir: wdir,
      packageId: PKG,
      isAuthorized: ownerOrDelegate({ ownerOfDelegateAddress: async (a) => (delegates.has(a) ? { owner: delegates.get(a)! } : null) }),
    });
    // The first server weighs 2: threshold 3 holds with it and any one other, not without it.
    const serverConfigs = wstack.serverConfigs.map((s, i) => ({ ...s, weight: i === 0 ? 2 : 1 }));
    weighted = new EnvelopeEncryption({ packageId: PKG, rpcUrl: wstack.rpcUrl, serverConfigs, threshold: 3 });
  });

  afterAll(async () => {
    weighted?.close();
    await wstack?.close();
    if (wdir) rmSync(wdir, { recursive: true, force: true });
  });

  const freshSession = async () => {
    const s = await createDelegateSession({ delegateSecretKey: delegateA.getSecretKey(), packageId: PKG, rpcUrl: wstack.rpcUrl, ttlMin: 5 });
    return { kind: "session", exported: s.header } as DecryptCredential;
  };

  it("decrypts with a server of weight 1 down (2 + 1 reaches 3 with two servers), and not once the weight left is below the threshold", async () => {
    const blob = await weighted.encrypt(A, "weights", enc.encode("weighed shares"));
    await wstack.cluster.stop(2);
    expect(dec.decode((await weighted.decryptMany(A, [blob], await freshSession()))[0]!)).toBe("weighed shares");
    // A new data key (another namespace) must be unlocked by the servers: weight 2 alone is short of 3.
    const other = await weighted.encrypt(A, "weights-2", enc.encode("short of the threshold"));
    await wstack.cluster.stop(1);
    const err = await weighted.decryptMany(A, [other], await freshSession()).catch((e) => e);
    expect(err).toBeInstanceOf(PortError);
    expect((err as PortError).kind).toBe("unavailable");
  }, 60_000);
});
