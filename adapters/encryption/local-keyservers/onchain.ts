// The on-chain records of key servers, as @mysten/seal reads them: a `key_server::KeyServer` object
// {id, first_version, last_version} with one dynamic field per supported version (u64 name): V1 {name, url,
// key_type, pk} and V2 {name, key_type, pk, server_type: Independent{url}}. Both are published, first=1 last=2,
// so SDKs that know only V1 and current ones (which prefer V2) both resolve the server.

import { bcs } from "@mysten/sui/bcs";
import { normalizeSuiAddress } from "@mysten/sui/utils";
import { createHash } from "node:crypto";
import { dynamicFieldObject, moveObject, type ChainObject } from "../../chain/local/rpc/objects.ts";

/** The package id our local chain uses for Seal's key_server module (any stable id works: clients only read it). */
export const LOCAL_SEAL_PACKAGE_ID = normalizeSuiAddress(createHash("sha256").update("memrelay/local-seal-package").digest("hex"));

const KeyServerParent = bcs.struct("KeyServer", { id: bcs.Address, firstVersion: bcs.u64(), lastVersion: bcs.u64() });
const KeyServerV1 = bcs.struct("KeyServerV1", { name: bcs.string(), url: bcs.string(), keyType: bcs.u8(), pk: bcs.byteVector() });
const ServerType = bcs.enum("ServerType", {
  Independent: bcs.struct("Independent", { url: bcs.string() }),
  Committee: bcs.struct("Committee", {
    version: bcs.u32(),
    threshold: bcs.u16(),
    partialKeyServers: bcs.vector(
      bcs.struct("PartialKeyServer", { name: bcs.string(), url: bcs.string(), partialPk: bcs.byteVector(), partyId: bcs.u16() }),
    ),
  }),
});
const KeyServerV2 = bcs.struct("KeyServerV2", { name: bcs.string(), keyType: bcs.u8(), pk: bcs.byteVector(), serverType: ServerType });

export interface KeyServerRecord {
  readonly objectId: string;
  readonly name: string;
  readonly url: string;
  /** 96-byte compressed G2 master public key. */
  readonly publicKey: Uint8Array;
}

interface KeyServerParts {
  readonly parentType: string;
  readonly parentBcs: Uint8Array;
  readonly parentFields: Record<string, unknown>;
  readonly fields: readonly { nameBcs: Uint8Array; version: number; valueType: string; valueBcs: Uint8Array; value: Record<string, unknown> }[];
}

function parts(ks: KeyServerRecord, sealPackageId: string): KeyServerParts {
  const pkg = normalizeSuiAddress(sealPackageId);
  const id = normalizeSuiAddress(ks.objectId);
  const u64 = (n: number) => bcs.u64().serialize(n).toBytes();
  const pkHex = Buffer.from(ks.publicKey).toString("hex");
  return {
    parentType: `${pkg}::key_server::KeyServer`,
    parentBcs: KeyServerParent.serialize({ id, firstVersion: 1n, lastVersion: 2n }).toBytes(),
    parentFields: { id: { id }, first_version: "1", last_version: "2" },
    fields: [
      {
        nameBcs: u64(1),
        version: 1,
        valueType: `${pkg}::key_server::KeyServerV1`,
        valueBcs: KeyServerV1.serialize({ name: ks.name, url: ks.url, keyType: 0, pk: ks.publicKey }).toBytes(),
        value: { name: ks.name, url: ks.url, key_type: 0, pk: pkHex },
      },
      {
        nameBcs: u64(2),
        version: 2,
        valueType: `${pkg}::key_server::KeyServerV2`,
        valueBcs: KeyServerV2.serialize({ name: ks.name, keyType: 0, pk: ks.publicKey, serverType: { Independent: { url: ks.url } } }).toBytes(),
        value: { name: ks.name, key_type: 0, pk: pkHex, server_type: { Independent: { url: ks.url } } },
      },
    ],
  };
}

/** The parent object and its two versioned dynamic fields, ready for an object registry's putObject. */
export function keyServerObjects(ks: KeyServerRecord, opts: { sealPackageId?: string; version?: string } = {}): ChainObject[] {
  const p = parts(ks, opts.sealPackageId ?? LOCAL_SEAL_PACKAGE_ID);
  const id = normalizeSuiAddress(ks.objectId);
  const version = opts.version ?? "1";
  const parent = moveObject({ objectId: id, type: p.parentType, contents: p.parentBcs, owner: { kind: "Immutable" }, version, fields: p.parentFields });
  return [
    parent,
    ...p.fields.map((f) =>
      dynamicFieldObject({ parentId: id, name: { type: "u64", bcs: f.nameBcs }, valueType: f.valueType, valueBcs: f.valueBcs, version }),
    ),
  ];
}

/**
 * The same records in the local ledger's put_object form ({type, version, fields, owner, bcs, dynamicFields}),
 * base64 BCS throughout, names given by BCS so the ledger also stores each field object at its derived id.
 */
export function keyServerLedgerInput(ks: KeyServerRecord, opts: { sealPackageId?: string; version?: string } = {}): {
  objectId: string;
  input: {
    type: string;
    version: string;
    fields: unknown;
    owner: "Immutable";
    bcs: string;
    dynamicFields: { name: { type: string; value: string; bcs: string }; value_type: string; value: unknown; value_bcs: string }[];
  };
} {
  const p = parts(ks, opts.sealPackageId ?? LOCAL_SEAL_PACKAGE_ID);
  const b64 = (b: Uint8Array) => Buffer.from(b).toString("base64");
  return {
    objectId: normalizeSuiAddress(ks.objectId),
    input: {
      type: p.parentType,
      version: opts.version ?? "1",
      fields: p.parentFields,
      owner: "Immutable",
      bcs: b64(p.parentBcs),
      dynamicFields: p.fields.map((f) => ({
        name: { type: "u64", value: String(f.version), bcs: b64(f.nameBcs) },
        value_type: f.valueType,
        value: f.value,
        value_bcs: b64(f.valueBcs),
      })),
    },
  };
}
