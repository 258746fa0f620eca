// Walrus transactions on the local ledger, as the ledger keeps them: the programmable transactions `@mysten/walrus`
// builds (register, certify, extend, delete blobs, attributes), read from their BCS into the `walrus` kind's args.
// Decoding refuses inputs, commands and calls the ledger does not implement (walrus-decide.ts executes the rest).
import { bcs } from "@mysten/sui/bcs";
import { normalizeStructTag, normalizeSuiAddress } from "@mysten/sui/utils";
import { localWalrusIds } from "./walrus-deployment.ts";

export type PtbArg = { readonly input: number } | { readonly result: number } | { readonly nested: readonly [number, number] } | { readonly gas: true };

export type PtbInput =
  | { readonly pure: string }
  | { readonly shared: { readonly id: string; readonly initial_shared_version: string; readonly mutable: boolean } }
  | { readonly owned: { readonly id: string; readonly version: string; readonly digest: string } }
  | { readonly withdrawal: { readonly amount: string; readonly coin_type: string; readonly from: "sender" | "sponsor" } };

export type PtbCommand =
  | { readonly call: { readonly package: string; readonly module: string; readonly function: string; readonly type_arguments: readonly string[]; readonly arguments: readonly PtbArg[] } }
  | { readonly split: { readonly coin: PtbArg; readonly amounts: readonly PtbArg[] } }
  | { readonly merge: { readonly into: PtbArg; readonly from: readonly PtbArg[] } }
  | { readonly transfer: { readonly objects: readonly PtbArg[]; readonly to: PtbArg } };

/** The `walrus` kind's args: the programmable transaction, inputs and commands in JSON. */
export interface WalrusPtb {
  readonly inputs: readonly PtbInput[];
  readonly commands: readonly PtbCommand[];
}

const MAX_COMMANDS = 128;
const FRAMEWORK = normalizeSuiAddress("0x2");
const COIN_CALLS = new Set(["redeem_funds", "send_funds", "destroy_zero", "zero"]);
const SYSTEM_CALLS = new Set(["reserve_space", "register_blob", "certify_blob", "extend_blob", "delete_blob"]);
const BLOB_CALLS = new Set(["add_metadata", "insert_or_update_metadata_pair", "remove_metadata_pair"]);

type ParsedPtb = NonNullable<ReturnType<typeof bcs.TransactionData.parse>["V1"]>["kind"]["ProgrammableTransaction"] & object;

/** true when the programmable transaction calls the network's local Walrus package (so it is a `walrus` kind). */
export function callsWalrus(ptb: ParsedPtb, network: string): boolean {
  const pkg = localWalrusIds(network).packageId;
  return ptb.commands.some((c) => c.MoveCall && normalizeSuiAddress(c.MoveCall.package) === pkg);
}

type ParsedArg = ReturnType<typeof bcs.Argument.parse>;

function arg(a: ParsedArg): PtbArg | { error: string } {
  if (a.GasCoin) return { gas: true };
  if (a.Input !== undefined) return { input: a.Input };
  if (a.Result !== undefined) return { result: a.Result };
  if (a.NestedResult) return { nested: [a.NestedResult[0], a.NestedResult[1]] };
  return { error: "unsupported argument" };
}

/** A coin type argument in its normal form, or null when it is not a struct type. */
function structTag(type: string): string | null {
  try {
    return normalizeStructTag(type);
  } catch {
    return null;
  }
}

/** Reads a Walrus programmable transaction; refuses commands, inputs and calls the ledger does not implement. */
export function decodeWalrusPtb(ptb: ParsedPtb, network: string): { ptb: WalrusPtb } | { error: string } {
  const pkg = localWalrusIds(network).packageId;
  if (ptb.commands.length === 0 || ptb.commands.length > MAX_COMMANDS) return { error: `a Walrus transaction has 1 to ${MAX_COMMANDS} commands` };
  const inputs: PtbInput[] = [];
  // As a validator does: an object is one input, else it could be moved twice.
  const objectIds = new Set<string>();
  for (const input of ptb.inputs) {
    const ref = input.Object?.SharedObject ?? input.Object?.ImmOrOwnedObject;
    if (ref) {
      const id = normalizeSuiAddress(ref.objectId);
      if (objectIds.has(id)) return { error: `object ${id} is named by more than one input` };
      objectIds.add(id);
    }
    if (input.Pure) inputs.push({ pure: input.Pure.bytes });
    else if (input.Object?.SharedObject) {
      const s = input.Object.SharedObject;
      inputs.push({ shared: { id: normalizeSuiAddress(s.objectId), initial_shared_version: String(s.initialSharedVersion), mutable: s.mutable } });
    } else if (input.Object?.ImmOrOwnedObject) {
      const o = input.Object.ImmOrOwnedObject;
      inputs.push({ owned: { id: normalizeSuiAddress(o.objectId), version: String(o.version), digest: o.digest } });
    } else if (input.FundsWithdrawal) {
      const w = input.FundsWithdrawal;
      const coinType = w.typeArg.Balance ? structTag(w.typeArg.Balance) : null;
      if (w.reservation.MaxAmountU64 === undefined || !coinType) return { error: "a funds withdrawal must reserve a u64 amount of a coin type" };
      inputs.push({ withdrawal: { amount: String(w.reservation.MaxAmountU64), coin_type: coinType, from: w.withdrawFrom.Sponsor ? "sponsor" : "sender" } });
    } else {
      const kind = (o: object | undefined) => Object.keys(o ?? {}).find((k) => k !== "$kind") ?? "unknown";
      return { error: `input kind ${input.Object ? `Object ${kind(input.Object)}` : kind(input)} is not supported in Walrus transactions` };
    }
  }
  const commands: PtbCommand[] = [];
  const args = (list: readonly ParsedArg[]): PtbArg[] | { error: string } => {
    const out: PtbArg[] = [];
    for (const a of list) {
      const r = arg(a);
      if ("error" in r) return r;
      out.push(r);
    }
    return out;
  };
  for (const c of ptb.commands) {
    if (c.MoveCall) {
      const m = c.MoveCall;
      const target = normalizeSuiAddress(m.package);
      const known =
        (target === FRAMEWORK && m.module === "coin" && COIN_CALLS.has(m.function)) ||
        (target === pkg && ((m.module === "system" && SYSTEM_CALLS.has(m.function)) || (m.module === "blob" && BLOB_CALLS.has(m.function)) || (m.module === "metadata" && m.function === "new")));
      if (!known) {
        const walrus = [...[...SYSTEM_CALLS].map((f) => `system::${f}`), ...[...BLOB_CALLS].map((f) => `blob::${f}`), "metadata::new"];
        return { error: `unknown Move call ${target}::${m.module}::${m.function}: the local ledger implements ${walrus.join(", ")} of Walrus and coin::${[...COIN_CALLS].join("/")}` };
      }
      const a = args(m.arguments);
      if ("error" in a) return a;
      const typeArguments = m.typeArguments.map(structTag);
      if (typeArguments.some((t) => t === null)) return { error: `${m.module}::${m.function} takes coin types (struct types) as type arguments` };
      commands.push({ call: { package: target, module: m.module, function: m.function, type_arguments: typeArguments as string[], arguments: a } });
    } else if (c.SplitCoins) {
      const coin = arg(c.SplitCoins.coin);
      const amounts = args(c.SplitCoins.amounts);
      if ("error" in coin) return coin;
      if ("error" in amounts) return amounts;
      commands.push({ split: { coin, amounts } });
    } else if (c.MergeCoins) {
      const into = arg(c.MergeCoins.destination);
      const from = args(c.MergeCoins.sources);
      if ("error" in into) return into;
      if ("error" in from) return from;
      commands.push({ merge: { into, from } });
    } else if (c.TransferObjects) {
      const objects = args(c.TransferObjects.objects);
      const to = arg(c.TransferObjects.address);
      if ("error" in objects) return objects;
      if ("error" in to) return to;
      commands.push({ transfer: { objects, to } });
    } else return { error: `command ${c.$kind} is not supported in Walrus transactions` };
  }
  return { ptb: { inputs, commands } };
}
