// Keys of the `chain_state` KV bucket, the materialised ledger state. One place, so a search for a key finds its writer.
import { createHash } from "node:crypto";
import { blake2b } from "@noble/hashes/blake2.js";
import { BLOB_PAGE_SIZE } from "./model.ts";

export const CHAIN_STATE_BUCKET = "chain_state";
export const CHAIN_TX_SUBJECT = "chain.tx";
/**
 * Version of the state's key layout. A ledger opening state of another layout materialises the chain.tx stream again
 * (every write is idempotent and keys of the old layout are simply no longer read). 2: blob index pages of 8 items. 3: the registry's
 * owner → account entries as objects at their derived ids. 4: a recorded blob is found by its object at an id derived from
 * (registry, owner, blob id), without a `blob.` key; the index head (`bi.`, namespace scopes by another hash) names its
 * newest page and is written once a page.
 */
export const CHAIN_STATE_LAYOUT = 4;

const encoder = new TextEncoder();

export const KEYS = {
  /** {seq}: every chain.tx message up to seq is fully materialised. */
  applied: "meta.applied",
  /** {version}: the key layout the state was materialised with (CHAIN_STATE_LAYOUT). */
  layout: "meta.layout",
  genesis: "meta.genesis",
  tx: (digest: string) => `tx.${digest}`,
  account: (id: string) => `acct.${id}`,
  owner: (address: string) => `owner.${address}`,
  /** delegate public key (hex) -> {account_id, owner, active} */
  delegateKey: (publicKeyHex: string) => `dk.${publicKeyHex}`,
  /** delegate Sui address -> {account_id, owner, active, public_key} */
  delegateAddress: (address: string) => `da.${address}`,
  balance: (address: string) => `bal.${address}`,
  /**
   * {page}: the newest page of an owner's blob index in a scope, written when that page starts; the count is the
   * page's number × BLOB_PAGE_SIZE plus its items. (`bix.` heads and pages of layouts up to 3 are no longer read.)
   */
  blobHead: (owner: string, scope: string) => `bi.${owner}.${scope}`,
  /** {items}: BLOB_PAGE_SIZE BlobRecords by position, oldest first. */
  blobPage: (owner: string, scope: string, page: number) => `bi.${owner}.${scope}.${page}`,
  object: (id: string) => `obj.${id}`,
  /** {<Blob object id>: WalrusRegistration, or null once deleted}: the Walrus Blob objects registered for a blob id (u256, decimal), as storage nodes look it up. */
  walrusBlob: (blobIdU256: string) => `wblob.${blobIdU256}`,
  /** nameKey: dynamicFieldNameKey (by JSON value) or dynamicFieldBcsKey (by BCS bytes) */
  dynamicField: (parentId: string, nameKey: string) => `df.${parentId}.${nameKey}`,
} as const;

export const ALL_SCOPE = "all";

/**
 * Index scope of one namespace: a hash, since namespaces may hold characters a KV key cannot. Node's native BLAKE2b
 * (a tenth of the JavaScript one's cost; it runs several times per recorded blob), truncated to 16 bytes.
 */
export function namespaceScope(namespace: string): string {
  return "ns-" + createHash("blake2b512").update(namespace).digest("hex").slice(0, 32);
}

export function pageOf(index: number): number {
  return Math.floor(index / BLOB_PAGE_SIZE);
}

export interface BlobIndexHead {
  readonly page: number;
}

export interface BlobIndexPage<T> {
  readonly items: readonly (T | null)[];
}

/** Items in an index: those of the pages before the newest, and the newest page's. */
export function indexCount(head: BlobIndexHead | null, newest: BlobIndexPage<unknown> | null): number {
  return head ? head.page * BLOB_PAGE_SIZE + (newest?.items.length ?? 0) : 0;
}

/** JSON with sorted object keys and numbers/bigints as decimal strings, so `1`, `"1"` and `1n` name the same field. */
export function canonicalJson(value: unknown): string {
  if (typeof value === "number" || typeof value === "bigint") return JSON.stringify(String(value));
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

/** Key of a dynamic field name: hash of its type and canonical JSON value. */
export function dynamicFieldNameKey(name: { type: string; value: unknown }): string {
  return Buffer.from(blake2b(encoder.encode(`${name.type}\u0000${canonicalJson(name.value)}`), { dkLen: 16 })).toString("hex");
}

/** Key of a dynamic field name given as BCS bytes (base64). */
export function dynamicFieldBcsKey(name: { type: string; bcs: string }): string {
  const bytes = Buffer.from(name.bcs, "base64").toString("hex");
  return "b" + Buffer.from(blake2b(encoder.encode(`${name.type}\u0000${bytes}`), { dkLen: 16 })).toString("hex");
}
