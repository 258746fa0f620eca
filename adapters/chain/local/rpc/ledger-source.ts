// Adapts the local ledger's object registry (put_object records: {object_id, type, version, owner, fields, bcs?},
// dynamic fields stored by name with their `0x2::dynamic_field::Field` object at the derived id) to the
// ObjectSource the RPC listener serves (JSON-RPC and gRPC). Structural: it names only the reads it uses, not the ledger's internals.

import { accountRegistryType, memoryBlobType, memWalAccountType } from "../../../../schemas/chain.ts";
import { fromBase64, normalizeSuiAddress } from "@mysten/sui/utils";
import type { Account } from "../model.ts";
import { normalizedMoveFunctions } from "../../sui/move-calls.ts";
import { localRegistryTableId } from "../transaction-data.ts";
import { AccountRegistryBcs, MemoryBlobBcs, MemWalAccountBcs } from "../../move-layouts.ts";
import { digestOf, dynamicFieldId, moveObject, packageObject, sealApproveFunction, type ChainObject, type ChainOwner, type DynamicFieldName, type NormalizedMoveFunction, type ObjectSource } from "./objects.ts";

export type LedgerOwner = { AddressOwner: string } | { ObjectOwner: string } | { Shared: { initial_shared_version: string | number } } | "Immutable";

export interface LedgerStoredObject {
  readonly object_id: string;
  readonly type: string;
  readonly version: string;
  readonly owner: LedgerOwner;
  readonly fields: unknown;
  /** base64 BCS of the Move contents. */
  readonly bcs?: string;
  readonly previous_transaction?: string;
}

export interface LedgerObjectReader {
  getObject(objectId: string): Promise<LedgerStoredObject | null>;
  getDynamicField(parentId: string, name: { readonly type: string; readonly bcs: string }): Promise<{ readonly field_id?: string } | null>;
}

function owner(o: LedgerOwner): ChainOwner {
  if (o === "Immutable") return { kind: "Immutable" };
  if ("AddressOwner" in o) return { kind: "AddressOwner", address: normalizeSuiAddress(o.AddressOwner) };
  if ("ObjectOwner" in o) return { kind: "ObjectOwner", address: normalizeSuiAddress(o.ObjectOwner) };
  return { kind: "Shared", initialSharedVersion: String(o.Shared.initial_shared_version) };
}

/** The digest an object is served with (and an owned-object input must name). */
export function ledgerObjectDigest(o: LedgerStoredObject): string {
  // The ledger does not keep object digests; a stable one from (id, version, contents) is what clients need.
  return digestOf("ledger", o.object_id, "\n", String(o.version), "\n", o.bcs ?? "");
}

/**
 * The Move contents of a stored object: its stored BCS, or for a memory blob (the ledger keeps its fields only) the
 * BCS of those fields, which is what a node returns and what the chain port parses.
 */
function contentsOf(o: LedgerStoredObject, fields: Record<string, unknown>): Uint8Array {
  if (o.bcs !== undefined) return fromBase64(o.bcs);
  if (typeof o.owner === "object" && "AddressOwner" in o.owner && typeof fields.package_id === "string" && o.type === memoryBlobType(fields.package_id)) {
    return MemoryBlobBcs.serialize({
      id: o.object_id,
      owner: o.owner.AddressOwner,
      blob_id: String(fields.blob_id),
      namespace: String(fields.namespace),
      package_id: String(fields.package_id),
      size: String(fields.size),
      created_at: String(fields.created_at),
    }).toBytes();
  }
  return new Uint8Array();
}

export function fromLedgerObject(o: LedgerStoredObject): ChainObject {
  const isPackage = o.type === "package";
  const fields = (o.fields ?? {}) as Record<string, unknown>;
  return {
    objectId: normalizeSuiAddress(o.object_id),
    version: String(o.version),
    digest: ledgerObjectDigest(o),
    type: o.type,
    owner: owner(o.owner),
    contents: isPackage && o.bcs === undefined ? undefined : contentsOf(o, fields),
    hasPublicTransfer: false,
    previousTransaction: o.previous_transaction,
    fields: isPackage ? undefined : fields,
    functions: isPackage ? (fields.functions as Record<string, NormalizedMoveFunction> | undefined) : undefined,
  };
}

/** A ledger account as the shared `account::MemWalAccount` object of `packageId`, contents in BCS and as JSON fields. */
function accountObject(account: Account, packageId: string): ChainObject {
  const keys = account.delegate_keys.map((k) => ({ public_key: [...Buffer.from(k.public_key, "hex")], sui_address: k.sui_address, label: k.label, created_at: String(k.created_at) }));
  return moveObject({
    objectId: account.id,
    type: memWalAccountType(normalizeSuiAddress(packageId)),
    contents: MemWalAccountBcs.serialize({ id: account.id, owner: account.owner, delegate_keys: keys, created_at: String(account.created_at), active: account.active }).toBytes(),
    owner: { kind: "Shared", initialSharedVersion: "1" },
    version: String(account.version),
    fields: {
      id: { id: account.id },
      owner: account.owner,
      delegate_keys: keys.map((fields) => ({ type: `${normalizeSuiAddress(packageId)}::account::DelegateKey`, fields })),
      created_at: String(account.created_at),
      active: account.active,
    },
  });
}

/** The shared `account::AccountRegistry`, as far as readers use it: the id of its `accounts` table (its size is not tracked). */
function registryObject(registryId: string, packageId: string): ChainObject {
  const id = normalizeSuiAddress(registryId);
  const table = localRegistryTableId(id);
  return {
    objectId: id,
    version: "1",
    digest: digestOf("registry", id),
    type: accountRegistryType(normalizeSuiAddress(packageId)),
    owner: { kind: "Shared", initialSharedVersion: "1" },
    contents: AccountRegistryBcs.serialize({ id, accounts: { id: table, size: "0" } }).toBytes(),
    hasPublicTransfer: false,
    fields: { id: { id }, accounts: { type: "0x2::table::Table<address, 0x2::object::ID>", fields: { id: { id: table } } } },
  };
}

export interface LedgerAccounts {
  readonly packageId: string;
  readonly registryId: string;
  getAccount(id: string): Promise<Account | null>;
}

/**
 * An ObjectSource over the ledger. `packageIds` are served as version-1 package objects carrying the signatures of
 * the ledger's Move calls and `account::seal_approve` when the ledger has no package object of its own; with `accounts`, the ledger's
 * accounts are served as shared `account::MemWalAccount` objects (what `tx.object(accountId)` and Seal's
 * `seal_approve(id, &account)` resolve). The registry's owner → account entries are ledger objects at their derived ids.
 */
export function ledgerObjectSource(ledger: LedgerObjectReader, opts: { packageIds?: readonly string[]; accounts?: LedgerAccounts } = {}): ObjectSource {
  const packages = new Map((opts.packageIds ?? []).map((p) => [normalizeSuiAddress(p), packageObject(p, { ...normalizedMoveFunctions(p), "account::seal_approve": sealApproveFunction(p) })]));
  return {
    async getObject(objectId: string): Promise<ChainObject | null> {
      const id = normalizeSuiAddress(objectId);
      const o = await ledger.getObject(id);
      if (o) return fromLedgerObject(o);
      const accounts = opts.accounts;
      if (accounts && id === normalizeSuiAddress(accounts.registryId)) return registryObject(id, accounts.packageId);
      const account = await accounts?.getAccount(id);
      if (account) return accountObject(account, accounts!.packageId);
      return packages.get(id) ?? null;
    },
    async getDynamicField(parentId: string, name: DynamicFieldName): Promise<ChainObject | null> {
      const atDerivedId = await ledger.getObject(dynamicFieldId(parentId, name));
      if (atDerivedId) return fromLedgerObject(atDerivedId);
      const f = await ledger.getDynamicField(normalizeSuiAddress(parentId), { type: name.type, bcs: Buffer.from(name.bcs).toString("base64") });
      if (!f?.field_id) return null;
      const o = await ledger.getObject(f.field_id);
      return o ? fromLedgerObject(o) : null;
    },
  };
}
