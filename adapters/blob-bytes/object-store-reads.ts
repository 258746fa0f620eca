// Reads of the JetStream object-store blob backend (./object-store-backend.ts) that go beyond fetching chunks by
// sequence up front: a stream with a bounded read-ahead, and objects written by other clients.
import { Readable } from "node:stream";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { OpenedBlob } from "./backend.ts";
import type { LoadedMeta } from "./object-store-layout.ts";

/** A stream of chunks first..last with a bounded read-ahead, pulled as the consumer reads. */
export function chunkStream(chunk: (i: number) => Promise<Uint8Array | null>, readAhead: number, meta: LoadedMeta, first: number, last: number, slice: (i: number, d: Uint8Array) => Buffer, head: Buffer): Readable {
  let next = first + 1;
  const ahead: Promise<Uint8Array | null>[] = [];
  let idx = first + 1;
  const fill = () => {
    while (ahead.length < readAhead && next <= last) {
      const p = chunk(next++);
      p.catch(() => undefined);
      ahead.push(p);
    }
  };
  let headSent = false;
  return new Readable({
    highWaterMark: 0,
    read: function (this: Readable) {
      if (!headSent) {
        headSent = true;
        fill();
        if (first === last) this.push(head), this.push(null);
        else this.push(head);
        return;
      }
      if (idx > last) return void this.push(null);
      fill();
      const i = idx++;
      ahead.shift()!.then(
        (d) => {
          if (!d) return this.destroy(new Error(`chunk ${i} of blob ${meta.rec.name} is missing`));
          this.push(slice(i, d));
          if (i === last) this.push(null);
        },
        (err) => this.destroy(err),
      );
    },
  });
}

/** Objects written without chunk sequences (other clients): read through the chunk subject in order. */
export async function openSequential(jsm: JetStreamManager, stream: string, subj: string, meta: LoadedMeta, first: number, last: number, slice: (i: number, d: Uint8Array) => Buffer, size: number, inlineBelow: number): Promise<OpenedBlob> {
  async function* chunks() {
    let seq = 0;
    for (let i = 0; i <= last; i++) {
      const m = await jsm.direct.getMessage(stream, { seq: seq + 1, next_by_subj: subj });
      if (!m) throw new Error(`chunk ${i} of blob ${meta.rec.name} is missing`);
      seq = m.seq;
      if (i >= first) yield slice(i, m.data);
    }
  }
  if (size <= inlineBelow) {
    const bufs: Buffer[] = [];
    for await (const b of chunks()) bufs.push(b);
    return { size, bytes: Buffer.concat(bufs, size) };
  }
  return { size, stream: Readable.from(chunks(), { objectMode: false }) };
}
