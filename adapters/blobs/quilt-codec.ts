// Walrus quilts, as the network lays them out (the `@mysten/walrus` SDK's `encodeQuilt`, Walrus's quilt format V1):
// a quilt is one blob whose bytes form a matrix of `primary` rows × `secondary` columns of equal symbols; column 0 on
// holds the quilt index (version byte, u32 length, BCS index), then each patch takes whole consecutive columns, read
// column by column: a 6-byte header (version, u32 length, mask), the u16-prefixed identifier, optional tags, the bytes.
// A patch is named by its quilt patch id: BCS (quilt blob id u256, version 1, start column u16, end column u16) in
// URL-safe base64 without padding, exactly as the SDK encodes it. The SDK exports the encoder but not the parsers,
// so the BCS shapes are restated here from its source.
import { bcs } from "@mysten/sui/bcs";
import { blobIdFromInt, blobIdToInt, encodeQuilt } from "@mysten/walrus";

export interface QuiltPatchRef {
  readonly quiltId: string;
  readonly startIndex: number;
  readonly endIndex: number;
}

export interface QuiltPatch {
  readonly identifier: string;
  readonly tags: Record<string, string>;
  readonly startIndex: number;
  readonly endIndex: number;
}

export interface QuiltInput {
  readonly identifier: string;
  readonly contents: Uint8Array;
  readonly tags?: Record<string, string>;
}

const PATCH_ID_VERSION = 1;
const PATCH_ID_BYTES = 32 + 1 + 2 + 2;
const INDEX_PREFIX_BYTES = 5;
const PATCH_HEADER_BYTES = 6;
const HAS_TAGS = 1;
const ENCODING = "RS2" as const;

const PatchIdBcs = bcs.struct("QuiltPatchId", {
  quiltId: bcs.u256(),
  patchId: bcs.struct("InternalQuiltPatchId", { version: bcs.u8(), startIndex: bcs.u16(), endIndex: bcs.u16() }),
});
const TagsBcs = bcs.map(bcs.string(), bcs.string());
const IndexBcs = bcs.struct("QuiltIndexV1", {
  patches: bcs.vector(bcs.struct("QuiltPatchV1", { endIndex: bcs.u16(), identifier: bcs.string(), tags: TagsBcs })),
});

const toB64Url = (b: Uint8Array) => Buffer.from(b).toString("base64url");

export function encodeQuiltPatchId(ref: QuiltPatchRef): string {
  const bytes = PatchIdBcs.serialize({ quiltId: blobIdToInt(ref.quiltId), patchId: { version: PATCH_ID_VERSION, startIndex: ref.startIndex, endIndex: ref.endIndex } }).toBytes();
  return toB64Url(bytes);
}

/** The patch a quilt patch id names, or null when the text is not one (a plain blob id is 32 bytes, not 37). */
export function parseQuiltPatchId(id: string): QuiltPatchRef | null {
  if (!/^[A-Za-z0-9_-]+$/.test(id)) return null;
  const bytes = Buffer.from(id, "base64url");
  if (bytes.length !== PATCH_ID_BYTES || toB64Url(bytes) !== id) return null;
  const p = PatchIdBcs.parse(bytes);
  if (p.patchId.version !== PATCH_ID_VERSION || p.patchId.startIndex >= p.patchId.endIndex) return null;
  return { quiltId: blobIdFromInt(BigInt(p.quiltId)), startIndex: p.patchId.startIndex, endIndex: p.patchId.endIndex };
}

export const isQuiltPatchId = (id: string): boolean => parseQuiltPatchId(id) !== null;

/** Rows and columns of a quilt for a committee of `nShards` (the SDK's getSourceSymbols for RS2). */
export function quiltShape(nShards: number): { rows: number; columns: number } {
  const f = Math.floor((nShards - 1) / 3);
  return { rows: nShards - 2 * f, columns: nShards - f };
}

/** The SDK's encoder; throws (duplicate identifier, too many or too large patches) as the network's publisher refuses. */
export function encodeQuiltBytes(patches: readonly QuiltInput[], nShards: number): { quilt: Uint8Array; patches: QuiltPatch[] } {
  const { quilt, index } = encodeQuilt({ blobs: patches.map((p) => ({ identifier: p.identifier, contents: p.contents, tags: p.tags })), numShards: nShards, encodingType: ENCODING });
  return { quilt, patches: index.patches.map((p) => ({ identifier: p.identifier, tags: p.tags instanceof Map ? Object.fromEntries(p.tags) : p.tags, startIndex: p.startIndex, endIndex: p.endIndex })) };
}

/** Reads a quilt's bytes column by column (a column is `rows` symbols, one per row). */
class QuiltMatrix {
  readonly rows: number;
  readonly symbol: number;
  private readonly rowBytes: number;

  constructor(private readonly quilt: Uint8Array, nShards: number) {
    const { rows, columns } = quiltShape(nShards);
    if (quilt.length === 0 || quilt.length % (rows * columns) !== 0) throw new QuiltFormatError(`not a quilt of a ${nShards}-shard committee (${quilt.length} bytes)`);
    this.rows = rows;
    this.symbol = quilt.length / (rows * columns);
    this.rowBytes = this.symbol * columns;
  }

  get columnBytes(): number {
    return this.symbol * this.rows;
  }

  /** `length` bytes from `offset` into the run of columns starting at `column`. */
  read(column: number, offset: number, length: number): Uint8Array {
    const out = new Uint8Array(length);
    let done = 0;
    let symbolIndex = Math.floor(offset / this.symbol);
    let within = offset % this.symbol;
    while (done < length) {
      const col = column + Math.floor(symbolIndex / this.rows);
      const row = symbolIndex % this.rows;
      const start = row * this.rowBytes + col * this.symbol + within;
      const n = Math.min(this.symbol - within, length - done);
      if (start + n > this.quilt.length) throw new QuiltFormatError("a patch runs past the end of the quilt");
      out.set(this.quilt.subarray(start, start + n), done);
      done += n;
      within = 0;
      symbolIndex++;
    }
    return out;
  }
}

export class QuiltFormatError extends Error {}

/** The patches a quilt's index lists, in index order. */
export function listQuiltPatches(quilt: Uint8Array, nShards: number): QuiltPatch[] {
  const m = new QuiltMatrix(quilt, nShards);
  const prefix = m.read(0, 0, INDEX_PREFIX_BYTES);
  if (prefix[0] !== 1) throw new QuiltFormatError(`unknown quilt version ${prefix[0]}`);
  const indexLength = new DataView(prefix.buffer).getUint32(1, true);
  if (INDEX_PREFIX_BYTES + indexLength > quilt.length) throw new QuiltFormatError("the quilt index runs past the end of the quilt");
  const index = IndexBcs.parse(m.read(0, INDEX_PREFIX_BYTES, indexLength));
  let start = Math.ceil((INDEX_PREFIX_BYTES + indexLength) / m.columnBytes);
  return index.patches.map((p) => {
    const patch = { identifier: p.identifier, tags: Object.fromEntries(p.tags), startIndex: start, endIndex: p.endIndex };
    start = p.endIndex;
    return patch;
  });
}

/** The bytes of the patch stored in columns [startIndex, endIndex), with its identifier and tags. */
export function readQuiltPatch(quilt: Uint8Array, nShards: number, ref: Pick<QuiltPatchRef, "startIndex" | "endIndex">): { identifier: string; tags: Record<string, string>; contents: Uint8Array } {
  const m = new QuiltMatrix(quilt, nShards);
  const capacity = (ref.endIndex - ref.startIndex) * m.columnBytes;
  const header = m.read(ref.startIndex, 0, PATCH_HEADER_BYTES);
  const view = new DataView(header.buffer);
  const length = view.getUint32(1, true);
  const mask = header[5];
  if (header[0] !== 1 || PATCH_HEADER_BYTES + length > capacity) throw new QuiltFormatError("no patch starts at this column");
  const body = m.read(ref.startIndex, PATCH_HEADER_BYTES, length);
  const bodyView = new DataView(body.buffer);
  const idLength = bodyView.getUint16(0, true);
  let at = 2;
  const identifier = bcs.string().parse(body.subarray(at, at + idLength));
  at += idLength;
  let tags: Record<string, string> = {};
  if (mask & HAS_TAGS) {
    const tagsLength = bodyView.getUint16(at, true);
    at += 2;
    tags = Object.fromEntries(TagsBcs.parse(body.subarray(at, at + tagsLength)));
    at += tagsLength;
  }
  return { identifier, tags, contents: body.subarray(at) };
}
