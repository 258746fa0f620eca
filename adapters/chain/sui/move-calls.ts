// Which Move function each ledger transaction kind calls, and how its arguments travel as programmable-transaction
// inputs. One declarative table serves both directions: builders encode a kind's args into MoveCall inputs, the ledger
// decodes a MoveCall back into the kind's args and refuses anything else. The functions are those of move/memrelay
// (the `account` module keeps MemWal's entry signatures).
import { normalizeSuiAddress } from "@mysten/sui/utils";
import { suiAddressOf } from "./keys.ts";
import type { CallKind } from "./call-kinds.ts";

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
  /**
   * An array field of records with one call per record: the pure params named in `fields` take each record's values,
   * the other params are the same in every call; at most `max` calls.
   */
  readonly perRecord?: { readonly field: string; readonly fields: readonly string[]; readonly max: number };
}

/** Most groups one grant may touch. */
export const MAX_GRANT_GROUPS = 16;

/** Most blob registrations in one transaction (a Sui programmable transaction allows 1,024 commands). */
export const MAX_RECORDS_PER_TX = 256;

const shared = (field: string, struct: string, mutable = true): MoveParam => ({ input: "shared", field, struct, mutable });
const pure = (field: string, codec: PureCodec): MoveParam => ({ input: "pure", field, codec });
const REGISTRY: MoveParam = { input: "registry" };
const CLOCK: MoveParam = { input: "clock" };
const delegateAddress: MoveParam = {
  input: "derived",
  name: "sui_address",
  derive: (a) => suiAddressOf(Buffer.from(String(a.public_key), "hex")),
};

export const MOVE_CALLS: { readonly [K in CallKind]: MoveCallSpec } = {
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
    perRecord: { field: "records", fields: ["owner", "blob_id", "namespace", "size"], max: MAX_RECORDS_PER_TX },
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

const BY_FUNCTION = new Map<string, CallKind>(Object.entries(MOVE_CALLS).map(([kind, spec]) => [`${spec.module}::${spec.fn}`, kind as CallKind]));

/** The kind a `module::function` call stands for, or null when the ledger does not implement it. */
export function kindOfCall(module: string, fn: string): CallKind | null {
  return BY_FUNCTION.get(`${module}::${fn}`) ?? null;
}

const SCOPES = ["read", "readwrite"] as const;
const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

// Pure arguments are encoded and checked by hand: they are a few fixed layouts, and the generic BCS serialiser costs
// tens of microseconds per argument on a path every memory takes (its record_blob).
function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
}

function readUleb(bytes: Uint8Array): { value: number; size: number } | null {
  let value = 0;
  for (let i = 0, shift = 1; i < Math.min(bytes.length, 5); i++, shift *= 128) {
    value += (bytes[i]! & 0x7f) * shift;
    if ((bytes[i]! & 0x80) === 0) return { value, size: i + 1 };
  }
  return null;
}

const withLength = (payload: Uint8Array) => Uint8Array.from([...uleb(payload.length), ...payload]);

function u64Bytes(v: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, v, true);
  return out;
}

/** BCS bytes of one pure argument. Throws on a value the codec cannot carry. */
export function encodePure(codec: PureCodec, value: unknown): Uint8Array {
  switch (codec) {
    case "address": {
      const hex = typeof value === "string" ? normalizeSuiAddress(value).slice(2) : "";
      if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error("expected an address");
      return Uint8Array.from(Buffer.from(hex, "hex"));
    }
    case "string":
      if (typeof value !== "string") throw new Error("expected a string");
      return withLength(utf8.encode(value));
    case "u64":
      if (!Number.isSafeInteger(value) || (value as number) < 0) throw new Error("expected a non-negative integer");
      return u64Bytes(BigInt(value as number));
    case "u64-decimal":
      if (typeof value !== "string" || !/^(0|[1-9][0-9]{0,19})$/.test(value) || BigInt(value) >= 1n << 64n) throw new Error("expected a u64 decimal string");
      return u64Bytes(BigInt(value));
    case "key-bytes":
      if (typeof value !== "string" || !/^([0-9a-fA-F]{2})*$/.test(value)) throw new Error("expected hex bytes");
      return withLength(Buffer.from(value, "hex"));
    case "json-bytes":
      return withLength(utf8.encode(JSON.stringify(value)));
    case "scope": {
      const i = SCOPES.indexOf(value as (typeof SCOPES)[number]);
      if (i < 0) throw new Error("expected read or readwrite");
      return Uint8Array.of(i);
    }
  }
}

/** A length-prefixed payload that fills `bytes` exactly, with the shortest length prefix (canonical BCS). */
function lengthPrefixed(bytes: Uint8Array): Uint8Array | null {
  const len = readUleb(bytes);
  if (!len || len.size !== uleb(len.value).length || len.size + len.value !== bytes.length) return null;
  return bytes.subarray(len.size);
}

/** The JSON value of one pure argument, or an error message. Trailing or non-canonical bytes are refused. */
export function decodePure(codec: PureCodec, bytes: Uint8Array): { value: unknown } | { error: string } {
  const fixed = (n: number) => bytes.length === n;
  const notCanonical = { error: `argument is not a canonical BCS ${codec}` };
  try {
    switch (codec) {
      case "address":
        return fixed(32) ? { value: "0x" + Buffer.from(bytes).toString("hex") } : notCanonical;
      case "u64":
      case "u64-decimal": {
        if (!fixed(8)) return notCanonical;
        const n = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
        if (codec === "u64-decimal") return { value: n.toString() };
        return n > BigInt(Number.MAX_SAFE_INTEGER) ? { error: "u64 argument out of range" } : { value: Number(n) };
      }
      case "scope":
        return fixed(1) && bytes[0]! < SCOPES.length ? { value: SCOPES[bytes[0]!] } : { error: "scope must be 0 (read) or 1 (readwrite)" };
      case "string":
      case "key-bytes":
      case "json-bytes": {
        const payload = lengthPrefixed(bytes);
        if (!payload) return notCanonical;
        if (codec === "key-bytes") return { value: Buffer.from(payload).toString("hex") };
        const text = strictUtf8.decode(payload);
        return { value: codec === "string" ? text : JSON.parse(text) };
      }
    }
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
