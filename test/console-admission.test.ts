// Uploads stream into storage while their admission checks (key state, bucket, role, grant, quota) run: a refused
// upload answers with the admission error, whatever the body did meanwhile, and leaves neither bytes in storage nor
// a claimed name behind.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes, randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { request } from "undici";
import { startConsoleTestStack, type ConsoleTestStack } from "./support/console-testkit.ts";
import { mintKey, signUp } from "../actors/console/directory.ts";
import { ConsoleApiError, ConsoleClient, multipartBody } from "../client/console-client.ts";
import { Admission } from "../gateway/console/admission.ts";
import { ByteChannel } from "../gateway/console/channel.ts";

let s: ConsoleTestStack;
const clients: ConsoleClient[] = [];
const MiB = 1024 * 1024;

beforeAll(async () => {
  s = await startConsoleTestStack({ limits: { uploadsPerMinute: 0 } });
}, 120_000);
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await s?.teardown();
});

async function user(storageCap?: number) {
  const u = await signUp(s.console.directory, { email: `${randomUUID()}@example.com`, storageCap });
  const rw = await mintKey(s.console.directory, { userId: u.user.user_id, role: "read_write" });
  const ro = await mintKey(s.console.directory, { userId: u.user.user_id, role: "read_only" });
  const c = new ConsoleClient(s.console.url, rw.secret);
  const r = new ConsoleClient(s.console.url, ro.secret);
  clients.push(c, r);
  const bucket = (await c.createPrivateBucket(u.space.space_id, `b-${randomUUID().slice(0, 8)}`, rw.service_key!.secret_key)).bucket_id;
  // the access index mirrors the grant
  await c.uploadWithRetry(bucket, () => ({ bytes: Buffer.from("warm"), filename: "warm" }), { everyMs: 20 });
  return { c, ro: r, rw, bucket, storageBucket: (await c.bucket(bucket)).storage_bucket_name as string };
}

/** Keys of the objects in a storage bucket. */
async function storedKeys(bucket: string): Promise<string[]> {
  const r = await request(`${s.storage.url}/api/v1/buckets/${bucket}/blobs?limit=100`, { headers: { authorization: `Bearer ${s.storage.apiKey}` } });
  const page = (await r.body.json()) as { data: { key: string }[] };
  return page.data.map((o) => o.key);
}

/** Waits until only `keys` remain (a refused upload's bytes are removed right after its answer). */
async function expectOnly(bucket: string, keys: string[]) {
  const deadline = Date.now() + 10_000;
  let now = await storedKeys(bucket);
  while (now.length !== keys.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    now = await storedKeys(bucket);
  }
  expect(now.sort()).toEqual([...keys].sort());
}

async function refused(p: Promise<unknown>, status: number, code: string) {
  const err = await p.then(() => undefined, (e) => e);
  expect(err).toBeInstanceOf(ConsoleApiError);
  expect({ status: err.status, code: err.code }).toEqual({ status, code });
}

describe("admission while the bytes stream", () => {
  it("another user's bucket: 403, nothing stored, the name stays free", async () => {
    const owner = await user();
    const other = await user();
    const kept = await storedKeys(owner.storageBucket);
    await refused(other.c.upload(owner.bucket, { bytes: randomBytes(4 * MiB), filename: "intruder.bin" }), 403, "bucket_not_in_scope");
    await expectOnly(owner.storageBucket, kept);
    const f = await owner.c.upload(owner.bucket, { bytes: Buffer.from("mine"), filename: "intruder.bin" });
    expect(f.name).toBe("intruder.bin");
  });

  it("a read-only key, declared or streamed length: 403, nothing stored, the name stays free", async () => {
    const u = await user();
    const kept = await storedKeys(u.storageBucket);
    await refused(u.ro.upload(u.bucket, { bytes: randomBytes(2 * MiB), filename: "ro.bin" }), 403, "read_only_api_key");
    const mp = multipartBody({ stream: Readable.from([randomBytes(MiB), randomBytes(MiB)]), filename: "ro.bin" });
    const res = await request(`${s.console.url}/api/v1/buckets/${u.bucket}/files`, { method: "POST", headers: { authorization: `Bearer ${u.ro.apiKey}`, "content-type": mp.contentType }, body: mp.body });
    expect(res.statusCode).toBe(403);
    expect(await res.body.json()).toMatchObject({ code: "read_only_api_key" });
    await expectOnly(u.storageBucket, kept);
    expect((await u.c.upload(u.bucket, { bytes: Buffer.from("ok"), filename: "ro.bin" })).name).toBe("ro.bin");
  });

  it("a bucket that does not exist: 404, not a storage error", async () => {
    const u = await user();
    await refused(u.c.upload(randomUUID(), { bytes: randomBytes(MiB), filename: "x.bin" }), 404, "not_found");
  });

  it("a quota the declared length exceeds: 422, nothing stored", async () => {
    const u = await user(3 * MiB);
    const kept = await storedKeys(u.storageBucket);
    await refused(u.c.upload(u.bucket, { bytes: randomBytes(4 * MiB), filename: "big.bin" }), 422, "quota_exceeded");
    await expectOnly(u.storageBucket, kept);
  });
});

describe("Admission", () => {
  const refusal = () => Object.assign(new Error("no"), { status: 403 });

  it("a refusal wins over the request's own failure; an admitted request keeps its error", async () => {
    let refuse!: (e: Error) => void;
    const a = new Admission(() => new Promise<void>((_, reject) => (refuse = reject)));
    const failing = a.first(() => Promise.reject(new Error("bad body")));
    refuse(refusal());
    await expect(failing).rejects.toThrow("no");
    const ok = new Admission(async () => "fine");
    await expect(ok.first(() => Promise.reject(new Error("bad body")))).rejects.toThrow("bad body");
    expect(await ok.first(() => 7)).toBe(7);
  });

  it("gate ends the bytes at a refusal without waiting for another chunk, and frees the producer", async () => {
    let refuse!: (e: Error) => void;
    const a = new Admission(() => new Promise<void>((_, reject) => (refuse = reject)));
    const ch = new ByteChannel(1 << 20);
    ch.push(Buffer.from("first"));
    const got: string[] = [];
    const consumer = (async () => {
      for await (const c of a.gate(ch)) got.push(String(c));
    })();
    await new Promise((r) => setTimeout(r, 5));
    refuse(refusal());
    await consumer; // no more chunks ever arrive: the refusal alone ends it
    expect(got).toEqual(["first"]);
    ch.push(Buffer.from("late"));
    await new Promise((r) => setTimeout(r, 0));
    expect(ch.push(Buffer.from("dropped"))).toBeUndefined();
    expect(a.throwIfRefused.bind(a)).toThrow("no");
  });

  it("refusedAfter waits for the work the refusal stops, then rejects; it never settles once admitted", async () => {
    let refuse!: (e: Error) => void;
    const a = new Admission(() => new Promise<void>((_, reject) => (refuse = reject)));
    let finished = false;
    const work = new Promise<void>((r) => setTimeout(() => ((finished = true), r()), 20));
    const r = a.refusedAfter(() => work);
    refuse(refusal());
    await expect(r).rejects.toThrow("no");
    expect(finished).toBe(true);
    const ok = new Admission(async () => undefined);
    const never = await Promise.race([ok.refusedAfter(() => undefined).then(() => "settled", () => "settled"), new Promise((res) => setTimeout(() => res("pending"), 20))]);
    expect(never).toBe("pending");
  });
});
