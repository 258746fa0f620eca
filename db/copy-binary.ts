// `COPY … FROM STDIN (FORMAT binary)` over node-postgres without a streaming dependency: the rows are encoded in one
// buffer in Postgres's binary copy format and sent as the statement's only data. For bulk writes of many small rows
// (lexical postings), where the text of array parameters was most of both sides' work.
import type pg from "pg";

/** Column encoders of the binary copy format (each value: int32 length, then its bytes, big-endian). */
export type CopyColumn = "int2" | "int4" | "int8";
const WIDTH: Record<CopyColumn, number> = { int2: 2, int4: 4, int8: 8 };

const SIGNATURE = Buffer.from("PGCOPY\n\xff\r\n\0", "binary");

/**
 * Encodes rows given as columns (all of one length) of integers. int8 values are JavaScript numbers, so they must be
 * safe integers (term hashes are below 2^48, identities far below 2^53).
 */
export function encodeBinaryCopy(types: readonly CopyColumn[], columns: readonly (ArrayLike<number>)[]): Buffer {
  const n = columns[0]?.length ?? 0;
  const rowBytes = 2 + types.reduce((s, t) => s + 4 + WIDTH[t], 0);
  const buf = Buffer.allocUnsafe(SIGNATURE.length + 8 + n * rowBytes + 2);
  // A DataView: the checked Buffer writers cost more than the encoding itself.
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let o = SIGNATURE.copy(buf, 0);
  dv.setInt32(o, 0); // flags
  dv.setInt32(o + 4, 0); // header extension length
  o += 8;
  for (let i = 0; i < n; i++) {
    dv.setInt16(o, types.length);
    o += 2;
    for (let c = 0; c < types.length; c++) {
      const v = columns[c][i];
      switch (types[c]) {
        case "int2":
          dv.setInt32(o, 2);
          dv.setInt16(o + 4, v);
          o += 6;
          break;
        case "int4":
          dv.setInt32(o, 4);
          dv.setInt32(o + 4, v);
          o += 8;
          break;
        case "int8":
          dv.setInt32(o, 8);
          // high and low words (no BigInt per value): two's complement of a safe integer
          dv.setInt32(o + 4, Math.floor(v / 4_294_967_296));
          dv.setUint32(o + 8, v >>> 0);
          o += 12;
          break;
      }
    }
  }
  buf.writeInt16BE(-1, o); // trailer
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
