// A streaming multipart/form-data parser (RFC 7578) for uploads: small fields are collected (bounded), the file part
// is handed on as a stream with backpressure, so memory stays flat whatever the file size. Only what uploads need:
// one file part, fields as UTF-8 text, Content-Disposition name/filename (and filename*), Content-Type.
import { multipartBoundary } from "../multipart-boundary.ts";
import { ByteChannel } from "./channel.ts";
import type { ChunkHolds } from "../recycled-buffers.ts";
import { CODE, ConsoleHttpError, badRequest } from "../../schemas/console/http.ts";

export interface FilePartInfo {
  readonly field: string;
  readonly filename: string | null;
  readonly contentType: string | undefined;
}

export interface MultipartLimits {
  /** Largest file part, bytes (413 payload_too_large beyond). */
  readonly fileBytes: number;
  /** Largest text field, bytes. */
  readonly fieldBytes: number;
  readonly fields: number;
  readonly headerBytes: number;
}

export interface MultipartHandlers {
  onField(name: string, value: string): void;
  /** Receives the file part's bytes and must consume them; its promise settles when the consumer is done. */
  onFile(info: FilePartInfo, data: AsyncIterable<Buffer>): Promise<void>;
}

export function boundaryOf(contentType: string | undefined): string {
  const b = multipartBoundary(contentType);
  if (typeof b === "string") return b;
  throw badRequest(b.missing === "not multipart" ? "the upload must be multipart/form-data with a boundary" : "multipart/form-data without a boundary");
}

const CRLF = Buffer.from("\r\n");
const COALESCE = 256 * 1024;
/** File data pieces at least this large are handed on as they are (no copy); smaller ones are joined. */
const PASS_ON = 64 * 1024;
const HEADER_END = Buffer.from("\r\n\r\n");
/** Bytes parsed at a time before the file's data (see parseMultipart). */
const HEAD = 16 * 1024;
const EMPTY = Buffer.alloc(0);

const enum State {
  Preamble,
  Headers,
  Body,
  AfterDelimiter,
  Done,
}

function parseDisposition(v: string): { name?: string; filename?: string } {
  const out: { name?: string; filename?: string } = {};
  const re = /;\s*([A-Za-z*]+)=(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  let m: RegExpExecArray | null;
  let star: string | undefined;
  while ((m = re.exec(v))) {
    const key = m[1].toLowerCase();
    const value = m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : (m[3] ?? "").trim();
    if (key === "name") out.name = value;
    else if (key === "filename") out.filename = value;
    else if (key === "filename*") star = value;
  }
  if (star) {
    const mm = /^UTF-8''(.*)$/i.exec(star);
    if (mm) {
      try {
        out.filename = decodeURIComponent(mm[1]);
      } catch {
        /* keep the plain filename */
      }
    }
  }
  return out;
}

/**
 * Where a partial delimiter may begin at the end of `buf` (a suffix of it that is a proper prefix of `delimiter`),
 * or `buf.length` when none does: every byte before it is part data.
 */
export function partialDelimiterAt(buf: Buffer, delimiter: Buffer): number {
  const first = delimiter[0];
  for (let i = buf.indexOf(first, Math.max(0, buf.length - delimiter.length + 1)); i >= 0; i = buf.indexOf(first, i + 1)) {
    if (buf.compare(delimiter, 0, buf.length - i, i) === 0) return i;
  }
  return buf.length;
}

/**
 * Parses `source` and resolves once every part was handled (the file consumer included). With `holds`, the source's
 * chunks are recycled buffers (gateway/recycled-buffers.ts): the parser holds each chunk while it parses it and copies what it keeps
 * longer; file data handed to the consumer carries a hold of its own, which the consumer releases once written.
 */
export async function parseMultipart(source: AsyncIterable<Buffer>, boundary: string, limits: MultipartLimits, h: MultipartHandlers, holds?: ChunkHolds): Promise<void> {
  // The body's first delimiter has no leading CRLF: parse as if one were there.
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  const keep = delimiter.length + 1;
  let buf: Buffer = Buffer.from(CRLF);
  let state = State.Preamble as State; // (changed in parsePiece: not narrowed)
  let fields = 0;
  let sawFile = false;
  // current part
  let isFile = false;
  let fieldName = "";
  let fieldChunks: Buffer[] = [];
  let fieldBytes = 0;
  let fileStream: ByteChannel | undefined;
  let fileDone: Promise<void> | undefined;
  let fileFailure: unknown;
  let fileBytes = 0;

  // Small pieces of file data are joined into writes of at least COALESCE bytes (every write downstream costs a
  // syscall and a chunked-encoding frame), so at most that much is held here per upload; large pieces (the body
  // mostly arrives in chunks of up to 512 KiB) go on as they are: copying them would double the bytes allocated per
  // upload, and with them the garbage collector's work.
  let pendingData: Buffer[] = [];
  let pendingBytes = 0;
  const put = async (data: Buffer) => {
    const full = fileStream!.push(data);
    if (full) {
      await Promise.race([full, fileDone]);
      if (fileFailure) throw fileFailure;
    }
  };
  const flushFile = async () => {
    if (!pendingBytes) return;
    // a single piece goes on with its hold; joined pieces are a copy, so theirs end here
    const data = pendingData.length === 1 ? pendingData[0] : Buffer.concat(pendingData, pendingBytes);
    if (pendingData.length > 1) for (const piece of pendingData) holds?.release(piece);
    pendingData = [];
    pendingBytes = 0;
    await put(data);
  };
  const writeFile = async (data: Buffer) => {
    if (!data.length) return;
    fileBytes += data.length;
    if (fileBytes > limits.fileBytes) {
      throw new ConsoleHttpError(413, `the file exceeds the upload limit of ${limits.fileBytes} bytes`, CODE.payloadTooLarge, { limit: limits.fileBytes });
    }
    if (fileFailure) throw fileFailure;
    holds?.retain(data);
    if (data.length >= PASS_ON) {
      await flushFile();
      await put(data);
      return;
    }
    pendingData.push(data);
    pendingBytes += data.length;
    if (pendingBytes >= COALESCE) await flushFile();
  };
  const writeField = (data: Buffer) => {
    if (!data.length) return;
    fieldBytes += data.length;
    if (fieldBytes > limits.fieldBytes) throw badRequest(`form field ${fieldName} is larger than ${limits.fieldBytes} bytes`);
    fieldChunks.push(Buffer.from(data)); // kept past this chunk
  };
  const emit = (data: Buffer) => (isFile ? writeFile(data) : writeField(data));
  const endPart = async () => {
    if (isFile) {
      await flushFile();
      fileStream!.end();
      await fileDone;
      if (fileFailure) throw fileFailure;
      fileStream = undefined;
    } else {
      h.onField(fieldName, Buffer.concat(fieldChunks).toString("utf8"));
    }
  };
  const startPart = (headerBlock: string) => {
    let disposition: { name?: string; filename?: string } | undefined;
    let contentType: string | undefined;
    for (const line of headerBlock.split("\r\n")) {
      const i = line.indexOf(":");
      if (i <= 0) continue;
      const k = line.slice(0, i).trim().toLowerCase();
      const v = line.slice(i + 1).trim();
      if (k === "content-disposition") {
        if (!/^form-data\b/i.test(v)) throw badRequest("each part needs Content-Disposition: form-data");
        disposition = parseDisposition(v);
      } else if (k === "content-type") contentType = v;
    }
    if (!disposition?.name) throw badRequest("a multipart part has no Content-Disposition name");
    if (++fields > limits.fields) throw badRequest(`at most ${limits.fields} form fields`);
    isFile = disposition.filename !== undefined || disposition.name === "file";
    if (isFile) {
      if (disposition.name !== "file") throw badRequest(`unexpected file field ${disposition.name}: the file goes in the field named file`);
      if (sawFile) throw badRequest("only one file per upload");
      sawFile = true;
      fileStream = new ByteChannel(1 << 20);
      fileDone = h.onFile({ field: disposition.name, filename: disposition.filename ?? null, contentType }, fileStream).catch((err) => {
        fileFailure = err;
      });
    } else {
      fieldName = disposition.name;
      fieldChunks = [];
      fieldBytes = 0;
    }
  };

  try {
    for await (const chunk of source) {
      try {
        // Before the file's data (preamble, fields, part headers) a chunk is parsed in pieces of at most HEAD bytes:
        // those states join what is left over to the next bytes, and joining a whole chunk would copy up to 512 KiB
        // of file data that follows the headers in the same chunk. Once the file part's headers are read, its data
        // is parsed on in the chunk itself, from where it starts (one piece of data, as the chunk came).
        for (let rest: Buffer | undefined = chunk; rest && state !== State.Done; ) {
          let piece: Buffer = rest;
          rest = undefined;
          if (state !== State.Body && piece.length > HEAD) {
            rest = piece.subarray(HEAD);
            piece = piece.subarray(0, HEAD);
          }
          if ((await parsePiece(piece, rest !== undefined)) && buf.length <= piece.length) {
            // what is left of the piece (it ends where the piece does) is the start of the file's data
            rest = chunk.subarray(piece.byteOffset - chunk.byteOffset + piece.length - buf.length);
            buf = EMPTY;
          }
        }
      } finally {
        // what is left of this chunk for the next one is copied: the chunk itself is given back
        if (buf.buffer === chunk.buffer) buf = Buffer.from(buf);
        holds?.release(chunk);
      }
      if (state === State.Done) break;
    }
    if (state !== State.Done) throw badRequest("the multipart body ended before its closing boundary");
  } catch (err) {
    fileStream?.fail(err instanceof Error ? err : new Error(String(err)));
    if (fileDone) await fileDone;
    throw err;
  }

  /**
   * Parses the next bytes of the body (a chunk, or a piece of one); with `stopAtFile`, stops right after the file
   * part's headers and answers true.
   */
  async function parsePiece(chunk: Buffer, stopAtFile: boolean): Promise<boolean> {
    if (state === State.Body && buf.length && buf.length <= keep && chunk.length > 4 * keep) {
      // Large chunk after a short tail: only a delimiter starting in the tail needs the two joined. Otherwise the
      // tail is part data and the chunk is parsed in place (no copy of the chunk).
      const window = Buffer.concat([buf, chunk.subarray(0, delimiter.length)]);
      const i = window.indexOf(delimiter);
      if (i < 0 || i >= buf.length) {
        await emit(buf);
        buf = chunk;
      } else {
        buf = Buffer.concat([buf, chunk]);
      }
    } else {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    }
    for (;;) {
      if (state === State.Preamble) {
        const i = buf.indexOf(delimiter);
        if (i < 0) {
          if (buf.length > 4096) throw badRequest("multipart body does not start with its boundary");
          break;
        }
        buf = buf.subarray(i + delimiter.length);
        state = State.AfterDelimiter;
      } else if (state === State.AfterDelimiter) {
        if (buf.length < 2) break;
        if (buf[0] === 0x2d && buf[1] === 0x2d) {
          state = State.Done;
          buf = Buffer.alloc(0);
          break;
        }
        // transport padding then CRLF
        const i = buf.indexOf(CRLF);
        if (i < 0) {
          if (buf.length > 256) throw badRequest("malformed multipart boundary line");
          break;
        }
        buf = buf.subarray(i + 2);
        state = State.Headers;
      } else if (state === State.Headers) {
        const i = buf.indexOf(HEADER_END);
        if (i < 0) {
          if (buf.length > limits.headerBytes) throw badRequest("multipart part headers are too large");
          if (buf.length >= 2 && buf[0] === 0x0d && buf[1] === 0x0a) {
            // a part without headers
            throw badRequest("a multipart part has no headers");
          }
          break;
        }
        startPart(buf.subarray(0, i).toString("utf8"));
        buf = buf.subarray(i + 4);
        state = State.Body;
        if (stopAtFile && isFile) return true;
      } else if (state === State.Body) {
        const i = buf.indexOf(delimiter);
        if (i < 0) {
          // Everything but a possible partial delimiter at the end is part data.
          const safe = partialDelimiterAt(buf, delimiter);
          if (safe > 0) {
            await emit(buf.subarray(0, safe));
            buf = buf.subarray(safe);
          }
          break;
        }
        await emit(buf.subarray(0, i));
        buf = buf.subarray(i + delimiter.length);
        await endPart();
        state = State.AfterDelimiter;
      } else {
        break;
      }
    }
    return false;
  }
}
