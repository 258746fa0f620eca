// The fs backend's synchronous path for small buffered bodies (adapters/blob-bytes/backend.ts, `storeSmall`): it
// stores the bytes under their id, deduplicates identical bytes by refreshing the stored file's mtime (what a running
// sweep's grace period looks at), and leaves no temp file behind when a step fails; with fsync on, small bodies take
// the asynchronous path and behave the same.
import { afterAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { FsBlobBackend, blobIdOf } from "../adapters/blob-bytes/backend.ts";

const root = mkdtempSync(join(tmpdir(), "bs-small-put-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const chunksOf = (b: Buffer, piece: number) =>
  (async function* () {
    for (let i = 0; i < b.length; i += piece) yield b.subarray(i, i + piece);
  })();

describe("FsBlobBackend small puts", () => {
  for (const fsync of [false, true]) {
    it(`stores, then deduplicates identical bytes and refreshes their mtime (fsync ${fsync})`, async () => {
      const be = new FsBlobBackend(join(root, `dedup-${fsync}`), { fsync, hashThreads: 0 });
      for (const size of [0, 700, 64 * 1024]) {
        const bytes = randomBytes(size);
        const first = await be.put(chunksOf(bytes, 300));
        expect(first).toMatchObject({ blobId: blobIdOf(bytes), size, deduplicated: false });
        const path = be.pathOf(first.blobId);
        expect(readFileSync(path).equals(bytes)).toBe(true);

        const past = new Date(Date.now() - 3_600_000);
        utimesSync(path, past, past);
        const again = await be.put(bytes);
        expect(again).toEqual({ ...first, deduplicated: true });
        expect(Date.now() - statSync(path).mtimeMs).toBeLessThan(60_000);
        expect(readFileSync(path).equals(bytes)).toBe(true);
      }
      expect(readdirSync(join(be.root, "tmp"))).toEqual([]);
    });
  }

  it("leaves no temp file when a step fails, and stores the bytes on a later try", async () => {
    const be = new FsBlobBackend(join(root, "failing"), { hashThreads: 0 });
    const bytes = randomBytes(900);
    const { blobId } = await be.put(bytes);
    // Its shard directory removed behind the backend's back (which made it once and does not look again): the
    // rename into place fails after the temp file was written.
    const shard = dirname(be.pathOf(blobId));
    rmSync(shard, { recursive: true });
    await expect(be.put(bytes)).rejects.toMatchObject({ code: "ENOENT" });
    expect(readdirSync(join(be.root, "tmp"))).toEqual([]);

    const fresh = new FsBlobBackend(be.root, { hashThreads: 0 });
    expect(await fresh.put(bytes)).toMatchObject({ blobId, deduplicated: false });
    expect(readFileSync(be.pathOf(blobId)).equals(bytes)).toBe(true);
    expect(readdirSync(join(be.root, "tmp"))).toEqual([]);
  });
});
