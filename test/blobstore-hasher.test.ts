// Off-thread body hashing (adapters/blob-bytes/hasher.ts): the digests equal node:crypto's for every size and chunking, also
// with many bodies sharing one worker's slots; an aborted body gives its slots back; the fs backend stores the same
// ids and MD5s whether it hashes in place or on workers.
import { afterAll, describe, expect, it } from "vitest";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Hasher, defaultHashThreads } from "../adapters/blob-bytes/hasher.ts";
import { FsBlobBackend, blobIdOf } from "../adapters/blob-bytes/backend.ts";
import { HttpError } from "../gateway/http.ts";

const MiB = 1024 * 1024;

async function digestOf(h: Hasher, bytes: Buffer, piece: number) {
  const job = h.start();
  for (let i = 0; i < bytes.length; i += piece) await job.update(bytes.subarray(i, i + piece));
  return job.digest();
}

const expected = (b: Buffer) => ({ sha256: createHash("sha256").update(b).digest(), md5: createHash("md5").update(b).digest("hex") });

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("Hasher", () => {
  it("matches node:crypto in place and on one or two workers, across the in-place threshold and slot sizes", async () => {
    for (const threads of [0, 1, 2]) {
      const h = new Hasher(threads);
      for (const size of [0, 1, 64 * 1024, 64 * 1024 + 1, 256 * 1024 + 7, MiB, 5 * MiB + 123]) {
        const bytes = randomBytes(size);
        for (const piece of [1000, 64 * 1024, 300 * 1024, 8 * MiB]) {
          if (size > MiB && piece === 1000) continue;
          expect(await digestOf(h, bytes, piece), `threads ${threads}, size ${size}, pieces of ${piece}`).toEqual(expected(bytes));
        }
      }
    }
  });

  it("keeps concurrent bodies apart when they share a worker's slots", async () => {
    const h = new Hasher(1);
    const bodies = Array.from({ length: 24 }, (_, i) => randomBytes(MiB + i * 4099));
    const got = await Promise.all(bodies.map((b, i) => digestOf(h, b, 100_000 + i * 7919)));
    got.forEach((d, i) => expect(d).toEqual(expected(bodies[i])));
  });

  it("gives an aborted body's slots back (a later body larger than all slots together still finishes)", async () => {
    const h = new Hasher(1);
    for (let i = 0; i < 5; i++) {
      const job = h.start();
      await job.update(randomBytes(3 * MiB));
      job.abort();
    }
    const big = randomBytes(9 * MiB);
    expect(await digestOf(h, big, MiB)).toEqual(expected(big));
  });

  it("takes BLOBSTORE_HASH_THREADS, else every core but one", () => {
    expect(defaultHashThreads({ BLOBSTORE_HASH_THREADS: "0" })).toBe(0);
    expect(defaultHashThreads({ BLOBSTORE_HASH_THREADS: "3" })).toBe(3);
    expect(defaultHashThreads({})).toBeGreaterThanOrEqual(0);
    expect(() => defaultHashThreads({ BLOBSTORE_HASH_THREADS: "-1" })).toThrow(/BLOBSTORE_HASH_THREADS/);
    expect(() => defaultHashThreads({ BLOBSTORE_HASH_THREADS: "two" })).toThrow(/BLOBSTORE_HASH_THREADS/);
  });
});

describe("FsBlobBackend with off-thread hashing", () => {
  it("stores the same ids and MD5s as hashing in place, and leaves nothing behind past the limit", async () => {
    const root = mkdtempSync(join(tmpdir(), "bs-hash-"));
    dirs.push(root);
    const inPlace = new FsBlobBackend(join(root, "a"), { hashThreads: 0 });
    const offThread = new FsBlobBackend(join(root, "b"), { hashThreads: 1 });
    async function* pieces(b: Buffer) {
      for (let i = 0; i < b.length; i += 200_000) yield b.subarray(i, i + 200_000);
    }
    for (const size of [10, 70 * 1024, 3 * MiB]) {
      const bytes = randomBytes(size);
      const a = await inPlace.put(pieces(bytes));
      const b = await offThread.put(pieces(bytes));
      expect(b).toEqual(a);
      expect(b.blobId).toBe(blobIdOf(bytes));
      expect(b.md5).toBe(createHash("md5").update(bytes).digest("hex"));
    }
    await expect(offThread.put(pieces(randomBytes(3 * MiB)), { maxBytes: 2 * MiB })).rejects.toBeInstanceOf(HttpError);
    expect(readdirSync(join(root, "b", "tmp"))).toEqual([]);
    const again = randomBytes(2 * MiB);
    expect((await offThread.put(pieces(again))).blobId).toBe(blobIdOf(again));
  });
});
