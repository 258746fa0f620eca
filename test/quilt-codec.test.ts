import { describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { encodeQuiltBytes, encodeQuiltPatchId, isQuiltPatchId, listQuiltPatches, parseQuiltPatchId, readQuiltPatch } from "../adapters/blobs/quilt-codec.ts";

const quiltId = createHash("sha256").update("a quilt").digest("base64url");
const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

describe("quilt codec", () => {
  it("reads back every patch the SDK's encoder wrote, by the columns of its patch id", () => {
    const inputs = [
      { identifier: "m-2", contents: bytes(1500, 2) },
      { identifier: "m-1", contents: bytes(7, 1), tags: { owner: "0xabc" } },
      { identifier: "m-3", contents: bytes(0, 3) },
    ];
    for (const shards of [10, 1000]) {
      const { quilt, patches } = encodeQuiltBytes(inputs, shards);
      expect(listQuiltPatches(quilt, shards)).toEqual(patches);
      for (const input of inputs) {
        const p = patches.find((x) => x.identifier === input.identifier)!;
        const ref = parseQuiltPatchId(encodeQuiltPatchId({ quiltId, ...p }))!;
        expect(ref).toEqual({ quiltId, startIndex: p.startIndex, endIndex: p.endIndex });
        const got = readQuiltPatch(quilt, shards, ref);
        expect(got.identifier).toBe(input.identifier);
        expect(got.tags).toEqual(input.tags ?? {});
        expect(Buffer.from(got.contents).equals(Buffer.from(input.contents))).toBe(true);
      }
    }
  });

  it("lays out the same patches as the same bytes, in whatever order they come (a quilt rebuilt after a crash keeps its blob id)", () => {
    // The relayer's crash recovery stores a sealed quilt again from its members' recorded ciphertexts
    // (actors/relayer/remember-job.quilts.ts): only a deterministic layout gives the same quilt blob id.
    const inputs = Array.from({ length: 6 }, (_, i) => ({ identifier: `p${i}`, contents: Uint8Array.from(createHash("sha256").update(String(i)).digest()).subarray(0, 5 + i * 97) }));
    const hash = (q: Uint8Array) => createHash("sha256").update(q).digest("hex");
    for (const shards of [10, 1000]) {
      const first = encodeQuiltBytes(inputs, shards);
      const again = encodeQuiltBytes(inputs.map((x) => ({ identifier: x.identifier, contents: Uint8Array.from(x.contents) })), shards);
      const reversed = encodeQuiltBytes([...inputs].reverse(), shards);
      expect(hash(again.quilt)).toBe(hash(first.quilt));
      expect(hash(reversed.quilt)).toBe(hash(first.quilt));
      expect(again.patches).toEqual(first.patches);
      // and a different member set is a different quilt
      expect(hash(encodeQuiltBytes(inputs.slice(1), shards).quilt)).not.toBe(hash(first.quilt));
    }
  });

  it("encodes patch ids as the Walrus docs show them (quilt id, then version 1, start and end column little-endian)", () => {
    // From the Walrus quilt HTTP API docs' store example.
    const id = "6XUOE-Q5-nAXHRifN6n9nomVDtHZQbGuAkW3PjlBuKoBAQDQAA";
    const ref = parseQuiltPatchId(id)!;
    expect(ref).toEqual({ quiltId: "6XUOE-Q5-nAXHRifN6n9nomVDtHZQbGuAkW3PjlBuKo", startIndex: 1, endIndex: 208 });
    expect(encodeQuiltPatchId(ref)).toBe(id);
  });

  it("tells patch ids from blob ids and garbage", () => {
    expect(isQuiltPatchId(quiltId)).toBe(false);
    expect(isQuiltPatchId("not base64!")).toBe(false);
    expect(isQuiltPatchId("")).toBe(false);
    const good = encodeQuiltPatchId({ quiltId, startIndex: 1, endIndex: 2 });
    expect(isQuiltPatchId(good)).toBe(true);
    expect(isQuiltPatchId(good + "A")).toBe(false);
    expect(isQuiltPatchId(encodeQuiltPatchId({ quiltId, startIndex: 3, endIndex: 3 }))).toBe(false);
  });

  it("refuses what the network's encoder refuses: duplicates, too many patches", () => {
    expect(() => encodeQuiltBytes([{ identifier: "a", contents: bytes(1, 0) }, { identifier: "a", contents: bytes(1, 0) }], 10)).toThrow(/Duplicate/);
    expect(() => encodeQuiltBytes(Array.from({ length: 7 }, (_, i) => ({ identifier: `p${i}`, contents: bytes(1, i) })), 10)).toThrow(/Too many/);
  });
});
