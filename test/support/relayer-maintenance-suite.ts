// The relayer maintenance suites (test/relayer-manual-forget.test.ts, test/relayer-restore.test.ts,
// test/relayer-account-exists.test.ts): black-box, over HTTP against the started stack (real NATS JetStream, Postgres
// with pgvector, chain ledger, key servers, blob store). Each file calls useRelayerMaintenanceSuite() and so gets one
// stack of its own, started before its tests and torn down after them; `t` follows that file's stack. Plus the
// users, signed requests and waits those files share.
import { afterAll, beforeAll, expect } from "vitest";
import { request } from "undici";
import { startTestStack, type TestStack } from "./stack.ts";
import type { MemrelayClient } from "../../client/memrelay-client.ts";
import type { DevIdentity } from "../../runtime/local-stack.ts";
import { createDelegateSession } from "../../adapters/encryption/session.ts";
import { IndexLog } from "../../projections/relayer/index-log.ts";

export let t: TestStack;
const ENV = { MEMRELAY_RESTORE_CANDIDATE_CAP: "6", ACCOUNT_EXISTS_GLOBAL_PER_MINUTE: "60" };
export const ORIGIN = "https://app.example";

/** Starts this file's stack before its tests and tears it down after them. */
export function useRelayerMaintenanceSuite(): void {
  beforeAll(async () => {
    // Settings these routes read from the process environment (the spec's variables go through startTestStack too).
    Object.assign(process.env, ENV);
    t = await startTestStack({ TRUSTED_PROXY_HOPS: "1", CORS_ALLOWED_ORIGINS: ORIGIN });
  }, 120_000);
  afterAll(async () => {
    await t?.teardown();
    for (const k of Object.keys(ENV)) delete process.env[k];
  });
}

export interface User {
  readonly id: DevIdentity;
  readonly client: MemrelayClient;
  readonly session: string;
}

export async function newUser(): Promise<User> {
  const id = await t.stack.createIdentity();
  const client = await t.client(id);
  const s = await createDelegateSession({ delegateSecretKey: id.delegateSecretKey, packageId: t.stack.encryptionStack.packageId, rpcUrl: t.stack.encryptionStack.rpcUrl });
  return { id, client, session: s.header };
}

export interface Res { status: number; headers: Record<string, string | string[] | undefined>; body: any }

/** A signed POST that reports any status (raw body string, so malformed payloads can be sent). */
export async function post(u: User, path: string, payload: unknown, opts: { session?: boolean } = {}): Promise<Res> {
  const raw = typeof payload === "string" ? payload : JSON.stringify(payload);
  const headers: Record<string, string> = { ...u.client.signer.headers("POST", path, raw), "content-type": "application/json" };
  if (opts.session) headers["x-encryption-session"] = u.session;
  const res = await request(t.stack.relayerUrl + path, { method: "POST", headers, body: raw || undefined });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

export async function ok(u: User, path: string, payload: unknown, opts: { session?: boolean } = {}): Promise<any> {
  const r = await post(u, path, payload, opts);
  if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

export async function remember(u: User, texts: string[], namespace: string): Promise<void> {
  for (const text of texts) {
    // One at a time, so chain creation order (newest first on restore) follows the list.
    const a = await u.client.remember(text, namespace);
    expect((await u.client.waitForJob(a.job_id)).status).toBe("done");
  }
}

export const dims = () => t.stack.embedder.dims;
export function unitVector(seed = Math.random()): number[] {
  const v = Array.from({ length: dims() }, (_, i) => Math.sin(seed * 1000 + i * 12.9898));
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}
export const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

/** Waits until the memory index has applied every event so far (a job reported done may still be on its way to it). */
export async function settled(): Promise<void> {
  const index = new IndexLog(t.stack.log, t.stack.db);
  expect(await index.waitApplied(await index.lastIndexSeq(), 10_000)).toBe(true);
}
