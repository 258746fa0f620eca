// The records of the JetStream object-store blob backend (./object-store-backend.ts).
//
// Layout (compatible with `nats object` and the @nats-io/obj client): stream `OBJ_<bucket>`, chunks on
// `$O.<bucket>.C.<nuid>`, one metadata record per object on `$O.<bucket>.M.<base64url(name)>`, object name = blob id,
// digest = SHA-256 of the bytes (the blob id itself). Two additions in the record's `metadata`: the stream sequence
// of every chunk (`memrelay.seqs`, as runs "a-b,c") so that a ranged read fetches exactly the chunks it needs by
// sequence (direct get), and the MD5 (`memrelay.md5`).
import type { StoredMsg } from "@nats-io/jetstream";

export interface MetaRecord {
  name: string;
  description?: string;
  bucket: string;
  nuid: string;
  size: number;
  chunks: number;
  mtime: string;
  digest: string;
  deleted?: boolean;
  options?: { max_chunk_size?: number; link?: unknown };
  metadata?: Record<string, string>;
  headers?: Record<string, string[]>;
}

export interface LoadedMeta {
  readonly seq: number;
  readonly timeMs: number;
  readonly rec: MetaRecord;
  /** chunk sequences, when recorded */
  readonly seqs?: number[];
}

export const SEQS = "memrelay.seqs";
export const MD5 = "memrelay.md5";

/** "3-5,9" <-> [3,4,5,9] */
export function encodeSeqs(seqs: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < seqs.length; ) {
    let j = i;
    while (j + 1 < seqs.length && seqs[j + 1] === seqs[j] + 1) j++;
    out.push(j === i ? String(seqs[i]) : `${seqs[i]}-${seqs[j]}`);
    i = j + 1;
  }
  return out.join(",");
}
export function decodeSeqs(s: string): number[] {
  const out: number[] = [];
  for (const part of s.split(",")) {
    if (!part) continue;
    const dash = part.indexOf("-");
    if (dash < 0) out.push(Number(part));
    else for (let a = Number(part.slice(0, dash)), b = Number(part.slice(dash + 1)); a <= b; a++) out.push(a);
  }
  return out;
}

export function toLoaded(m: StoredMsg): LoadedMeta {
  const rec = m.json<MetaRecord>();
  const s = rec.metadata?.[SEQS];
  return { seq: m.seq, timeMs: m.time.getTime(), rec, seqs: s ? decodeSeqs(s) : undefined };
}
