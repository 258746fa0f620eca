// The JetStream object-store backend against a real nats-server: content addressing while streaming, dedup of
// identical bytes (also under concurrency), ranges (whole chunks skipped), the size limit mid-stream (nothing left
// behind), deletion with the grace period, listing, and interoperability with the @nats-io/obj client.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash, randomBytes } from "node:crypto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { JetStreamBlobBackend } from "../adapters/blob-bytes/object-store-backend.ts";
import { decodeSeqs, encodeSeqs } from "../adapters/blob-bytes/object-store-layout.ts";
import { blobIdOf } from "../adapters/blob-bytes/backend.ts";
import { HttpError } from "../gateway/http.ts";

let nats: NatsServerHandle;
let nc: NatsConnection;
let be: JetStreamBlobBackend;
const CHUNK = 64 * 1024;

async function readAll(o: { bytes?: Buffer; stream?: AsyncIterable<Buffer> } | null): Promise<Buffer> {
  if (!o) throw new Error("missing");
  if (o.bytes) return o.bytes;
  const parts: Buffer[] = [];
  for await (const c of o.stream!) parts.push(c);
  return Buffer.concat(parts);
}

async function* pieces(buf: Buffer, size = 10_000) {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

async function chunkMessages(): Promise<number> {
  const jsm = await jetstreamManager(nc);
  const si = await jsm.streams.info(be.stream, { subjects_filter: `$O.${be.bucket}.C.>` });
  return Object.values(si.state.subjects ?? {}).reduce((a, b) => a + b, 0);
}

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  be = new JetStreamBlobBackend(nc, { bucket: "test_blobs", chunkBytes: CHUNK });
}, 30_000);

afterAll(async () => {
  await nc?.close();
  await nats?.cleanup();
});

describe("JetStream object-store backend", () => {
  it("encodes chunk sequences as runs", () => {
    expect(encodeSeqs([3, 4, 5, 9, 11, 12])).toBe("3-5,9,11-12");
    expect(decodeSeqs("3-5,9,11-12")).toEqual([3, 4, 5, 9, 11, 12]);
    expect(decodeSeqs("")).toEqual([]);
  });

  it("stores small and streamed blobs under their SHA-256 id, with md5, and reads them back", async () => {
    for (const n of [0, 1, 1000, CHUNK, CHUNK + 1, 3 * 1024 * 1024 + 17]) {
      const bytes = randomBytes(n);
      const r = await be.put(n > 1024 * 1024 ? pieces(bytes, 70_000) : bytes);
      expect(r.blobId).toBe(blobIdOf(bytes));
      expect(r.size).toBe(n);
      expect(r.md5).toBe(createHash("md5").update(bytes).digest("hex"));
      expect(r.deduplicated).toBe(false);
      expect((await be.stat(r.blobId))?.size).toBe(n);
      expect((await readAll(await be.open(r.blobId, undefined, { inlineBelow: 1024 * 1024 }))).equals(bytes)).toBe(true);
      expect((await readAll(await be.open(r.blobId))).equals(bytes)).toBe(true);
    }
  });

  it("keeps identical bytes once (sequential and concurrent writers), streamed or buffered", async () => {
    const before = await chunkMessages();
    const big = randomBytes(2 * 1024 * 1024 + 5);
    const small = randomBytes(3000);
    const a = await be.put(pieces(big));
    const b = await be.put(pieces(big));
    expect(b).toMatchObject({ blobId: a.blobId, deduplicated: true, md5: a.md5 });
    const rs = await Promise.all(Array.from({ length: 8 }, (_, i) => be.put(i % 2 ? pieces(small, 700) : small)));
    expect(new Set(rs.map((r) => r.blobId)).size).toBe(1);
    expect(rs.filter((r) => !r.deduplicated).length).toBe(1);
    const rb = await Promise.all(Array.from({ length: 4 }, () => be.put(pieces(big, 100_000))));
    expect(rb.every((r) => r.deduplicated)).toBe(true);
    // one copy of each: ceil(big / chunk) + 1 chunk messages
    expect((await chunkMessages()) - before).toBe(Math.ceil(big.length / CHUNK) + 1);
    expect((await readAll(await be.open(a.blobId))).equals(big)).toBe(true);
  });

  it("serves ranges, skipping whole chunks", async () => {
    const bytes = randomBytes(5 * CHUNK + 123);
    const { blobId } = await be.put(pieces(bytes, 50_000));
    const cases: Array<[number, number]> = [[0, 0], [CHUNK - 1, CHUNK], [2 * CHUNK + 5, 4 * CHUNK + 7], [5 * CHUNK, 5 * CHUNK + 122], [100, 100 + 3 * CHUNK], [0, bytes.length - 1], [3 * CHUNK, 10 * CHUNK]];
    for (const [start, end] of cases) {
      const want = bytes.subarray(start, Math.min(end, bytes.length - 1) + 1);
      for (const inline of [0, 1024 * 1024]) {
        const o = await be.open(blobId, { start, end }, { inlineBelow: inline });
        expect(o!.size).toBe(want.length);
        expect((await readAll(o)).equals(want)).toBe(true);
      }
    }
  });

  it("rejects a body over the limit mid-stream with 413 and leaves no chunks behind", async () => {
    const before = await chunkMessages();
    const bytes = randomBytes(3 * 1024 * 1024);
    const err = await be.put(pieces(bytes, 64 * 1024), { maxBytes: 2 * 1024 * 1024 }).catch((e) => e);
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).status).toBe(413);
    expect(await chunkMessages()).toBe(before);
    expect(await be.stat(blobIdOf(bytes))).toBeNull();
    // a source that fails mid-way leaves nothing either
    async function* broken() {
      yield randomBytes(1024 * 1024);
      yield randomBytes(1024 * 1024);
      throw new Error("client went away");
    }
    await expect(be.put(broken())).rejects.toThrow("client went away");
    expect(await chunkMessages()).toBe(before);
  });

  it("deletes after the grace period only; a write of the same bytes keeps them", async () => {
    const bytes = randomBytes(3 * CHUNK);
    const { blobId } = await be.put(bytes);
    expect(await be.delete(blobId, { graceMs: 60_000 })).toBe(false);
    expect(await be.stat(blobId)).not.toBeNull();
    await new Promise((r) => setTimeout(r, 30));
    expect(await be.delete(blobId, { graceMs: 10 })).toBe(true);
    expect(await be.stat(blobId)).toBeNull();
    expect(await be.open(blobId)).toBeNull();
    expect(await be.delete(blobId)).toBe(false);
    // stored again after deletion: a fresh object
    expect((await be.put(bytes)).deduplicated).toBe(false);
    expect((await readAll(await be.open(blobId))).equals(bytes)).toBe(true);
    // a dedup write refreshes the time: the sweep's grace period sees it
    await new Promise((r) => setTimeout(r, 50));
    expect((await be.put(bytes)).deduplicated).toBe(true);
    expect(await be.delete(blobId, { graceMs: 40 })).toBe(false);
    // concurrent delete and re-write of the same bytes: the bytes survive or the writer stored them again
    await new Promise((r) => setTimeout(r, 20));
    const [, w] = await Promise.all([be.delete(blobId, { graceMs: 1 }), be.put(bytes)]);
    expect(w.blobId).toBe(blobId);
    expect((await readAll(await be.open(blobId))).equals(bytes)).toBe(true);
  });

  it("lists stored blob ids and interoperates with the @nats-io/obj client", async () => {
    const bytes = randomBytes(2 * CHUNK + 9);
    const { blobId } = await be.put(bytes);
    const ids: string[] = [];
    for await (const id of be.list()) ids.push(id);
    expect(ids).toContain(blobId);
    const os = await new Objm(nc).open(be.bucket);
    const got = await os.getBlob(blobId);
    expect(Buffer.from(got!).equals(bytes)).toBe(true);
    // written by the obj client (no chunk sequences): read through
    const other = randomBytes(3 * CHUNK + 1);
    const id2 = blobIdOf(other);
    await os.putBlob({ name: id2, options: { max_chunk_size: CHUNK } }, other);
    expect((await readAll(await be.open(id2, { start: CHUNK + 3, end: 3 * CHUNK }))).equals(other.subarray(CHUNK + 3, 3 * CHUNK + 1))).toBe(true);
    expect((await readAll(await be.open(id2))).equals(other)).toBe(true);
  });

  it("creates the bucket with the event log's replicas", async () => {
    const jsm = await jetstreamManager(nc);
    expect((await jsm.streams.info(be.stream)).config.num_replicas).toBe(1);
  });
});
