// The console API suites (test/console-api-*.test.ts: the console's behaviour and every error row of
// spec/console.md, over HTTP against a console on its real backbone: NATS JetStream, Postgres, the local ledger, the
// blob store). Each file calls useConsoleApiSuite() and so gets one stack of its own, started before its tests and
// torn down after them; `s` follows that file's stack. Each test makes its own users, spaces and buckets with the
// helpers below.
import { afterAll, beforeAll, expect } from "vitest";
import { randomUUID } from "node:crypto";
import { startConsoleTestStack, type ConsoleTestStack } from "./console-testkit.ts";
import { mintKey, signUp, type MintedKey } from "../../actors/console/directory.ts";
import { ConsoleApiError, ConsoleClient } from "../../client/console-client.ts";

export let s: ConsoleTestStack;
/** Closed after the file's tests, before the stack goes. */
export const cleanups: (() => Promise<void>)[] = [];
export const MiB = 1024 * 1024;

const TIERS = {
  free: { buckets: 20, users: 5, storage: 1024 * MiB },
  tiny: { buckets: 1, users: 2, storage: 1_000 },
};

/** Starts this file's console stack before its tests and tears it down after them. */
export function useConsoleApiSuite(): void {
  beforeAll(async () => {
    s = await startConsoleTestStack({ limits: { uploadsPerMinute: 30, uploadStatusRetentionMs: 1_500, sponsorTtlMs: 1_500, tiers: TIERS } });
  }, 120_000);
  afterAll(async () => {
    for (const c of cleanups) await c().catch(() => undefined);
    await s?.teardown();
  });
}

export interface User {
  userId: string;
  spaceId: string;
  rw: MintedKey;
  c: ConsoleClient;
}

export async function user(opts: { tier?: string; storageCap?: number } = {}): Promise<User> {
  const dir = s.console.directory;
  const u = await signUp(dir, { email: `${randomUUID()}@example.com`, tier: opts.tier, storageCap: opts.storageCap });
  const rw = await mintKey(dir, { userId: u.user.user_id, role: "read_write" });
  const c = new ConsoleClient(s.console.url, rw.secret);
  cleanups.push(() => c.close());
  return { userId: u.user.user_id, spaceId: u.space.space_id, rw, c };
}

export async function privateBucket(u: User, name = `b-${randomUUID().slice(0, 8)}`, spaceId = u.spaceId) {
  const f = await u.c.createPrivateBucket(spaceId, name, u.rw.service_key!.secret_key);
  return f.bucket_id;
}

export async function uploadOk(u: User, bucketId: string, input: Parameters<ConsoleClient["upload"]>[1]) {
  const accepted = await u.c.uploadWithRetry(bucketId, () => input, { everyMs: 20 });
  return u.c.waitForUpload(bucketId, accepted.id);
}

export async function expectError(p: Promise<unknown>, status: number, code?: string) {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ConsoleApiError);
    const e = err as ConsoleApiError;
    expect({ status: e.status, code: e.code }).toEqual({ status, code: code ?? e.code });
    expect(typeof e.body.error).toBe("string");
    return e;
  }
  throw new Error(`expected ${status} ${code ?? ""}`);
}
