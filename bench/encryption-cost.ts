// Cost of encryption per memory: raw Seal (unmodified SDK, 2-of-3 local key servers, same process) versus the
// envelope port (one Seal-encrypted data key per owner/namespace/epoch, AES-256-GCM per memory).
//   node --import tsx bench/encryption-cost.ts [--json]
// Numbers are wall-clock on this machine; key servers run in-process, so their CPU is included (as in local mode).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { SealClient, SessionKey } from "@mysten/seal";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { Transaction } from "@mysten/sui/transactions";
import { EnvelopeEncryption } from "../adapters/encryption/envelope.ts";
import { createDelegateSession } from "../adapters/encryption/session.ts";
import { startLocalEncryptionStack } from "../adapters/encryption/local-keyservers/local-stack.ts";

export interface CostRow {
  readonly name: string;
  readonly n: number;
  readonly unit: "per call" | "per memory";
  readonly meanMs: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
}

function summarize(name: string, unit: CostRow["unit"], samples: number[]): CostRow {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { name, n: s.length, unit, meanMs: s.reduce((a, b) => a + b, 0) / s.length, p50Ms: q(0.5), p95Ms: q(0.95) };
}

async function time<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t = performance.now();
  const v = await fn();
  return [performance.now() - t, v];
}

export async function runEncryptionCostBench(opts: { sealCalls?: number; memories?: number; batch?: number } = {}): Promise<CostRow[]> {
  const sealCalls = opts.sealCalls ?? 10;
  const memories = opts.memories ?? 5000;
  const batch = opts.batch ?? 100;
  const PKG = "0x" + "be".repeat(32);
  const owner = Ed25519Keypair.generate();
  const A = owner.toSuiAddress();
  const dir = mkdtempSync(join(tmpdir(), "memrelay-bench-enc-"));
  const stack = await startLocalEncryptionStack({ dir, packageId: PKG, isAuthorized: async (o, u) => o === u });
  const rows: CostRow[] = [];
  try {
    const sui = new SuiJsonRpcClient({ url: stack.rpcUrl, network: "localnet" });
    const configs = stack.serverConfigs.map((s) => ({ ...s }));
    const memory = new TextEncoder().encode("User prefers window seats and vegetarian meals on long-haul flights; allergic to peanuts.".repeat(2));

    // --- raw Seal, per call
    const seal = new SealClient({ suiClient: sui, serverConfigs: configs, verifyKeyServers: true });
    await seal.encrypt({ threshold: 2, packageId: PKG, id: A.slice(2) + "00", data: memory }); // load + verify key servers once
    const sealed: { id: string; bytes: Uint8Array }[] = [];
    const encS: number[] = [];
    for (let i = 0; i < sealCalls; i++) {
      const id = A.slice(2) + i.toString(16).padStart(4, "0");
      const [ms, r] = await time(() => seal.encrypt({ threshold: 2, packageId: PKG, id, data: memory }));
      encS.push(ms);
      sealed.push({ id, bytes: r.encryptedObject });
    }
    rows.push(summarize("Seal encrypt (SealClient.encrypt, 2-of-3, warm client)", "per call", encS));

    const session = await SessionKey.create({ address: A, packageId: PKG, ttlMin: 10, signer: owner, suiClient: sui });
    await session.getCertificate();
    const decFull: number[] = [];
    const decCached: number[] = [];
    for (const { id, bytes } of sealed) {
      const tx = new Transaction();
      tx.moveCall({ target: `${PKG}::account::seal_approve`, arguments: [tx.pure.vector("u8", Buffer.from(id, "hex"))] });
      const txBytes = await tx.build({ onlyTransactionKind: true });
      const client = new SealClient({ suiClient: sui, serverConfigs: configs });
      await client.getKeyServers(); // exclude the per-client key-server object reads
      const [full] = await time(() => client.decrypt({ data: bytes, sessionKey: session, txBytes }));
      const [cached] = await time(() => client.decrypt({ data: bytes, sessionKey: session, txBytes }));
      decFull.push(full);
      decCached.push(cached);
    }
    rows.push(summarize("Seal decrypt (fetch_key t-of-n + key checks + decrypt)", "per call", decFull));
    rows.push(summarize("Seal decrypt with keys already fetched", "per call", decCached));

    // --- client session creation (x-encryption-session)
    const sess: number[] = [];
    for (let i = 0; i < 5; i++) {
      const [ms] = await time(() => createDelegateSession({ delegateSecretKey: owner.getSecretKey(), packageId: PKG, rpcUrl: stack.rpcUrl }));
      sess.push(ms);
    }
    rows.push(summarize("createDelegateSession (SessionKey.create + sign + export)", "per call", sess));

    // --- envelope
    const port = new EnvelopeEncryption({ packageId: PKG, rpcUrl: stack.rpcUrl, serverConfigs: configs, threshold: 2 });
    const mint: number[] = [];
    for (let i = 0; i < 5; i++) {
      const [ms] = await time(() => port.encrypt(A, `mint-${i}`, memory));
      mint.push(ms);
    }
    rows.push(summarize("envelope encrypt, first memory of a namespace (mints + Seal-encrypts the data key)", "per call", mint));
    const blobs: Uint8Array[] = [];
    const t0 = performance.now();
    for (let i = 0; i < memories; i++) blobs.push(await port.encrypt(A, "default", memory));
    const encMs = (performance.now() - t0) / memories;
    rows.push({ name: `envelope encrypt, warm data key (${memory.length} B memory)`, n: memories, unit: "per memory", meanMs: encMs, p50Ms: encMs, p95Ms: encMs });

    const coldPer: number[] = [];
    const warmPer: number[] = [];
    for (let round = 0; round < 5; round++) {
      const cred = { kind: "session" as const, exported: (await createDelegateSession({ delegateSecretKey: owner.getSecretKey(), packageId: PKG, rpcUrl: stack.rpcUrl })).header };
      const slice = blobs.slice(round * batch, round * batch + batch);
      const [cold, out] = await time(() => port.decryptMany(A, slice, cred));
      if (out.some((o) => o === null)) throw new Error("bench: decrypt failed");
      const [warm] = await time(() => port.decryptMany(A, slice, cred));
      coldPer.push(cold / slice.length);
      warmPer.push(warm / slice.length);
    }
    rows.push(summarize(`envelope decryptMany, new session (one Seal unlock per batch of ${batch})`, "per memory", coldPer));
    rows.push(summarize(`envelope decryptMany, session's data key cached (batch of ${batch})`, "per memory", warmPer));
    port.close();
  } finally {
    await stack.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

export function formatRows(rows: readonly CostRow[]): string {
  const f = (x: number) => (x >= 10 ? x.toFixed(0) : x >= 1 ? x.toFixed(1) : x.toFixed(3));
  return [
    "| measurement | n | unit | mean ms | p50 ms | p95 ms |",
    "|---|---:|---|---:|---:|---:|",
    ...rows.map((r) => `| ${r.name} | ${r.n} | ${r.unit} | ${f(r.meanMs)} | ${f(r.p50Ms)} | ${f(r.p95Ms)} |`),
  ].join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const rows = await runEncryptionCostBench();
  console.log(process.argv.includes("--json") ? JSON.stringify(rows, null, 2) : formatRows(rows));
}
