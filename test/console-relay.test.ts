// The upload relay's recycled receive buffers: a slab is reused only once every holder let go, and bytes relayed
// through the listener arrive intact while slabs cycle between concurrent uploads.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { startConsoleTestStack, type ConsoleTestStack } from "./support/console-testkit.ts";
import { mintKey, signUp } from "../actors/console/directory.ts";
import { ConsoleClient } from "../client/console-client.ts";
import { bodyBuffers } from "../gateway/recycled-buffers.ts";
import { parseMultipart } from "../gateway/console/multipart.ts";
import { BlobStoreStorage, storageBucketName } from "../adapters/file-storage/blobstore-http.ts";

const KiB = 1024;
const MiB = 1024 * KiB;

describe("recycled body buffers (holders counted)", () => {
  const chunk = (n: number, fill: number) => new Uint8Array(n).fill(fill).buffer;

  it("reuses a slab only after its last holder released it", () => {
    const slabs = bodyBuffers();
    const a = slabs.copy(chunk(100 * KiB, 1));
    expect(a.length).toBe(100 * KiB);
    const view = a.subarray(10, 20);
    slabs.retain(view); // a consumer holds part of it
    slabs.release(a); // the parser lets go
    const b = slabs.copy(chunk(100 * KiB, 2));
    expect(b.buffer).not.toBe(a.buffer);
    expect(view.every((x) => x === 1)).toBe(true);
    slabs.release(view);
    slabs.release(view); // a second release of a free slab changes nothing
    const c = slabs.copy(chunk(80 * KiB, 3));
    expect(c.buffer).toBe(a.buffer);
    const d = slabs.copy(chunk(80 * KiB, 4));
    expect(d.buffer).not.toBe(a.buffer);
  });

  it("small and oversized chunks are plain copies, never pooled", () => {
    const slabs = bodyBuffers();
    const small = slabs.copy(chunk(1000, 7));
    slabs.release(small);
    const next = slabs.copy(chunk(100 * KiB, 8));
    expect(next.buffer).not.toBe(small.buffer);
    expect(small.every((x) => x === 7)).toBe(true);
  });
});

describe("the multipart parser on recycled chunks", () => {
  it("holds each chunk while parsing it, copies what it keeps longer, and every slab comes back once the file data is released", async () => {
    const slabs = bodyBuffers();
    const boundary = "relay-boundary";
    const delimiter = Buffer.from(`\r\n--${boundary}`);
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nthe name\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\n\r\n`);
    const payload = randomBytes(MiB + 12_345);
    const piece = 100 * KiB;
    // partial delimiters right at chunk ends: the parser carries them over to the next chunk
    for (const [k, end] of [3, 5, 8].entries()) delimiter.copy(payload, end * piece - head.length - (k + 2), 0, k + 2);
    const body = Buffer.concat([head, payload, Buffer.from(`\r\n--${boundary}--\r\n`)]);
    // copied as uWS delivers them, so a slab given back too early would be overwritten by a later chunk while the
    // slow consumer below still has to read it
    const slabSet = new Set<ArrayBufferLike>();
    async function* source() {
      for (let i = 0; i < body.length; i += piece) {
        const c = slabs.copy(Uint8Array.prototype.slice.call(body, i, i + piece).buffer as ArrayBuffer);
        if (c.length >= 64 * KiB) slabSet.add(c.buffer);
        yield c;
      }
    }
    const got: Buffer[] = [];
    const fields: Record<string, string> = {};
    await parseMultipart(source(), boundary, { fileBytes: 1 << 30, fieldBytes: 1024, fields: 8, headerBytes: 1024 }, {
      onField: (n, v) => (fields[n] = v),
      onFile: async (_info, data) => {
        for await (const c of data) {
          await new Promise((r) => setImmediate(r));
          got.push(Buffer.from(c)); // "written"
          slabs.release(c);
        }
      },
    }, slabs);
    expect(fields).toEqual({ name: "the name" });
    expect(Buffer.concat(got).equals(payload)).toBe(true);
    const reused = Array.from({ length: slabSet.size }, () => slabs.copy(new ArrayBuffer(100 * KiB)).buffer);
    expect(reused.every((b) => slabSet.has(b))).toBe(true);
  });
});

describe("the storage client's stat", () => {
  it("reads the object's headers over one kept-alive connection (undici would close it after every HEAD); 404 is null, other statuses fail", async () => {
    let connections = 0;
    const server = createServer((req, res) => {
      const known = req.url === "/api/v1/buckets/b/blobs/k%2F1";
      if (req.method !== "HEAD" || (!known && !req.url!.endsWith("/missing") && !req.url!.endsWith("/broken"))) res.writeHead(400).end();
      else if (known) res.writeHead(200, { "content-length": "1234", "x-blob-id": "blob-1", etag: `"${"a".repeat(32)}"` }).end();
      else res.writeHead(req.url!.endsWith("/missing") ? 404 : 500).end();
    });
    server.on("connection", () => connections++);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const storage = new BlobStoreStorage({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: "k" });
    try {
      for (let i = 0; i < 10; i++) expect(await storage.stat("b", "k/1")).toEqual({ key: "k/1", blob_id: "blob-1", size: 1234, md5: "a".repeat(32) });
      expect(await storage.stat("b", "missing")).toBeNull();
      await expect(storage.stat("b", "broken")).rejects.toMatchObject({ status: 500, transient: true });
      // (a request may go out moments before the previous one's socket is free again: a second one is opened)
      expect(connections).toBeLessThanOrEqual(3);
    } finally {
      await storage.close();
      server.close();
    }
  });
});

describe("bytes through the listener", () => {
  let s: ConsoleTestStack;
  let c: ConsoleClient;
  let bucket: string;

  beforeAll(async () => {
    s = await startConsoleTestStack({ limits: { uploadsPerMinute: 0 } });
    const u = await signUp(s.console.directory, { email: `${randomUUID()}@example.com`, tier: "enterprise" });
    const rw = await mintKey(s.console.directory, { userId: u.user.user_id, role: "read_write" });
    c = new ConsoleClient(s.console.url, rw.secret);
    bucket = (await c.createPrivateBucket(u.space.space_id, "relay", rw.service_key!.secret_key)).bucket_id;
    await c.uploadWithRetry(bucket, () => ({ bytes: Buffer.from("warm"), filename: "warm" }), { everyMs: 20 });
  }, 120_000);
  afterAll(async () => {
    await c?.close().catch(() => undefined);
    await s?.teardown();
  });

  it("the storage client's stat (an upload job's check) reads an object's size, blob id and MD5 as its write answered them; null when absent", async () => {
    const storage = new BlobStoreStorage(s.storage);
    try {
      const name = storageBucketName(randomUUID());
      await storage.ensureBucket(name);
      const bytes = randomBytes(300_000);
      const put = await storage.put(name, "k/1 é", Readable.from([bytes]), "application/octet-stream");
      expect(put).toMatchObject({ key: "k/1 é", size: bytes.length, md5: createHash("md5").update(bytes).digest("hex") });
      expect(await storage.stat(name, "k/1 é")).toEqual(put);
      expect(await storage.stat(name, "k/1")).toBeNull();
      expect(await storage.stat(storageBucketName(randomUUID()), "k/1 é")).toBeNull();
      await storage.remove(name, "k/1 é");
      expect(await storage.stat(name, "k/1 é")).toBeNull();
    } finally {
      await storage.close();
    }
  });

  it("concurrent uploads of several MiB arrive byte for byte and are accounted for", async () => {
    const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
    let bytes = 4; // the warm-up file
    for (let round = 0; round < 3; round++) {
      const files = Array.from({ length: 4 }, (_, i) => randomBytes(2 * MiB + round * 333_333 + i * 77_777));
      const accepted = await Promise.all(files.map((bytes, i) => c.upload(bucket, { bytes, filename: `r${round}-${i}.bin`, metadata: { i } })));
      for (const [i, a] of accepted.entries()) {
        expect(a.size).toBe(files[i].length);
        await c.waitForUpload(bucket, a.id);
        const got = (await c.download(bucket, a.id)).raw as Buffer;
        expect(got.length).toBe(files[i].length);
        expect(sha(got)).toBe(sha(files[i]));
        bytes += files[i].length;
      }
    }
    // the read model's storage accounting (folded into the file statements of each batch) adds up
    expect(await c.bucket(bucket)).toMatchObject({ file_count: 13, storage_used: bytes });
    expect((await c.spaces())[0].storage_used).toBe(bytes);
  }, 120_000);
});
