// Objects as the local Sui JSON-RPC server (adapters/chain/local/rpc/server.ts) serves them, and the registry interface it reads.
//
// The ledger owns the objects; this file only fixes their shape (what a Sui full node would return) and gives
// builders for the few kinds the Seal SDK reads: the package (version must be "1"), key-server objects and their
// versioned dynamic fields. `MemoryObjectSource` is an in-memory registry with optional append-only file
// persistence, for tests and standalone use.

import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { createHash } from "node:crypto";
import { TypeTagSerializer } from "@mysten/sui/bcs";
import { deriveDynamicFieldID, normalizeStructTag, normalizeSuiAddress, toBase58 } from "@mysten/sui/utils";

export type ChainOwner =
  | { readonly kind: "Immutable" }
  | { readonly kind: "AddressOwner"; readonly address: string }
  | { readonly kind: "ObjectOwner"; readonly address: string }
  | { readonly kind: "Shared"; readonly initialSharedVersion: string };

/** A normalized Move function signature in Sui JSON-RPC form (`SuiMoveNormalizedFunction`). */
export interface NormalizedMoveFunction {
  readonly visibility: "Private" | "Public" | "Friend";
  readonly isEntry: boolean;
  readonly typeParameters: readonly { abilities: string[] }[];
  readonly parameters: readonly unknown[];
  readonly return: readonly unknown[];
}

export interface ChainObject {
  /** 0x + 64 lowercase hex. */
  readonly objectId: string;
  /** u64 as a decimal string. */
  readonly version: string;
  /** base58 of 32 bytes. */
  readonly digest: string;
  /** "package" for packages, otherwise a Move struct tag. */
  readonly type: string;
  readonly owner: ChainOwner;
  /** BCS of the Move struct (move objects only; for dynamic fields: id ‖ name ‖ value). */
  readonly contents?: Uint8Array;
  readonly hasPublicTransfer?: boolean;
  readonly previousTransaction?: string;
  /** Field values for `showContent` (optional; the Seal SDK reads BCS only). */
  readonly fields?: Readonly<Record<string, unknown>>;
  /** Packages only: normalized function signatures keyed by `module::function`. */
  readonly functions?: Readonly<Record<string, NormalizedMoveFunction>>;
}

export interface DynamicFieldName {
  /** Move type of the name, e.g. "u64". */
  readonly type: string;
  /** BCS bytes of the name value. */
  readonly bcs: Uint8Array;
}

/**
 * What the RPC server reads. `getObject` must also resolve dynamic-field objects by their derived field id
 * (`deriveDynamicFieldID(parent, nameType, nameBcs)`): the SDK's core client reads dynamic fields that way.
 */
export interface ObjectSource {
  getObject(objectId: string): Promise<ChainObject | null> | ChainObject | null;
  getDynamicField(parentId: string, name: DynamicFieldName): Promise<ChainObject | null> | ChainObject | null;
}

export const SUI_FRAMEWORK = normalizeSuiAddress("0x2");
const GENESIS_TX = toBase58(new Uint8Array(32));

/** A stable 32-byte digest (base58) over the given parts. */
export function digestOf(...parts: (string | Uint8Array)[]): string {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return toBase58(new Uint8Array(h.digest()));
}

export function dynamicFieldId(parentId: string, name: DynamicFieldName): string {
  return deriveDynamicFieldID(normalizeSuiAddress(parentId), TypeTagSerializer.parseFromStr(name.type, true), name.bcs);
}

/** A package object at version 1 (Seal requires the first version), optionally with function signatures. */
export function packageObject(packageId: string, functions: Record<string, NormalizedMoveFunction> = {}): ChainObject {
  const id = normalizeSuiAddress(packageId);
  return {
    objectId: id,
    version: "1",
    digest: digestOf("package", id),
    type: "package",
    owner: { kind: "Immutable" },
    previousTransaction: GENESIS_TX,
    functions,
  };
}

export function moveObject(input: {
  objectId: string;
  type: string;
  contents: Uint8Array;
  owner: ChainOwner;
  version?: string;
  hasPublicTransfer?: boolean;
  fields?: Record<string, unknown>;
}): ChainObject {
  const id = normalizeSuiAddress(input.objectId);
  const version = input.version ?? "1";
  return {
    objectId: id,
    version,
    digest: digestOf(id, version, input.contents),
    type: normalizeStructTag(input.type),
    owner: input.owner,
    contents: input.contents,
    hasPublicTransfer: input.hasPublicTransfer ?? false,
    previousTransaction: GENESIS_TX,
    fields: input.fields,
  };
}

/** A `0x2::dynamic_field::Field<Name, Value>` object under `parentId`, stored at its derived id. */
export function dynamicFieldObject(input: {
  parentId: string;
  name: DynamicFieldName;
  valueType: string;
  valueBcs: Uint8Array;
  version?: string;
}): ChainObject {
  const fieldId = dynamicFieldId(input.parentId, input.name);
  const idBytes = Buffer.from(fieldId.slice(2), "hex");
  const contents = new Uint8Array(idBytes.length + input.name.bcs.length + input.valueBcs.length);
  contents.set(idBytes, 0);
  contents.set(input.name.bcs, idBytes.length);
  contents.set(input.valueBcs, idBytes.length + input.name.bcs.length);
  return moveObject({
    objectId: fieldId,
    type: `${SUI_FRAMEWORK}::dynamic_field::Field<${input.name.type}, ${input.valueType}>`,
    contents,
    owner: { kind: "ObjectOwner", address: normalizeSuiAddress(input.parentId) },
    version: input.version,
  });
}

/**
 * The signature of `<package>::<module>::seal_approve(id: vector<u8>, account: &<package>::<module>::<struct>, ctx)`,
 * the shape MemWal clients call. Our key servers accept `seal_approve(id)` and `seal_approve(id, account)` alike.
 */
export function sealApproveFunction(packageId: string, module = "account", accountStruct = "MemWalAccount"): NormalizedMoveFunction {
  return {
    visibility: "Private",
    isEntry: true,
    typeParameters: [],
    parameters: [
      { Vector: "U8" },
      { Reference: { Struct: { address: normalizeSuiAddress(packageId), module, name: accountStruct, typeArguments: [] } } },
      { Reference: { Struct: { address: SUI_FRAMEWORK, module: "tx_context", name: "TxContext", typeArguments: [] } } },
    ],
    return: [],
  };
}

// ---------------------------------------------------------------- in-memory registry (optionally file-backed)

interface StoredLine {
  objectId: string;
  version: string;
  digest: string;
  type: string;
  owner: ChainOwner;
  contents?: string;
  hasPublicTransfer?: boolean;
  previousTransaction?: string;
  fields?: Record<string, unknown>;
  functions?: Record<string, NormalizedMoveFunction>;
}

function toLine(o: ChainObject): StoredLine {
  return { ...o, contents: o.contents ? Buffer.from(o.contents).toString("base64") : undefined } as StoredLine;
}

function fromLine(l: StoredLine): ChainObject {
  return { ...l, contents: l.contents !== undefined ? new Uint8Array(Buffer.from(l.contents, "base64")) : undefined };
}

/**
 * A registry of objects by id. With `file`, every put is appended as one JSON line and the file is replayed on
 * construction (last write per id wins), so a restarted process serves the same objects.
 */
export class MemoryObjectSource implements ObjectSource {
  readonly #objects = new Map<string, ChainObject>();
  readonly #file: string | undefined;

  constructor(opts: { file?: string } = {}) {
    this.#file = opts.file;
    if (this.#file && existsSync(this.#file)) {
      for (const line of readFileSync(this.#file, "utf8").split("\n")) {
        if (!line.trim()) continue;
        try {
          const o = fromLine(JSON.parse(line) as StoredLine);
          this.#objects.set(o.objectId, o);
        } catch {
          // A torn last line after a crash: ignore it, the previous versions stand.
        }
      }
    }
  }

  putObject(object: ChainObject): void {
    const o = { ...object, objectId: normalizeSuiAddress(object.objectId) };
    this.#objects.set(o.objectId, o);
    if (this.#file) {
      mkdirSync(dirname(this.#file), { recursive: true });
      appendFileSync(this.#file, JSON.stringify(toLine(o)) + "\n", { mode: 0o600 });
    }
  }

  getObject(objectId: string): ChainObject | null {
    return this.#objects.get(normalizeSuiAddress(objectId)) ?? null;
  }

  getDynamicField(parentId: string, name: DynamicFieldName): ChainObject | null {
    return this.getObject(dynamicFieldId(parentId, name));
  }

  get size(): number {
    return this.#objects.size;
  }
}
