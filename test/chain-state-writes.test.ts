// The ledger's writes of recorded blobs (adapters/chain/local/writes.ts), state layout 4: one object key per blob and
// one index page per scope; an index head only when a page starts. Applying them twice yields the same state.
import { describe, expect, it } from "vitest";
import { applyOp, opsOf, type Op } from "../adapters/chain/local/writes.ts";
import { ALL_SCOPE, KEYS, indexCount, namespaceScope, type BlobIndexHead, type BlobIndexPage } from "../adapters/chain/local/state-keys.ts";
import { deriveBlobObjectId } from "../adapters/chain/local/tx.ts";
import type { BlobRecord, ChainRecord } from "../adapters/chain/local/model.ts";

const REGISTRY = "0x" + "cd".repeat(32);
const OWNER = "0x" + "01".repeat(32);
const ns = namespaceScope("notes");

function blob(i: number): BlobRecord {
  const blob_id = `blob-${i}`;
  return { object_id: deriveBlobObjectId(REGISTRY, OWNER, blob_id), owner: OWNER, blob_id, namespace: "notes", package_id: "0x" + "ab".repeat(32), size: i, created_at: 1000 + i };
}

function record(indices: number[]): ChainRecord {
  return {
    v: 1,
    digest: `d${indices.join("-")}`,
    tx: {} as ChainRecord["tx"],
    kind: "record_blob",
    sender: OWNER,
    gas_owner: null,
    gas_used: "0",
    executed_at: 0,
    events: indices.map((i) => ({ type: "BlobRecorded" as const, blob: blob(i), index_all: i, index_ns: i })),
  };
}

/** A KV of values with `_seq`, where older writes lose (as the state store applies them). */
function applyAll(state: Map<string, Record<string, unknown>>, ops: readonly Op[], seq: number): void {
  for (const op of ops) {
    const cur = state.get(op.key) ?? null;
    if (cur && (cur._seq as number) >= seq) continue;
    state.set(op.key, applyOp(op, cur, seq));
  }
}

function listed(state: Map<string, Record<string, unknown>>, scope: string): string[] {
  const head = (state.get(KEYS.blobHead(OWNER, scope)) ?? null) as BlobIndexHead | null;
  const out: string[] = [];
  for (let p = head?.page ?? -1; p >= 0; p--) {
    const items = ((state.get(KEYS.blobPage(OWNER, scope, p)) ?? { items: [] }) as unknown as BlobIndexPage<BlobRecord>).items;
    for (let i = items.length - 1; i >= 0; i--) out.push(items[i]!.blob_id);
  }
  return out;
}

describe("chain state writes of recorded blobs", () => {
  it("writes one object key and one page per scope for a blob in the middle of a page, no head and no blob key", () => {
    const keys = opsOf([{ seq: 9, records: [record([3])] }], REGISTRY).map((op) => op.key);
    expect(keys.sort()).toEqual(
      [KEYS.object(blob(3).object_id), KEYS.blobPage(OWNER, ALL_SCOPE, 0), KEYS.blobPage(OWNER, ns, 0), KEYS.tx("d3")].sort(),
    );
  });

  it("moves the head to a page when its first item is written; counts and lists across the page boundary", () => {
    const state = new Map<string, Record<string, unknown>>();
    for (let i = 0; i < 8; i++) applyAll(state, opsOf([{ seq: i + 1, records: [record([i])] }], REGISTRY), i + 1);
    const head = () => state.get(KEYS.blobHead(OWNER, ALL_SCOPE)) as unknown as BlobIndexHead;
    const newest = () => state.get(KEYS.blobPage(OWNER, ALL_SCOPE, head().page)) as unknown as BlobIndexPage<BlobRecord>;
    expect(head().page).toBe(0);
    expect(indexCount(head(), newest())).toBe(8);
    // one block with records on both sides of the next boundary
    applyAll(state, opsOf([{ seq: 9, records: [record([8, 9])] }, { seq: 10, records: [record([10])] }], REGISTRY), 10);
    expect(head().page).toBe(1);
    expect(indexCount(head(), newest())).toBe(11);
    expect(listed(state, ns)).toEqual(Array.from({ length: 11 }, (_, i) => `blob-${10 - i}`));
  });

  it("applying the same blocks again leaves the state as it was", () => {
    const blocks = [
      { seq: 1, records: [record([0, 1, 2, 3, 4, 5, 6])] },
      { seq: 2, records: [record([7, 8])] },
    ];
    const once = new Map<string, Record<string, unknown>>();
    for (const b of blocks) applyAll(once, opsOf([b], REGISTRY), b.seq);
    const twice = new Map(once);
    for (const b of blocks) applyAll(twice, opsOf([b], REGISTRY), b.seq);
    expect(twice).toEqual(once);
    // the blocks combined, as a catch-up applies them: the same values (those of the first block now at seq 2)
    applyAll(twice, opsOf(blocks, REGISTRY), 2);
    const values = (m: Map<string, Record<string, unknown>>) => new Map([...m].map(([k, { _seq, ...v }]) => [k, v]));
    expect(values(twice)).toEqual(values(once));
    expect(indexCount(once.get(KEYS.blobHead(OWNER, ALL_SCOPE)) as unknown as BlobIndexHead, once.get(KEYS.blobPage(OWNER, ALL_SCOPE, 1)) as unknown as BlobIndexPage<unknown>)).toBe(9);
  });

  it("puts a blob recorded before layout 4 (object id from its transaction) also at its derived id", () => {
    const legacy = { ...blob(0), object_id: "0x" + "77".repeat(32) };
    const r = { ...record([0]), events: [{ type: "BlobRecorded" as const, blob: legacy, index_all: 0, index_ns: 0 }] };
    const objects = opsOf([{ seq: 1, records: [r] }], REGISTRY).filter((op) => op.key.startsWith("obj."));
    expect(objects.map((op) => op.key).sort()).toEqual([KEYS.object(legacy.object_id), KEYS.object(blob(0).object_id)].sort());
    for (const op of objects) expect(op.kind === "set" && op.value.object_id).toBe(legacy.object_id);
  });
});
