// Pure projection of a ledger record onto KV writes. Every write is absolute or positional, so applying a record twice
// (a retried submit, a catch-up racing the submitter) yields the same state; the stored `_seq` makes older writes lose.
import { BLOB_PAGE_SIZE, type Account, type ChainEvent, type ChainRecord, type StoredDynamicField, type TxReceipt } from "./model.ts";
import type { StoredObject } from "../../../schemas/chain.ts";
import { blobObjectView } from "./blob-object.ts";
import { deriveBlobObjectId } from "./tx.ts";
import { ALL_SCOPE, KEYS, dynamicFieldBcsKey, dynamicFieldNameKey, namespaceScope, pageOf } from "./state-keys.ts";
import { localRegistryTableId } from "./transaction-data.ts";
import type { WalrusRegistration } from "./walrus-layouts.ts";
import { deriveDynamicFieldID, normalizeSuiAddress } from "@mysten/sui/utils";

export type Op =
  /** Replace the value. */
  | { readonly kind: "set"; readonly key: string; readonly value: Record<string, unknown> }
  /** Shallow-merge fields into the current value. */
  | { readonly kind: "merge"; readonly key: string; readonly fields: Record<string, unknown> }
  /** Put items at positions of a page `{items: []}`. */
  | { readonly kind: "slots"; readonly key: string; readonly slots: ReadonlyArray<readonly [number, unknown]> };

/** Whether the key probably exists already: a page that a slot does not start (the writer reads it before writing). */
export function probablyExists(op: Op): boolean {
  return op.kind === "slots" && op.slots.some(([index]) => index % BLOB_PAGE_SIZE !== 0);
}

/** The value written for a removed entry: reads treat it as absent; its `_seq` keeps stale writers out. */
export const TOMBSTONE = { deleted: true } as const;

export interface DelegateEntry {
  readonly account_id: string;
  readonly owner: string;
  readonly active: boolean;
  readonly public_key: string;
  readonly sui_address: string;
}

function delegateWrites(account: Account, out: Op[]): void {
  for (const k of account.delegate_keys) {
    const entry: DelegateEntry = { account_id: account.id, owner: account.owner, active: account.active, public_key: k.public_key, sui_address: k.sui_address };
    out.push({ kind: "set", key: KEYS.delegateKey(k.public_key), value: { ...entry } });
    out.push({ kind: "set", key: KEYS.delegateAddress(k.sui_address), value: { ...entry } });
  }
}

/** A dynamic field as the Move object `0x2::dynamic_field::Field<Name, Value>` at its derived id. */
function fieldObject(f: StoredDynamicField, parent: StoredObject): StoredObject {
  const id = f.field_id as string;
  const bcs =
    f.name.bcs !== undefined && f.value_bcs !== undefined
      ? Buffer.concat([Buffer.from(id.slice(2), "hex"), Buffer.from(f.name.bcs, "base64"), Buffer.from(f.value_bcs, "base64")]).toString("base64")
      : undefined;
  return {
    object_id: id,
    type: `0x2::dynamic_field::Field<${f.name.type}, ${f.value_type}>`,
    version: parent.version,
    owner: { ObjectOwner: parent.object_id },
    fields: { id, name: f.name.value, value: f.value },
    ...(bcs !== undefined ? { bcs } : {}),
    previous_transaction: parent.previous_transaction,
  };
}

/**
 * The registry's owner → account entry as a node holds it: the `Field<address, ID>` object at its derived id under
 * the `accounts` table, which is how Sui clients read a table entry (getDynamicField reads that id).
 */
function registryEntry(account: Account, registryId: string, digest: string): StoredObject {
  const table = localRegistryTableId(registryId);
  const owner = Buffer.from(normalizeSuiAddress(account.owner).slice(2), "hex");
  const id = deriveDynamicFieldID(table, "address", owner);
  const value = Buffer.from(normalizeSuiAddress(account.id).slice(2), "hex");
  return {
    object_id: id,
    type: "0x2::dynamic_field::Field<address, 0x2::object::ID>",
    version: "1",
    owner: { ObjectOwner: table },
    fields: { id, name: account.owner, value: account.id },
    bcs: Buffer.concat([Buffer.from(id.slice(2), "hex"), owner, value]).toString("base64"),
    previous_transaction: digest,
  };
}

/** `at`: the ledger's registry and the digest of the transaction that emitted `e`. */
function eventWrites(e: ChainEvent, at: { readonly registryId: string; readonly digest: string }, out: Op[]): void {
  switch (e.type) {
    case "Genesis":
      out.push({ kind: "set", key: KEYS.genesis, value: { ...e.genesis } });
      return;
    case "AccountCreated": {
      out.push({ kind: "set", key: KEYS.account(e.account.id), value: { ...e.account } });
      out.push({ kind: "set", key: KEYS.owner(e.account.owner), value: { account_id: e.account.id } });
      const entry = registryEntry(e.account, at.registryId, at.digest);
      out.push({ kind: "set", key: KEYS.object(entry.object_id), value: { ...entry } });
      return;
    }
    case "DelegateKeyAdded": {
      out.push({ kind: "set", key: KEYS.account(e.account.id), value: { ...e.account } });
      const entry: DelegateEntry = {
        account_id: e.account.id,
        owner: e.account.owner,
        active: e.account.active,
        public_key: e.key.public_key,
        sui_address: e.key.sui_address,
      };
      out.push({ kind: "set", key: KEYS.delegateKey(e.key.public_key), value: { ...entry } });
      out.push({ kind: "set", key: KEYS.delegateAddress(e.key.sui_address), value: { ...entry } });
      return;
    }
    case "DelegateKeyRemoved":
      out.push({ kind: "set", key: KEYS.account(e.account.id), value: { ...e.account } });
      out.push({ kind: "set", key: KEYS.delegateKey(e.public_key), value: { ...TOMBSTONE } });
      out.push({ kind: "set", key: KEYS.delegateAddress(e.sui_address), value: { ...TOMBSTONE } });
      return;
    case "AccountDeactivated":
    case "AccountReactivated":
      out.push({ kind: "set", key: KEYS.account(e.account.id), value: { ...e.account } });
      delegateWrites(e.account, out);
      return;
    case "BlobRecorded": {
      const b = e.blob;
      const view = blobObjectView(b);
      out.push({ kind: "set", key: KEYS.object(b.object_id), value: { ...view } });
      // A blob recorded before state layout 4 has an object id derived from its transaction: its view is also put at
      // the derived id, where the ledger looks a blob up (getObject serves a key only under its own object id).
      const derived = deriveBlobObjectId(at.registryId, b.owner, b.blob_id);
      if (derived !== b.object_id) out.push({ kind: "set", key: KEYS.object(derived), value: { ...view } });
      const ns = namespaceScope(b.namespace);
      for (const [scope, index] of [
        [ALL_SCOPE, e.index_all],
        [ns, e.index_ns],
      ] as const) {
        out.push({ kind: "slots", key: KEYS.blobPage(b.owner, scope, pageOf(index)), slots: [[index, b]] });
        if (index % BLOB_PAGE_SIZE === 0) out.push({ kind: "set", key: KEYS.blobHead(b.owner, scope), value: { page: pageOf(index) } });
      }
      return;
    }
    case "BalanceChanged":
      out.push({ kind: "merge", key: KEYS.balance(e.address), fields: { [e.token]: e.amount } });
      return;
    case "WalrusObjectWritten": {
      out.push({ kind: "set", key: KEYS.object(e.object.object_id), value: { ...e.object } });
      const blob = e.object.fields as { blob_id?: string; end_epoch?: number; deletable?: boolean; certified_epoch?: number | null };
      if (typeof blob.blob_id === "string") {
        const registration: WalrusRegistration = { objectId: e.object.object_id, deletable: blob.deletable === true, endEpoch: Number(blob.end_epoch), certifiedEpoch: blob.certified_epoch ?? null };
        out.push({ kind: "merge", key: KEYS.walrusBlob(blob.blob_id), fields: { [e.object.object_id]: registration } });
      }
      return;
    }
    case "WalrusObjectRemoved":
      out.push({ kind: "set", key: KEYS.object(e.object_id), value: { ...TOMBSTONE } });
      if (e.blob_id !== undefined) out.push({ kind: "merge", key: KEYS.walrusBlob(e.blob_id), fields: { [e.object_id]: null } });
      return;
    case "ObjectPut":
      out.push({ kind: "set", key: KEYS.object(e.object.object_id), value: { ...e.object } });
      for (const f of e.dynamic_fields) {
        out.push({ kind: "set", key: KEYS.dynamicField(f.parent_id, dynamicFieldNameKey(f.name)), value: { ...f } });
        if (f.name.bcs !== undefined) {
          out.push({ kind: "set", key: KEYS.dynamicField(f.parent_id, dynamicFieldBcsKey({ type: f.name.type, bcs: f.name.bcs })), value: { ...f } });
        }
        if (f.field_id) out.push({ kind: "set", key: KEYS.object(f.field_id), value: { ...fieldObject(f, e.object) } });
      }
      return;
  }
}

function combine(a: Op, b: Op): Op {
  if (b.kind === "set") return b;
  if (b.kind === "merge") {
    if (a.kind === "set") return { kind: "set", key: a.key, value: { ...a.value, ...b.fields } };
    if (a.kind === "merge") return { kind: "merge", key: a.key, fields: { ...a.fields, ...b.fields } };
  }
  if (b.kind === "slots" && a.kind === "slots") return { kind: "slots", key: a.key, slots: [...a.slots, ...b.slots] };
  throw new Error(`incompatible writes to ${a.key}`);
}

export interface SequencedBlock {
  readonly seq: number;
  readonly records: readonly ChainRecord[];
}

/**
 * The KV writes of consecutive blocks, one op per key (receipts included); `registryId` is the ledger's account
 * registry, whose table entries are objects. All ops are absolute or positional, so the
 * combined ops applied at the last block's sequence give the same state as applying the blocks one by one.
 */
export function opsOf(blocks: readonly SequencedBlock[], registryId: string): Op[] {
  const raw: Op[] = [];
  for (const { seq, records } of blocks) {
    records.forEach((record, index) => {
      for (const e of record.events) eventWrites(e, { registryId, digest: record.digest }, raw);
      const { tx: _tx, ...rest } = record;
      const receipt: TxReceipt = { ...rest, seq, index };
      raw.push({ kind: "set", key: KEYS.tx(record.digest), value: { ...receipt } });
    });
  }
  const byKey = new Map<string, Op>();
  for (const op of raw) {
    const prev = byKey.get(op.key);
    byKey.set(op.key, prev ? combine(prev, op) : op);
  }
  return [...byKey.values()];
}

/** The new stored value of `op` over the current one (null when absent or a tombstone). */
export function applyOp(op: Op, current: Record<string, unknown> | null, seq: number): Record<string, unknown> {
  switch (op.kind) {
    case "set":
      return { ...op.value, _seq: seq };
    case "merge":
      return { ...(current ?? {}), ...op.fields, _seq: seq };
    case "slots": {
      const items = Array.isArray(current?.items) ? [...(current.items as unknown[])] : [];
      for (const [index, item] of op.slots) items[index % BLOB_PAGE_SIZE] = item;
      return { items, _seq: seq };
    }
  }
}
