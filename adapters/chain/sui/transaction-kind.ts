// The BCS `TransactionKind` of one of the memory package's calls (move-calls.ts): what the real chain adapters send
// and what the local ledger wraps into its `TransactionData`, so both encode a call the same way.
import { bcs } from "@mysten/sui/bcs";
import { normalizeSuiAddress } from "@mysten/sui/utils";
import { isAddress } from "./keys.ts";
import { CLOCK_ID, encodePure, LEDGER_INITIAL_SHARED_VERSION, MOVE_CALLS, type MoveParam } from "./move-calls.ts";
import type { TransactionKindInput } from "./transaction-envelope.ts";
import type { CallArgs, CallKind } from "./call-kinds.ts";
import type { ChainTarget } from "../../../schemas/chain.ts";

type CallArg = { Pure: { bytes: Uint8Array } } | { Object: { SharedObject: { objectId: string; initialSharedVersion: string; mutable: boolean } } };

/** BCS `TransactionKind` of a kind's call (what a wallet asks /sponsor to pay for). Throws when the args cannot be encoded. */
export function encodeTransactionKind<K extends CallKind>(kind: K, args: CallArgs[K], target: ChainTarget): Uint8Array {
  return bcs.TransactionKind.serialize(transactionKind(kind, args, target)).toBytes();
}

export function transactionKind<K extends CallKind>(kind: K, rawArgs: CallArgs[K], target: ChainTarget): TransactionKindInput {
  const spec = MOVE_CALLS[kind];
  const args = rawArgs as unknown as Record<string, unknown>;
  const inputs: CallArg[] = [];
  const indexOf = new Map<string, number>();
  const input = (key: string, make: () => CallArg) => {
    let i = indexOf.get(key);
    if (i === undefined) {
      i = inputs.push(make()) - 1;
      indexOf.set(key, i);
    }
    return { Input: i };
  };
  const sharedRef = (objectId: string, mutable: boolean): CallArg => ({
    Object: { SharedObject: { objectId: normalizeSuiAddress(objectId), initialSharedVersion: LEDGER_INITIAL_SHARED_VERSION, mutable } },
  });
  const argument = (p: MoveParam, element: unknown) => {
    switch (p.input) {
      case "shared": {
        const id = spec.each?.field === p.field ? element : args[p.field];
        if (!isAddress(typeof id === "string" ? id.toLowerCase() : id)) throw new Error(`${p.field} must be an object id`);
        return input(`shared:${String(id).toLowerCase()}`, () => sharedRef(String(id), p.mutable));
      }
      case "registry":
        return input("registry", () => sharedRef(target.registryId, true));
      case "clock":
        return input("clock", () => sharedRef(CLOCK_ID, false));
      case "pure": {
        if (spec.perRecord?.fields.includes(p.field)) {
          // Calls with equal values share one input, as the SDK's builder does.
          const value = (element as Record<string, unknown>)[p.field];
          return input(`record:${p.field}:${JSON.stringify(value)}`, () => ({ Pure: { bytes: encodePure(p.codec, value) } }));
        }
        return input(`pure:${p.field}`, () => ({ Pure: { bytes: encodePure(p.codec, args[p.field]) } }));
      }
      case "derived":
        return input(`derived:${p.name}`, () => ({ Pure: { bytes: encodePure("address", p.derive(args)) } }));
    }
  };
  const repeated = spec.each ?? spec.perRecord;
  const elements = repeated ? args[repeated.field] : [undefined];
  if (!Array.isArray(elements) || elements.length === 0 || (repeated && elements.length > repeated.max)) {
    throw new Error(`${repeated?.field} must list 1 to ${repeated?.max} ${spec.each ? "object ids" : "records"}`);
  }
  const commands = elements.map((element) => ({
    MoveCall: { package: target.packageId, module: spec.module, function: spec.fn, typeArguments: [], arguments: spec.params.map((p) => argument(p, element)) },
  }));
  return { ProgrammableTransaction: { inputs, commands } };
}
