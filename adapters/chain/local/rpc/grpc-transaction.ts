// What the gRPC API answers about transactions beside their BCS: the transaction as structured protobuf (inputs,
// commands, gas, expiration), which the SDK's core client reads when asked to include the transaction (as
// `signAndExecuteTransaction` does), and Move function signatures as OpenSignatures (MovePackageService.GetFunction)
// from the normalized JSON form the ledger keeps for its packages.
import { bcs } from "@mysten/sui/bcs";
import { GrpcTypes } from "@mysten/sui/grpc";
import { fromBase64 } from "@mysten/sui/utils";
import type { NormalizedMoveFunction } from "./objects.ts";

const { Input_InputKind: InputKind, Argument_ArgumentKind: ArgumentKind, FundsWithdrawal_Source: Source, TransactionExpiration_TransactionExpirationKind: ExpirationKind } = GrpcTypes;

type ParsedData = NonNullable<ReturnType<typeof bcs.TransactionData.parse>["V1"]>;
type ParsedPtb = NonNullable<ParsedData["kind"]["ProgrammableTransaction"]>;
type ParsedArg = ReturnType<typeof bcs.Argument.parse>;

function argument(a: ParsedArg): GrpcTypes.Argument {
  if (a.GasCoin) return { kind: ArgumentKind.GAS };
  if (a.Input !== undefined) return { kind: ArgumentKind.INPUT, input: a.Input };
  if (a.Result !== undefined) return { kind: ArgumentKind.RESULT, result: a.Result };
  return { kind: ArgumentKind.RESULT, result: a.NestedResult![0], subresult: a.NestedResult![1] };
}

function input(i: ParsedPtb["inputs"][number]): GrpcTypes.Input {
  if (i.Pure) return { kind: InputKind.PURE, pure: fromBase64(i.Pure.bytes) };
  if (i.Object?.ImmOrOwnedObject) return { kind: InputKind.IMMUTABLE_OR_OWNED, objectId: i.Object.ImmOrOwnedObject.objectId, version: BigInt(i.Object.ImmOrOwnedObject.version), digest: i.Object.ImmOrOwnedObject.digest };
  if (i.Object?.SharedObject) return { kind: InputKind.SHARED, objectId: i.Object.SharedObject.objectId, version: BigInt(i.Object.SharedObject.initialSharedVersion), mutable: i.Object.SharedObject.mutable };
  if (i.Object?.Receiving) return { kind: InputKind.RECEIVING, objectId: i.Object.Receiving.objectId, version: BigInt(i.Object.Receiving.version), digest: i.Object.Receiving.digest };
  const w = i.FundsWithdrawal!;
  return {
    kind: InputKind.FUNDS_WITHDRAWAL,
    fundsWithdrawal: { amount: w.reservation.MaxAmountU64 !== undefined ? BigInt(w.reservation.MaxAmountU64) : undefined, coinType: w.typeArg.Balance, source: w.withdrawFrom.Sponsor ? Source.SPONSOR : Source.SENDER },
  };
}

function command(c: ParsedPtb["commands"][number]): GrpcTypes.Command {
  if (c.MoveCall) {
    const m = c.MoveCall;
    return { command: { oneofKind: "moveCall", moveCall: { package: m.package, module: m.module, function: m.function, typeArguments: m.typeArguments, arguments: m.arguments.map(argument) } } };
  }
  if (c.TransferObjects) return { command: { oneofKind: "transferObjects", transferObjects: { objects: c.TransferObjects.objects.map(argument), address: argument(c.TransferObjects.address) } } };
  if (c.SplitCoins) return { command: { oneofKind: "splitCoins", splitCoins: { coin: argument(c.SplitCoins.coin), amounts: c.SplitCoins.amounts.map(argument) } } };
  if (c.MergeCoins) return { command: { oneofKind: "mergeCoins", mergeCoins: { coin: argument(c.MergeCoins.destination), coinsToMerge: c.MergeCoins.sources.map(argument) } } };
  if (c.MakeMoveVec) return { command: { oneofKind: "makeMoveVector", makeMoveVector: { elementType: c.MakeMoveVec.type ?? undefined, elements: c.MakeMoveVec.elements.map(argument) } } };
  // The ledger executes none of the others (publish, upgrade), so no recorded transaction has them.
  return { command: { oneofKind: undefined } };
}

const timestamp = (ms: string) => ({ seconds: BigInt(ms) / 1000n, nanos: Number(BigInt(ms) % 1000n) * 1_000_000 });

/** A programmable transaction's BCS as the gRPC `Transaction` message, with its BCS beside. */
export function grpcTransaction(bytes: Uint8Array, digest: string): GrpcTypes.Transaction {
  const data = bcs.TransactionData.parse(bytes).V1!;
  const ptb = data.kind.ProgrammableTransaction!;
  const v = data.expiration.ValidDuring;
  return GrpcTypes.Transaction.create({
    digest,
    bcs: { name: "TransactionData", value: bytes },
    version: 1,
    kind: { data: { oneofKind: "programmableTransaction", programmableTransaction: { inputs: ptb.inputs.map(input), commands: ptb.commands.map(command) } } },
    sender: data.sender,
    gasPayment: { objects: data.gasData.payment.map((o) => ({ objectId: o.objectId, version: BigInt(o.version), digest: o.digest })), owner: data.gasData.owner, price: BigInt(data.gasData.price), budget: BigInt(data.gasData.budget) },
    expiration: v
      ? {
          kind: ExpirationKind.VALID_DURING,
          ...(v.minEpoch !== null ? { minEpoch: BigInt(v.minEpoch) } : {}),
          ...(v.maxEpoch !== null ? { epoch: BigInt(v.maxEpoch) } : {}),
          ...(v.minTimestamp !== null ? { minTimestamp: timestamp(v.minTimestamp) } : {}),
          ...(v.maxTimestamp !== null ? { maxTimestamp: timestamp(v.maxTimestamp) } : {}),
          chain: v.chain,
          nonce: v.nonce,
        }
      : { kind: ExpirationKind.NONE },
  });
}

const { OpenSignature_Reference: Reference, OpenSignatureBody_Type: BodyType, FunctionDescriptor_Visibility: Visibility } = GrpcTypes;
const PRIMITIVES: Record<string, GrpcTypes.OpenSignatureBody_Type> = {
  Address: BodyType.ADDRESS,
  Bool: BodyType.BOOL,
  U8: BodyType.U8,
  U16: BodyType.U16,
  U32: BodyType.U32,
  U64: BodyType.U64,
  U128: BodyType.U128,
  U256: BodyType.U256,
};

function body(t: unknown): GrpcTypes.OpenSignatureBody {
  if (typeof t === "string") return { type: PRIMITIVES[t] ?? BodyType.TYPE_UNKNOWN, typeParameterInstantiation: [] };
  const o = t as { Vector?: unknown; Struct?: { address: string; module: string; name: string; typeArguments: unknown[] } };
  if (o.Vector !== undefined) return { type: BodyType.VECTOR, typeParameterInstantiation: [body(o.Vector)] };
  if (o.Struct) return { type: BodyType.DATATYPE, typeName: `${o.Struct.address}::${o.Struct.module}::${o.Struct.name}`, typeParameterInstantiation: o.Struct.typeArguments.map(body) };
  return { type: BodyType.TYPE_UNKNOWN, typeParameterInstantiation: [] };
}

function signature(t: unknown): GrpcTypes.OpenSignature {
  const o = (t && typeof t === "object" ? t : {}) as { Reference?: unknown; MutableReference?: unknown };
  if (o.Reference !== undefined) return { reference: Reference.IMMUTABLE, body: body(o.Reference) };
  if (o.MutableReference !== undefined) return { reference: Reference.MUTABLE, body: body(o.MutableReference) };
  return { body: body(t) };
}

/** A normalized Move function (JSON-RPC form) as MovePackageService's FunctionDescriptor. */
export function functionDescriptor(name: string, f: NormalizedMoveFunction): GrpcTypes.FunctionDescriptor {
  return {
    name,
    visibility: f.visibility === "Public" ? Visibility.PUBLIC : f.visibility === "Friend" ? Visibility.FRIEND : Visibility.PRIVATE,
    isEntry: f.isEntry,
    typeParameters: f.typeParameters.map(() => ({ constraints: [] })),
    parameters: f.parameters.map(signature),
    returns: f.return.map(signature),
  };
}

// ---------------------------------------------------------------- unresolved transactions (SimulateTransaction)

const b64 = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? new Uint8Array()).toString("base64");
const millis = (t: { seconds: bigint; nanos: number } | undefined) => (t ? String(t.seconds * 1000n + BigInt(Math.floor(t.nanos / 1e6))) : null);

function argumentJson(a: GrpcTypes.Argument | undefined): unknown {
  if (!a || a.kind === ArgumentKind.GAS) return { $kind: "GasCoin", GasCoin: true };
  if (a.kind === ArgumentKind.INPUT) return { $kind: "Input", Input: a.input ?? 0 };
  if (a.subresult != null) return { $kind: "NestedResult", NestedResult: [a.result ?? 0, a.subresult] };
  return { $kind: "Result", Result: a.result ?? 0 };
}

function inputJson(i: GrpcTypes.Input): unknown {
  switch (i.kind) {
    case InputKind.PURE:
      return { $kind: "Pure", Pure: { bytes: b64(i.pure) } };
    case InputKind.IMMUTABLE_OR_OWNED:
      return { $kind: "Object", Object: { $kind: "ImmOrOwnedObject", ImmOrOwnedObject: { objectId: i.objectId, version: String(i.version), digest: i.digest } } };
    case InputKind.SHARED:
      return { $kind: "Object", Object: { $kind: "SharedObject", SharedObject: { objectId: i.objectId, initialSharedVersion: String(i.version), mutable: i.mutable ?? false } } };
    case InputKind.FUNDS_WITHDRAWAL: {
      const w = i.fundsWithdrawal;
      return {
        $kind: "FundsWithdrawal",
        FundsWithdrawal: {
          reservation: { $kind: "MaxAmountU64", MaxAmountU64: String(w?.amount ?? 0n) },
          typeArg: { $kind: "Balance", Balance: w?.coinType ?? "0x2::sui::SUI" },
          withdrawFrom: w?.source === Source.SPONSOR ? { $kind: "Sponsor", Sponsor: true } : { $kind: "Sender", Sender: true },
        },
      };
    }
    default:
      // An object named by id (and maybe its version): the resolver fills in the rest.
      return { $kind: "UnresolvedObject", UnresolvedObject: { objectId: i.objectId, ...(i.digest ? { version: String(i.version), digest: i.digest } : {}), ...(i.mutable !== undefined ? { mutable: i.mutable } : {}) } };
  }
}

function commandJson(c: GrpcTypes.Command): unknown {
  const k = c.command;
  switch (k.oneofKind) {
    case "moveCall":
      return { $kind: "MoveCall", MoveCall: { package: k.moveCall.package, module: k.moveCall.module, function: k.moveCall.function, typeArguments: k.moveCall.typeArguments, arguments: k.moveCall.arguments.map(argumentJson) } };
    case "transferObjects":
      return { $kind: "TransferObjects", TransferObjects: { objects: k.transferObjects.objects.map(argumentJson), address: argumentJson(k.transferObjects.address) } };
    case "splitCoins":
      return { $kind: "SplitCoins", SplitCoins: { coin: argumentJson(k.splitCoins.coin), amounts: k.splitCoins.amounts.map(argumentJson) } };
    case "mergeCoins":
      return { $kind: "MergeCoins", MergeCoins: { destination: argumentJson(k.mergeCoins.coin), sources: k.mergeCoins.coinsToMerge.map(argumentJson) } };
    case "makeMoveVector":
      return { $kind: "MakeMoveVec", MakeMoveVec: { type: k.makeMoveVector.elementType ?? null, elements: k.makeMoveVector.elements.map(argumentJson) } };
    default:
      throw new Error(`command ${k.oneofKind ?? "unknown"} is not supported by the local ledger`);
  }
}

/**
 * A gRPC Transaction as the SDK's serialized TransactionData (v2), unresolved parts left for `Transaction.build`:
 * objects named by id, and, when the client asks for gas selection, the budget and payment.
 */
export function transactionDataJson(t: GrpcTypes.Transaction, gasSelection: boolean): string {
  const kind = t.kind?.data;
  if (kind?.oneofKind !== "programmableTransaction") throw new Error("only programmable transactions are supported");
  const e = t.expiration;
  const expiration =
    !e || e.kind === ExpirationKind.NONE
      ? null
      : e.kind === ExpirationKind.VALID_DURING
        ? { $kind: "ValidDuring", ValidDuring: { minEpoch: e.minEpoch?.toString() ?? null, maxEpoch: e.epoch?.toString() ?? null, minTimestamp: millis(e.minTimestamp), maxTimestamp: millis(e.maxTimestamp), chain: e.chain ?? "", nonce: e.nonce ?? 0 } }
        : e.kind === ExpirationKind.EPOCH
          ? { $kind: "Epoch", Epoch: String(e.epoch) }
          : null;
  const g = t.gasPayment;
  return JSON.stringify({
    version: 2,
    sender: t.sender ?? null,
    expiration,
    gasData: {
      budget: !gasSelection && g?.budget !== undefined ? String(g.budget) : null,
      price: g?.price !== undefined ? String(g.price) : null,
      owner: g?.owner ?? null,
      payment: !gasSelection && g ? g.objects.map((o) => ({ objectId: o.objectId, version: String(o.version), digest: o.digest })) : null,
    },
    inputs: kind.programmableTransaction.inputs.map(inputJson),
    commands: kind.programmableTransaction.commands.map(commandJson),
  });
}

/** A TransactionKind's BCS (what `build({ onlyTransactionKind: true })` gives) as the gRPC Transaction's kind alone. */
export function grpcTransactionKind(kindBytes: Uint8Array): GrpcTypes.Transaction {
  const ptb = bcs.TransactionKind.parse(kindBytes).ProgrammableTransaction!;
  return GrpcTypes.Transaction.create({ kind: { data: { oneofKind: "programmableTransaction", programmableTransaction: { inputs: ptb.inputs.map(input), commands: ptb.commands.map(command) } } } });
}
