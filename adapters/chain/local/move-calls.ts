// Which Move function each ledger transaction kind calls, and how its arguments travel as programmable-transaction
// inputs. One declarative table serves both directions: builders encode a kind's args into MoveCall inputs, the ledger
// decodes a MoveCall back into the kind's args and refuses anything else. The functions are those of move/memrelay
// (the `account` module keeps MemWal's entry signatures).
import { bcs } from "@mysten/sui/bcs";
import { normalizeSuiAddress } from "@mysten/sui/utils";
import { suiAddressOf } from "./keys.ts";
import { MAX_GRANT_GROUPS } from "./console-model.ts";
import type { TxArgs, TxKind } from "./model.ts";

/** Sui's shared Clock object. */
export const CLOCK_ID = normalizeSuiAddress("0x6");
/** Objects the ledger creates are shared from their first version. */
export const LEDGER_INITIAL_SHARED_VERSION = "1";

/** How a pure argument is carried: its BCS type and its JSON form in the kind's args. */
export type PureCodec =
  | "address" // address ↔ 0x… string
  | "string" // 0x1::string::String ↔ string
  | "u64" // u64 ↔ safe integer
  | "u64-decimal" // u64 ↔ decimal string
  | "key-bytes" // vector<u8> ↔ lower-case hex
  | "json-bytes" // vector<u8> ↔ any JSON value (UTF-8)
  | "scope"; // u8 ↔ "read" (0) | "readwrite" (1)

export type MoveParam =
  /** a shared object of the package's `module::struct` whose id is `args[field]` (or, with `each`, one element of it) */
  | { readonly input: "shared"; readonly field: string; readonly struct: string; readonly mutable: boolean }
  /** the account registry of the target */
  | { readonly input: "registry" }
  | { readonly input: "clock" }
  | { readonly input: "pure"; readonly field: string; readonly codec: PureCodec }
  /** a pure address computed from the other args; the ledger refuses a call whose value differs */
  | { readonly input: "derived"; readonly name: string; readonly derive: (args: Record<string, unknown>) => string };

export interface MoveCallSpec {
  readonly module: string;
  readonly fn: string;
  readonly params: readonly MoveParam[];
  /** An array field with one call per element (Move takes one `&mut` object per call); at most `max` calls. */
  readonly each?: { readonly field: string; readonly max: number };
}

const shared = (field: string, struct: string, mutable = true): MoveParam => ({ input: "shared", field, struct, mutable });
const pure = (field: string, codec: PureCodec): MoveParam => ({ input: "pure", field, codec });
const REGISTRY: MoveParam = { input: "registry" };
const CLOCK: MoveParam = { input: "clock" };
const delegateAddress: MoveParam = {
  input: "derived",
  name: "sui_address",
  derive: (a) => suiAddressOf(Buffer.from(String(a.public_key), "hex")),
};

export const MOVE_CALLS: { readonly [K in TxKind]: MoveCallSpec } = {
  // The local network's bootstrap, faucet and address-balance transfers: calls the ledger implements natively (move/README.md).
  genesis: { module: "localnet", fn: "genesis", params: [pure("operator_public_key", "key-bytes"), pure("package_id", "address")] },
  mint: { module: "localnet", fn: "mint", params: [pure("to", "address"), pure("token", "string"), pure("amount", "u64-decimal")] },
  put_object: { module: "localnet", fn: "put_object", params: [pure("object", "json-bytes")] },
  transfer: { module: "localnet", fn: "transfer", params: [pure("to", "address"), pure("token", "string"), pure("amount", "u64-decimal")] },
  // MemWal's account module.
  create_account: { module: "account", fn: "create_account", params: [REGISTRY, CLOCK] },
  add_delegate_key: {
    module: "account",
    fn: "add_delegate_key",
    params: [shared("account_id", "MemWalAccount"), pure("public_key", "key-bytes"), delegateAddress, pure("label", "string"), CLOCK],
  },
  remove_delegate_key: { module: "account", fn: "remove_delegate_key", params: [shared("account_id", "MemWalAccount"), pure("public_key", "key-bytes")] },
  deactivate_account: { module: "account", fn: "deactivate_account", params: [shared("account_id", "MemWalAccount")] },
  reactivate_account: { module: "account", fn: "reactivate_account", params: [shared("account_id", "MemWalAccount")] },
  // The relayer's blob registration with its namespace and package attributes.
  record_blob: {
    module: "blob_registry",
    fn: "record_blob",
    params: [pure("owner", "address"), pure("blob_id", "string"), pure("namespace", "string"), pure("package_id", "address"), pure("size", "u64"), CLOCK],
  },
  // The developer console's bucket policies and access groups.
  bucket_policy_create: { module: "bucket_policy", fn: "create_policy", params: [pure("bucket_id", "string"), pure("space_id", "string")] },
  bucket_group_create: { module: "bucket_policy", fn: "create_group", params: [shared("policy_id", "BucketPolicy"), pure("bucket_id", "string")] },
  grant_bucket_access: {
    module: "bucket_policy",
    fn: "grant_access",
    params: [shared("group_ids", "AccessGroup"), pure("recipient", "address"), pure("scope", "scope")],
    each: { field: "group_ids", max: MAX_GRANT_GROUPS },
  },
  share_admin: { module: "bucket_policy", fn: "share_admin", params: [shared("group_id", "AccessGroup"), pure("member", "address")] },
  unshare: { module: "bucket_policy", fn: "unshare", params: [shared("group_id", "AccessGroup"), pure("member", "address")] },
  unshare_bucket_access: { module: "bucket_policy", fn: "unshare_service_signer", params: [shared("group_id", "AccessGroup"), pure("service_signer", "address")] },
};

const BY_FUNCTION = new Map<string, TxKind>(Object.entries(MOVE_CALLS).map(([kind, spec]) => [`${spec.module}::${spec.fn}`, kind as TxKind]));

/** The kind a `module::function` call stands for, or null when the ledger does not implement it. */
export function kindOfCall(module: string, fn: string): TxKind | null {
  return BY_FUNCTION.get(`${module}::${fn}`) ?? null;
}

const BYTES = bcs.vector(bcs.u8());
const SCOPES = ["read", "readwrite"] as const;

/** BCS bytes of one pure argument. Throws on a value the codec cannot carry. */
export function encodePure(codec: PureCodec, value: unknown): Uint8Array {
  switch (codec) {
    case "address":
      return bcs.Address.serialize(String(value)).toBytes();
    case "string":
      if (typeof value !== "string") throw new Error("expected a string");
      return bcs.String.serialize(value).toBytes();
    case "u64":
      if (!Number.isSafeInteger(value) || (value as number) < 0) throw new Error("expected a non-negative integer");
      return bcs.u64().serialize(value as number).toBytes();
    case "u64-decimal":
      if (typeof value !== "string" || !/^(0|[1-9][0-9]{0,19})$/.test(value)) throw new Error("expected a u64 decimal string");
      return bcs.u64().serialize(value).toBytes();
    case "key-bytes":
      if (typeof value !== "string" || !/^([0-9a-fA-F]{2})*$/.test(value)) throw new Error("expected hex bytes");
      return BYTES.serialize(Buffer.from(value, "hex")).toBytes();
    case "json-bytes":
      return BYTES.serialize(Buffer.from(JSON.stringify(value), "utf8")).toBytes();
    case "scope": {
      const i = SCOPES.indexOf(value as (typeof SCOPES)[number]);
      if (i < 0) throw new Error("expected read or readwrite");
      return bcs.u8().serialize(i).toBytes();
    }
  }
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/** The JSON value of one pure argument, or an error message. Trailing or non-canonical bytes are refused. */
export function decodePure(codec: PureCodec, bytes: Uint8Array): { value: unknown } | { error: string } {
  try {
    let value: unknown;
    switch (codec) {
      case "address":
        value = bcs.Address.parse(bytes);
        break;
      case "string":
        value = bcs.String.parse(bytes);
        break;
      case "u64": {
        const n = BigInt(bcs.u64().parse(bytes));
        if (n > BigInt(Number.MAX_SAFE_INTEGER)) return { error: "u64 argument out of range" };
        value = Number(n);
        break;
      }
      case "u64-decimal":
        value = bcs.u64().parse(bytes);
        break;
      case "key-bytes":
        value = Buffer.from(BYTES.parse(bytes)).toString("hex");
        break;
      case "json-bytes":
        value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(BYTES.parse(bytes))));
        break;
      case "scope":
        value = SCOPES[bcs.u8().parse(bytes)];
        if (value === undefined) return { error: "scope must be 0 (read) or 1 (readwrite)" };
        break;
    }
    // Canonical only: re-encoding must give the same bytes (no trailing bytes, no alternative encodings).
    if (!sameBytes(encodePure(codec, value), bytes)) return { error: "argument bytes are not canonical BCS" };
    return { value };
  } catch (err) {
    return { error: `argument is not a valid ${codec}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

const STRUCT = (address: string, module: string, name: string) => ({ Struct: { address: normalizeSuiAddress(address), module, name, typeArguments: [] } });
const PURE_TYPES: Record<PureCodec, unknown> = {
  address: "Address",
  string: STRUCT("0x1", "string", "String"),
  u64: "U64",
  "u64-decimal": "U64",
  "key-bytes": { Vector: "U8" },
  "json-bytes": { Vector: "U8" },
  scope: "U8",
};

/**
 * The calls' signatures as `sui_getNormalizedMoveFunction` answers them (keyed `module::function`), derived from the
 * same table: what the SDK reads to resolve `tx.object(id)` and raw pure values in a MoveCall.
 */
export function normalizedMoveFunctions(packageId: string): Record<string, { visibility: "Private"; isEntry: true; typeParameters: []; parameters: unknown[]; return: [] }> {
  const out: Record<string, { visibility: "Private"; isEntry: true; typeParameters: []; parameters: unknown[]; return: [] }> = {};
  for (const spec of Object.values(MOVE_CALLS)) {
    const parameters = spec.params.map((p) => {
      switch (p.input) {
        case "shared":
          return { [p.mutable ? "MutableReference" : "Reference"]: STRUCT(packageId, spec.module, p.struct) };
        case "registry":
          return { MutableReference: STRUCT(packageId, "account", "AccountRegistry") };
        case "clock":
          return { Reference: STRUCT("0x2", "clock", "Clock") };
        case "pure":
          return PURE_TYPES[p.codec];
        case "derived":
          return "Address";
      }
    });
    out[`${spec.module}::${spec.fn}`] = { visibility: "Private", isEntry: true, typeParameters: [], parameters: [...parameters, { MutableReference: STRUCT("0x2", "tx_context", "TxContext") }], return: [] };
  }
  return out;
}
