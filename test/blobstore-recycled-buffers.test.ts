// Recycled buffers (gateway/recycled-buffers.ts): a released slab is reused for the next copy or read, only lent
// slabs come back (once); the fs backend releases a body chunk only after its bytes are written — a chunk overwritten
// the moment it is released leaves the stored blob intact, for buffered, streamed and deduplicated puts — and reads
// whole blobs into the buffer it is given.
import { afterAll, describe, expect, it } from "vitest";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RecycledBuffers, bodyBuffers, readBuffers } from "../gateway/recycled-buffers.ts";
import { FsBlobBackend } from "../adapters/blob-bytes/backend.ts";

const KiB = 1024;
const arrayBufferOf = (b: Buffer) => b.buffer.slice(b.byteOffset, b.byteOffset + b.length) as ArrayBuffer;

describe("RecycledBuffers", () => {
  it("copies chunks, recycles released slabs and ignores foreign or repeated releases", () => {
    const bb = bodyBuffers();
    const small = randomBytes(10 * KiB);
    const a = bb.copy(arrayBufferOf(small));
    expect(a.equals(small)).toBe(true);

    const big = randomBytes(300 * KiB);
    const b = bb.copy(arrayBufferOf(big));
    expect(b.equals(big)).toBe(true);
    bb.release(b);
    bb.release(b); // a second release must not put the slab in the free list twice
    bb.release(a); // not a slab
    bb.release(randomBytes(512 * KiB));
    const next = randomBytes(200 * KiB);
    const c = bb.copy(arrayBufferOf(next));
    expect(c.buffer).toBe(b.buffer); // the released slab
    expect(c.equals(next)).toBe(true);
    const d = bb.copy(arrayBufferOf(next));
    expect(d.buffer).not.toBe(c.buffer); // lent once only
  });

  it("keeps at most maxFree idle slabs", () => {
    const rb = new RecycledBuffers(1024, 16, 2);
    const lent = [rb.take(100), rb.take(100), rb.take(100)];
    lent.forEach(rb.release);
    const again = [rb.take(100), rb.take(100), rb.take(100)].map((b) => b.buffer);
    expect(lent.filter((b) => again.includes(b.buffer))).toHaveLength(2);
  });
});

describe("FsBlobBackend release", () => {
  const root = mkdtempSync(join(tmpdir(), "bs-release-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("releases every chunk only after its bytes are written (buffered, streamed, deduplicated)", async () => {
    for (const hashThreads of [0, 1]) {
      const be = new FsBlobBackend(join(root, `t${hashThreads}`), { hashThreads });
      for (const size of [200 * KiB, 900 * KiB, 5 * 1024 * KiB]) {
        const bytes = randomBytes(size);
        for (let round = 0; round < 2; round++) {
          const chunks: Buffer[] = [];
          for (let i = 0; i < size; i += 128 * KiB) chunks.push(Buffer.from(bytes.subarray(i, i + 128 * KiB)));
          const released = new Set<Uint8Array>();
          const put = await be.put(
            (async function* () {
              yield* chunks;
            })(),
            {
              release: (c) => {
                released.add(c);
                c.fill(0); // what reuse by the next request would do
              },
            },
          );
          expect(put.deduplicated).toBe(round === 1);
          expect(put.md5).toBe(createHash("md5").update(bytes).digest("hex"));
          expect(released.size).toBe(chunks.length);
          expect(readFileSync(be.pathOf(put.blobId)).equals(bytes)).toBe(true);
        }
      }
    }
  });

  it("reads whole blobs into the given buffers, a range too", async () => {
    const be = new FsBlobBackend(join(root, "reads"));
    const reads = readBuffers();
    const bytes = randomBytes(700 * KiB);
    const { blobId } = await be.put(bytes);
    const first = await be.open(blobId, undefined, { inlineBelow: 1024 * KiB, alloc: reads.take });
    expect(first!.bytes!.equals(bytes)).toBe(true);
    const slab = first!.bytes!.buffer;
    reads.release(first!.bytes!);
    const part = await be.open(blobId, { start: 100 * KiB, end: 400 * KiB - 1 }, { inlineBelow: 1024 * KiB, alloc: reads.take });
    expect(part!.bytes!.buffer).toBe(slab);
    expect(part!.bytes!.equals(bytes.subarray(100 * KiB, 400 * KiB))).toBe(true);
  });
});
