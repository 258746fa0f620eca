// `COPY … FROM STDIN (FORMAT binary)` over node-postgres without a streaming dependency: the rows are encoded in one
// buffer in Postgres's binary copy format and sent as the statement's only data. For bulk writes of many small rows
// (lexical postings), where the text of array parameters was most of both sides' work.
import type pg from "pg";

/**
 * Column types of the binary copy format (each value: int32 length, then its bytes, big-endian; null: length -1).
 * Values: numbers for the integer and float types (int8 must be a safe integer), `timestamptz` as microseconds since
 * the Unix epoch, `uuid` as its canonical text, `text` as a string, `bytes` as the type's binary form (e.g. halfvec).
 */
export type CopyColumn = "int2" | "int4" | "int8" | "float4" | "timestamptz" | "uuid" | "text" | "bytes";
export type CopyValue = number | string | Buffer | null;
const FIXED: Partial<Record<CopyColumn, number>> = { int2: 2, int4: 4, int8: 8, float4: 4, timestamptz: 8, uuid: 16 };

const SIGNATURE = Buffer.from("PGCOPY\n\xff\r\n\0", "binary");
/** Postgres counts time from 2000-01-01 UTC. */
const PG_EPOCH_US = 946_684_800_000_000;
const TWO_32 = 4_294_967_296;

/**
 * Microseconds since the Unix epoch of an RFC 3339 time when JavaScript reads it exactly (the millisecond form of
 * toISOString); undefined otherwise, and the caller lets Postgres parse the text.
 */
export function exactEpochMicros(iso: string): number | undefined {
  if (typeof iso !== "string") return undefined;
  const ms = Date.parse(iso);
  return Number.isFinite(ms) && new Date(ms).toISOString() === iso ? ms * 1000 : undefined;
}

/**
 * Batches smaller than this keep their single INSERT … ON CONFLICT statement: the look-up that a COPY needs first
 * (which rows are taken) is one more round trip, which live batches of a few rows — on the way to a job's "done" —
 * would pay for nothing. Catch-up batches (a replay) are thousands of rows.
 */
export const COPY_MIN_ROWS = 256;

/** A uuid in its canonical text form (what the copy encoder takes). */
export const isCanonicalUuid = (s: unknown): s is string => typeof s === "string" && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);

/** Encodes rows given as columns (all of one length). */
export function encodeBinaryCopy(types: readonly CopyColumn[], columns: readonly ArrayLike<CopyValue>[]): Buffer {
  const n = columns[0]?.length ?? 0;
  let size = SIGNATURE.length + 8 + 2 + n * 2;
  for (let c = 0; c < types.length; c++) {
    const fixed = FIXED[types[c]];
    const col = columns[c];
    for (let i = 0; i < n; i++) {
      const v = col[i];
      size += 4 + (v === null ? 0 : (fixed ?? (typeof v === "string" ? Buffer.byteLength(v) : (v as Buffer).length)));
    }
  }
  const buf = Buffer.allocUnsafe(size);
  // A DataView: the checked Buffer writers cost more than the encoding itself.
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let o = SIGNATURE.copy(buf, 0);
  dv.setInt32(o, 0); // flags
  dv.setInt32(o + 4, 0); // header extension length
  o += 8;
  const int8 = (v: number) => {
    // high and low words (no BigInt per value): two's complement of a safe integer
    dv.setInt32(o, Math.floor(v / TWO_32));
    dv.setUint32(o + 4, v >>> 0);
  };
  for (let i = 0; i < n; i++) {
    dv.setInt16(o, types.length);
    o += 2;
    for (let c = 0; c < types.length; c++) {
      const v = columns[c][i];
      if (v === null) {
        dv.setInt32(o, -1);
        o += 4;
        continue;
      }
      switch (types[c]) {
        case "int2":
          dv.setInt32(o, 2);
          dv.setInt16(o + 4, v as number);
          o += 6;
          break;
        case "int4":
          dv.setInt32(o, 4);
          dv.setInt32(o + 4, v as number);
          o += 8;
          break;
        case "float4":
          dv.setInt32(o, 4);
          dv.setFloat32(o + 4, v as number);
          o += 8;
          break;
        case "int8":
        case "timestamptz":
          dv.setInt32(o, 8);
          o += 4;
          int8(types[c] === "int8" ? (v as number) : (v as number) - PG_EPOCH_US);
          o += 8;
          break;
        case "uuid": {
          dv.setInt32(o, 16);
          if (!isCanonicalUuid(v)) throw new TypeError("not a canonical uuid");
          buf.write((v as string).replace(/-/g, ""), o + 4, 16, "hex");
          o += 20;
          break;
        }
        case "text": {
          const len = buf.write(v as string, o + 4, "utf8");
          dv.setInt32(o, len);
          o += 4 + len;
          break;
        }
        case "bytes": {
          const b = v as Buffer;
          dv.setInt32(o, b.length);
          b.copy(buf, o + 4);
          o += 4 + b.length;
          break;
        }
      }
    }
  }
  dv.setInt16(o, -1); // trailer
  return buf;
}

/** A node-postgres submittable that runs one COPY FROM STDIN and sends `data` as its input. */
class CopyIn {
  rowCount = 0;
  private settled = false;

  constructor(
    private readonly text: string,
    private readonly data: Buffer,
    private readonly done: (err: Error | undefined, rows: number) => void,
  ) {}

  submit(connection: { query(text: string): void }): void {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: { sendCopyFromChunk(b: Buffer): void; endCopyFrom(): void }): void {
    connection.sendCopyFromChunk(this.data);
    connection.endCopyFrom();
  }

  handleCommandComplete(msg: { text?: string }): void {
    this.rowCount = Number(/(\d+)$/.exec(msg.text ?? "")?.[1] ?? 0);
  }

  /** Also called when the connection fails, after which no ReadyForQuery comes: settle at once. */
  handleError(err: Error): void {
    this.settle(err);
  }

  handleReadyForQuery(): void {
    this.settle(undefined);
  }

  private settle(err: Error | undefined): void {
    if (this.settled) return;
    this.settled = true;
    this.done(err, this.rowCount);
  }

  // Not expected from a COPY FROM; present because the client calls them on whatever query is active.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handleCopyData(): void {}
  handlePortalSuspended(): void {}
}

/** Runs `COPY <target> FROM STDIN (FORMAT binary)` with `data` (encodeBinaryCopy); resolves with the rows copied. */
export function copyBinary(client: pg.ClientBase, target: string, data: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const q = new CopyIn(`COPY ${target} FROM STDIN (FORMAT binary)`, data, (err, rows) => (err ? reject(err) : resolve(rows)));
    client.query(q as unknown as pg.Submittable);
  });
}
