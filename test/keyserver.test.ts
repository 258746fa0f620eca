// Local Seal-compatible key servers + local Sui JSON-RPC subset, exercised with the UNMODIFIED @mysten/seal and
// @mysten/sui SDKs: threshold encrypt, 2-of-3 decrypt, owner-bound policy, faults and refusals.

import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { NoAccessError, SealClient, SessionKey } from "@mysten/seal";
import { bcs } from "@mysten/sui/bcs";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { Transaction } from "@mysten/sui/transactions";
import { toBase64 } from "@mysten/sui/utils";
import { TypeTagSerializer } from "@mysten/sui/bcs";
import { deriveDynamicFieldID, fromBase64, normalizeSuiAddress } from "@mysten/sui/utils";
import { MemoryObjectSource, moveObject } from "../adapters/chain/local/rpc/objects.ts";
import { ledgerObjectSource, type LedgerObjectReader, type LedgerStoredObject } from "../adapters/chain/local/rpc/ledger-source.ts";
import { startChainRpcServer } from "../adapters/chain/local/rpc/server.ts";
import { keyServerLedgerInput } from "../adapters/encryption/local-keyservers/onchain.ts";
import { startKeyServerCluster } from "../adapters/encryption/local-keyservers/cluster.ts";
import { startLocalEncryptionStack, type LocalEncryptionStack } from "../adapters/encryption/local-keyservers/local-stack.ts";
import { ownerOrDelegate } from "../adapters/encryption/local-keyservers/policy.ts";

const PKG = "0x" + "5e".repeat(32);
const OTHER_PKG = "0x" + "77".repeat(32);

const ownerA = Ed25519Keypair.generate();
const ownerB = Ed25519Keypair.generate();
const delegateA = Ed25519Keypair.generate();
const delegateB = Ed25519Keypair.generate();
const stranger = Ed25519Keypair.generate();
const A = ownerA.toSuiAddress();
const B = ownerB.toSuiAddress();

const delegates = new Map<string, string>([
  [delegateA.toSuiAddress(), A],
  [delegateB.toSuiAddress(), B],
]);

let dir: string;
let stack: LocalEncryptionStack;
let sui: SuiJsonRpcClient;

function identity(owner: string, suffix = "01020304"): string {
  return owner.slice(2) + suffix;
}

async function approveTx(ids: string[], pkg = PKG, fn = "seal_approve"): Promise<Uint8Array> {
  const tx = new Transaction();
  for (const id of ids) tx.moveCall({ target: `${pkg}::account::${fn}`, arguments: [tx.pure.vector("u8", Buffer.from(id, "hex"))] });
  return tx.build({ client: sui, onlyTransactionKind: true });
}

function sealClient(): SealClient {
  return new SealClient({ suiClient: sui, serverConfigs: stack.serverConfigs.map((s) => ({ ...s })), verifyKeyServers: true });
}

async function session(signer: Ed25519Keypair, ttlMin = 5): Promise<SessionKey> {
  return SessionKey.create({ address: signer.toSuiAddress(), packageId: PKG, ttlMin, signer, suiClient: sui });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "memrelay-ks-"));
  stack = await startLocalEncryptionStack({
    dir,
    packageId: PKG,
    isAuthorized: ownerOrDelegate({ ownerOfDelegateAddress: async (a) => delegates.get(a) ?? null }),
  });
  sui = new SuiJsonRpcClient({ url: stack.rpcUrl, network: "localnet" });
});

afterAll(async () => {
  await stack?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("local key servers with the unmodified Seal SDK", () => {
  it("persists one master key per server, 0600 in a 0700 directory", () => {
    const ksDir = join(dir, "keyservers");
    expect(statSync(ksDir).mode & 0o777).toBe(0o700);
    for (let i = 0; i < 3; i++) expect(statSync(join(ksDir, `keyserver-${i}.json`)).mode & 0o777).toBe(0o600);
  });

  it("encrypts 2-of-3 and the owner decrypts", async () => {
    const data = new TextEncoder().encode("owner's secret");
    const { encryptedObject } = await sealClient().encrypt({ threshold: 2, packageId: PKG, id: identity(A), data });
    const sk = await session(ownerA);
    const out = await sealClient().decrypt({ data: encryptedObject, sessionKey: sk, txBytes: await approveTx([identity(A)]) });
    expect(new TextDecoder().decode(out)).toBe("owner's secret");
  });

  it("a delegate of the owner's account decrypts, from an exported and re-imported session", async () => {
    const data = new TextEncoder().encode("shared with my agent");
    const { encryptedObject } = await sealClient().encrypt({ threshold: 2, packageId: PKG, id: identity(A, "aa"), data });
    const created = await session(delegateA);
    await created.getCertificate();
    const header = Buffer.from(JSON.stringify({ ...created.export() })).toString("base64");
    const imported = SessionKey.import(JSON.parse(Buffer.from(header, "base64").toString("utf8")), sui);
    const out = await sealClient().decrypt({ data: encryptedObject, sessionKey: imported, txBytes: await approveTx([identity(A, "aa")]) });
    expect(new TextDecoder().decode(out)).toBe("shared with my agent");
  });

  it("refuses a delegate of account A for owner B's identity (policy bound to the owner)", async () => {
    const { encryptedObject } = await sealClient().encrypt({ threshold: 2, packageId: PKG, id: identity(B), data: new Uint8Array([1, 2, 3]) });
    const sk = await session(delegateA);
    await expect(sealClient().decrypt({ data: encryptedObject, sessionKey: sk, txBytes: await approveTx([identity(B)]) })).rejects.toBeInstanceOf(
      NoAccessError,
    );
    // Mixing an allowed identity with a foreign one refuses the whole request.
    await expect(
      sealClient().fetchKeys({ ids: [identity(A), identity(B)], txBytes: await approveTx([identity(A), identity(B)]), sessionKey: sk, threshold: 2 }),
    ).rejects.toBeInstanceOf(NoAccessError);
    // And a stranger gets nothing at all.
    const sk2 = await session(stranger);
    await expect(sealClient().fetchKeys({ ids: [identity(B)], txBytes: await approveTx([identity(B)]), sessionKey: sk2, threshold: 2 })).rejects.toBeInstanceOf(
      NoAccessError,
    );
  });

  it("resolves a MemWal-shaped seal_approve(id, &account) PTB through the local RPC and serves it", async () => {
    const accountId = "0x" + "ac".repeat(32);
    stack.registry!.putObject(
      moveObject({
        objectId: accountId,
        type: `${PKG}::account::MemWalAccount`,
        contents: bcs.Address.serialize(accountId).toBytes(),
        owner: { kind: "Shared", initialSharedVersion: "3" },
      }),
    );
    const id = identity(A, "bb");
    const { encryptedObject } = await sealClient().encrypt({ threshold: 2, packageId: PKG, id, data: new Uint8Array([9, 9]) });
    const tx = new Transaction();
    tx.moveCall({ target: `${PKG}::account::seal_approve`, arguments: [tx.pure.vector("u8", Buffer.from(id, "hex")), tx.object(accountId)] });
    const txBytes = await tx.build({ client: sui, onlyTransactionKind: true }); // sui_getNormalizedMoveFunction + sui_multiGetObjects
    const out = await sealClient().decrypt({ data: encryptedObject, sessionKey: await session(ownerA), txBytes });
    expect([...out]).toEqual([9, 9]);
  });

  it("answers the proof-of-possession route and rejects a foreign service id", async () => {
    const ks = stack.cluster.servers[0]!;
    const ok = await fetch(`${ks.url}/v1/service?service_id=${ks.objectId}`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("x-keyserver-version")).toBeTruthy();
    expect(((await ok.json()) as { service_id: string }).service_id).toBe(ks.objectId);
    const bad = await fetch(`${ks.url}/v1/service?service_id=0x${"00".repeat(32)}`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toBe("InvalidServiceId");
  });
});

describe("fetch_key refusals on the wire", () => {
  async function body(sk: SessionKey, txBytes: Uint8Array, mutate?: (b: Record<string, unknown>) => void) {
    const cert = await sk.getCertificate();
    const req = await sk.createRequestParams(txBytes);
    const b: Record<string, unknown> = {
      ptb: toBase64(txBytes.slice(1)),
      enc_key: toBase64(req.encKeyPk),
      enc_verification_key: toBase64(req.encVerificationKey),
      request_signature: req.requestSignature,
      certificate: cert,
    };
    mutate?.(b);
    return b;
  }

  async function post(b: unknown): Promise<{ status: number; error: string }> {
    const r = await fetch(`${stack.cluster.servers[1]!.url}/v1/fetch_key`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(b) });
    return { status: r.status, error: ((await r.json()) as { error: string }).error };
  }

  it("accepts a well-formed request", async () => {
    const r = await fetch(`${stack.cluster.servers[1]!.url}/v1/fetch_key`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(await body(await session(ownerA), await approveTx([identity(A)]))),
    });
    expect(r.status).toBe(200);
    const j = (await r.json()) as { decryption_keys: { id: number[]; encrypted_key: string[] }[] };
    expect(j.decryption_keys).toHaveLength(1);
    expect(Buffer.from(j.decryption_keys[0]!.id).toString("hex")).toBe(PKG.slice(2) + identity(A));
  });

  it("refuses an expired certificate", async () => {
    const realNow = Date.now();
    vi.useFakeTimers({ toFake: ["Date"] });
    let b: Record<string, unknown>;
    try {
      vi.setSystemTime(realNow - 20 * 60_000);
      b = await body(await session(ownerA, 5), await approveTx([identity(A)]));
    } finally {
      vi.useRealTimers();
    }
    expect(await post(b)).toEqual({ status: 403, error: "InvalidCertificate" });
  });

  it("refuses a request signature that does not match the session key", async () => {
    const b = await body(await session(ownerA), await approveTx([identity(A)]), (x) => {
      const sig = Buffer.from(x.request_signature as string, "base64");
      sig[0]! ^= 1;
      x.request_signature = sig.toString("base64");
    });
    expect(await post(b)).toEqual({ status: 403, error: "InvalidSessionSignature" });
  });

  it("refuses a certificate that claims another user than the signer", async () => {
    const b = await body(await session(delegateA), await approveTx([identity(A)]), (x) => {
      (x.certificate as Record<string, unknown>).user = A; // signed by delegateA, claims to be owner A
    });
    expect(await post(b)).toEqual({ status: 403, error: "InvalidSignature" });
  });

  it("refuses PTBs for another package or other functions, and malformed bodies", async () => {
    const sk = await session(ownerA);
    expect(await post(await body(sk, await approveTx([identity(A)], OTHER_PKG)))).toEqual({ status: 403, error: "UnsupportedPackageId" });
    expect(await post(await body(sk, await approveTx([identity(A)], PKG, "transfer_all")))).toEqual({ status: 403, error: "InvalidPTB" });
    expect(await post(await body(sk, await approveTx(["01020304"])))).toEqual({ status: 403, error: "InvalidPTB" }); // no owner prefix
    expect((await post({ ptb: 42 })).status).toBe(400);
    const r = await fetch(`${stack.cluster.servers[1]!.url}/v1/fetch_key`, { method: "POST", body: "{not json" });
    expect(r.status).toBe(400);
  });
});

describe("local Sui JSON-RPC subset", () => {
  it("answers unknown methods and missing objects the JSON-RPC way", async () => {
    const call = async (method: string, params: unknown[]) =>
      (await (await fetch(stack.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })).json()) as {
        result?: unknown;
        error?: { code: number };
      };
    expect((await call("sui_executeTransactionBlock", [])).error?.code).toBe(-32601);
    expect(await call("sui_getObject", ["0x" + "12".repeat(32), {}])).toMatchObject({ result: { error: { code: "notExists" } } });
    expect((await call("sui_getObject", ["not-an-id", {}])).error?.code).toBe(-32602);
    const pkg = (await sui.core.getObject({ objectId: PKG })).object;
    expect(String(pkg.version)).toBe("1");
  });

  it("persists objects in its file-backed registry", async () => {
    const again = new MemoryObjectSource({ file: join(dir, "objects.jsonl") });
    expect(again.getObject(PKG)?.version).toBe("1");
    expect(again.getObject(stack.cluster.servers[0]!.objectId)).not.toBeNull();
  });
});

describe("publishing through the ledger's object registry", () => {
  // A stand-in with the ledger's stored shape: put_object records, dynamic fields by BCS name, each field also
  // stored as a 0x2::dynamic_field::Field object (id ‖ name ‖ value) at its derived id.
  class FakeLedger implements LedgerObjectReader {
    readonly objects = new Map<string, LedgerStoredObject>();
    readonly fields = new Map<string, { field_id: string }>();
    put(objectId: string, input: ReturnType<typeof keyServerLedgerInput>["input"]): void {
      const id = normalizeSuiAddress(objectId);
      this.objects.set(id, { object_id: id, type: input.type, version: input.version, owner: input.owner, fields: input.fields, bcs: input.bcs });
      for (const f of input.dynamicFields) {
        const nameBcs = fromBase64(f.name.bcs);
        const fieldId = deriveDynamicFieldID(id, TypeTagSerializer.parseFromStr(f.name.type, true), nameBcs);
        const contents = Buffer.concat([Buffer.from(fieldId.slice(2), "hex"), nameBcs, fromBase64(f.value_bcs)]);
        this.objects.set(fieldId, {
          object_id: fieldId,
          type: `0x2::dynamic_field::Field<${f.name.type}, ${f.value_type}>`,
          version: input.version,
          owner: { ObjectOwner: id },
          fields: { name: f.name.value, value: f.value },
          bcs: contents.toString("base64"),
        });
        this.fields.set(`${id}|${f.name.type}|${f.name.bcs}`, { field_id: fieldId });
      }
    }
    async getObject(objectId: string) {
      return this.objects.get(normalizeSuiAddress(objectId)) ?? null;
    }
    async getDynamicField(parentId: string, name: { type: string; bcs: string }) {
      return this.fields.get(`${normalizeSuiAddress(parentId)}|${name.type}|${name.bcs}`) ?? null;
    }
  }

  it("lets the unmodified SDK find key servers and the package through ledgerObjectSource", async () => {
    const ledger = new FakeLedger();
    for (const [i, ks] of stack.cluster.servers.entries()) {
      const { objectId, input } = keyServerLedgerInput({ objectId: ks.objectId, name: `ks-${i}`, url: ks.url, publicKey: ks.publicKey });
      ledger.put(objectId, input);
    }
    const rpc = await startChainRpcServer({ objects: ledgerObjectSource(ledger, { packageIds: [PKG] }) });
    try {
      const client = new SuiJsonRpcClient({ url: rpc.url, network: "localnet" });
      const seal = new SealClient({ suiClient: client, serverConfigs: stack.serverConfigs.map((s) => ({ ...s })), verifyKeyServers: true });
      const id = identity(A, "dd");
      const { encryptedObject } = await seal.encrypt({ threshold: 2, packageId: PKG, id, data: new Uint8Array([4, 2]) });
      const sk = await SessionKey.create({ address: A, packageId: PKG, ttlMin: 5, signer: ownerA, suiClient: client });
      const tx = new Transaction();
      tx.moveCall({ target: `${PKG}::account::seal_approve`, arguments: [tx.pure.vector("u8", Buffer.from(id, "hex"))] });
      const out = await seal.decrypt({ data: encryptedObject, sessionKey: sk, txBytes: await tx.build({ onlyTransactionKind: true }) });
      expect([...out]).toEqual([4, 2]);
      // The legacy by-name dynamic field read works too.
      const legacy = await client.getDynamicFieldObject({ parentId: stack.cluster.servers[0]!.objectId, name: { type: "u64", value: "2" } });
      expect(legacy.data?.objectId).toBeTruthy();
    } finally {
      await rpc.close();
    }
  });
});

describe("faults and restarts", () => {
  it("keeps object ids and master keys across a restart of the cluster", async () => {
    const other = await startKeyServerCluster({ dir: join(dir, "keyservers"), count: 3, packageIds: [PKG], isAuthorized: async () => false });
    try {
      expect(other.servers.map((s) => s.objectId)).toEqual(stack.cluster.servers.map((s) => s.objectId));
      expect(other.servers.map((s) => Buffer.from(s.publicKey).toString("hex"))).toEqual(
        stack.cluster.servers.map((s) => Buffer.from(s.publicKey).toString("hex")),
      );
    } finally {
      await other.close();
    }
  });

  it("still decrypts with one of three key servers down (2-of-3)", async () => {
    const data = new TextEncoder().encode("survives an outage");
    const { encryptedObject } = await sealClient().encrypt({ threshold: 2, packageId: PKG, id: identity(A, "cc"), data });
    await stack.cluster.stop(2);
    const sk = await session(ownerA);
    const client = new SealClient({ suiClient: sui, serverConfigs: stack.serverConfigs.map((s) => ({ ...s })) });
    const out = await client.decrypt({ data: encryptedObject, sessionKey: sk, txBytes: await approveTx([identity(A, "cc")]) });
    expect(new TextDecoder().decode(out)).toBe("survives an outage");
    // With two down the threshold cannot be met.
    await stack.cluster.stop(1);
    const client2 = new SealClient({ suiClient: sui, serverConfigs: stack.serverConfigs.map((s) => ({ ...s })) });
    await expect(client2.decrypt({ data: encryptedObject, sessionKey: sk, txBytes: await approveTx([identity(A, "cc")]) })).rejects.toThrow();
  });
});
