// Sui `TransactionData` (BCS, version 1) for the ledger's transaction kinds: a programmable transaction of MoveCall
// commands (move-calls.ts), gas paid from the gas owner's address balance (no gas coins), and a `ValidDuring`
// expiration carrying the chain identifier, a validity window (or the SDK's epoch bounds) and a nonce. Decoding is
// strict: anything a builder of these calls would not produce is refused with the reason, so the ledger executes
// exactly what was signed. A transaction calling the local Walrus package is the `walrus` kind (walrus-ptb.ts).
import { createHash } from "node:crypto";
import { blake2b } from "@noble/hashes/blake2.js";
import { bcs, BcsType } from "@mysten/sui/bcs";
import { normalizeSuiAddress, toBase58 } from "@mysten/sui/utils";
import { CLOCK_ID, decodePure, kindOfCall, LEDGER_INITIAL_SHARED_VERSION, MOVE_CALLS, type MoveParam } from "../sui/move-calls.ts";
import { transactionKind } from "../sui/transaction-kind.ts";
import type { CallKind, TxArgs, TxBody, TxKind } from "./model.ts";
import { GAS_FEE_MIST, GAS_PRICE, TX_CLOCK_SKEW_MS, wrapTransactionKind } from "../sui/transaction-envelope.ts";
import type { ChainTarget } from "../../../schemas/chain.ts";
import { callsWalrus, decodeWalrusPtb } from "./walrus-ptb.ts";

/** The chain identifier transactions carry: the digest of the network's genesis checkpoint, as the JSON-RPC serves it. */
export function chainIdentifierDigest(network: string): string {
  return toBase58(new Uint8Array(createHash("sha256").update(network).digest()));
}

/** The local ledger's account registry: a fixed object id per package (a published package has it from its `init`). */
function localRegistryId(packageId: string): string {
  return "0x" + Buffer.from(blake2b(new TextEncoder().encode(`memrelay::account::AccountRegistry@${normalizeSuiAddress(packageId)}`), { dkLen: 32 })).toString("hex");
}

/** The registry's `accounts` table (owner → account id): a fixed id under the registry on the local ledger. */
export function localRegistryTableId(registryId: string): string {
  return "0x" + Buffer.from(blake2b(new TextEncoder().encode(`${normalizeSuiAddress(registryId)}::accounts`), { dkLen: 32 })).toString("hex");
}

export function localTarget(network: string, packageId: string): ChainTarget {
  return { network, chainIdentifier: chainIdentifierDigest(network), packageId: normalizeSuiAddress(packageId), registryId: localRegistryId(packageId) };
}

/** BCS `TransactionData` of one ledger transaction. Throws when the args cannot be encoded. */
export function encodeTransactionData<K extends CallKind>(body: TxBody<K>, target: ChainTarget): Uint8Array {
  return wrapTransactionKind(transactionKind(body.kind, body.args, target), {
    target,
    sender: body.sender,
    gasOwner: body.gas_owner ?? body.sender,
    validFromMs: body.valid_from_ms,
    validUntilMs: body.valid_until_ms,
    nonce: body.nonce,
  });
}

/** The TransactionData in `bytes`, and whether bytes follow its encoding (BCS parsing alone ignores them). */
const transactionDataAndRest = new BcsType<{ data: ReturnType<typeof bcs.TransactionData.parse>; trailing: boolean }, never>({
  name: "TransactionDataAndRest",
  read: (reader) => {
    const data = bcs.TransactionData.read(reader);
    let trailing = true;
    try {
      reader.read8();
    } catch {
      trailing = false; // the reader is at the end
    }
    return { data, trailing };
  },
  write: () => {
    throw new Error("read only");
  },
});

/** The end of a transaction's validity window (ms), or null when the bytes are not such a transaction. */
export function transactionValidUntil(bytes: Uint8Array): number | null {
  try {
    const end = bcs.TransactionData.parse(bytes).V1?.expiration.ValidDuring?.maxTimestamp;
    return end == null ? null : Number(end);
  } catch {
    return null;
  }
}

export type Decoded = { readonly body: TxBody } | { readonly error: string };

type ParsedInput = ReturnType<typeof bcs.CallArg.parse>;

/** Reads `bytes` as a ledger transaction for `target`; every deviation from what the builders produce is an error. */
export function decodeTransactionData(bytes: Uint8Array, target: ChainTarget): Decoded {
  let parsed: ReturnType<typeof bcs.TransactionData.parse>;
  try {
    const read = transactionDataAndRest.parse(bytes);
    // A signed transaction must be exactly its encoding. The reader refuses non-canonical lengths (ULEB) and strings
    // that are not UTF-8, so where it stops is where the canonical encoding of what it read ends.
    if (read.trailing) return { error: "trailing bytes after the TransactionData" };
    parsed = read.data;
  } catch {
    return { error: "transaction bytes are not BCS TransactionData" };
  }
  const data = parsed.V1;
  if (!data) return { error: "unsupported TransactionData version" };
  const ptb = data.kind.ProgrammableTransaction;
  if (!ptb) return { error: `transaction kind ${data.kind.$kind} is not supported; send a programmable transaction` };
  const validity = data.expiration.ValidDuring;
  if (!validity) return { error: "the expiration must be ValidDuring (chain identifier, validity window and nonce)" };
  if (validity.chain !== target.chainIdentifier) return { error: `transaction is for another chain than ${target.network}` };
  const window = validityWindow(validity);
  if ("error" in window) return window;
  const { validFrom, validUntil } = window;
  if (data.gasData.payment.length > 0) return { error: "gas coins are not accepted: gas is paid from the gas owner's address balance (empty payment)" };
  if (BigInt(data.gasData.budget) < GAS_FEE_MIST) return { error: `gas budget below the fee of ${GAS_FEE_MIST} MIST` };
  if (BigInt(data.gasData.price) < GAS_PRICE) return { error: `gas price below the reference price ${GAS_PRICE}` };

  const gasOwner = normalizeSuiAddress(data.gasData.owner);
  const sender = normalizeSuiAddress(data.sender);
  const envelope = { chain: target.network, sender, ...(gasOwner !== sender ? { gas_owner: gasOwner } : {}), nonce: validity.nonce, valid_from_ms: validFrom, valid_until_ms: validUntil };
  if (callsWalrus(ptb, target.network)) {
    const walrus = decodeWalrusPtb(ptb, target.network);
    return "error" in walrus ? walrus : { body: { ...envelope, kind: "walrus", args: walrus.ptb } };
  }

  const calls = ptb.commands.map((c) => c.MoveCall);
  const first = calls[0];
  if (!first || calls.some((c) => !c)) return { error: "only MoveCall commands are supported" };
  const kind = kindOfCall(first.module, first.function);
  if (!kind) return { error: `unknown Move call ${first.module}::${first.function}` };
  const spec = MOVE_CALLS[kind];
  for (const c of calls) {
    if (!c || normalizeSuiAddress(c.package) !== target.packageId) return { error: `calls must target the memory package ${target.packageId}` };
    if (c.module !== spec.module || c.function !== spec.fn) return { error: "a transaction calls one function (repeated only where it takes one object per call)" };
    if (c.typeArguments.length > 0) return { error: `${spec.module}::${spec.fn} takes no type arguments` };
    if (c.arguments.length !== spec.params.length) return { error: `${spec.module}::${spec.fn} takes ${spec.params.length} arguments` };
  }
  const maxCalls = (spec.each ?? spec.perRecord)?.max ?? 1;
  if (calls.length > maxCalls) return { error: `at most ${maxCalls} ${spec.fn} calls in one transaction` };

  const used = new Set<number>();
  const args: Record<string, unknown> = {};
  const eachValues: string[] = [];
  const records: Record<string, unknown>[] = [];
  const derived = new Map<string, unknown>();
  for (const c of calls) {
    const record: Record<string, unknown> = {};
    if (spec.perRecord) records.push(record);
    for (let i = 0; i < spec.params.length; i++) {
      const p = spec.params[i];
      const ref = c!.arguments[i];
      const at = ref.Input;
      if (at === undefined || at >= ptb.inputs.length) return { error: "arguments must be transaction inputs" };
      used.add(at);
      const got = readParam(p, ptb.inputs[at], target);
      if ("error" in got) return got;
      if (p.input === "shared" && spec.each?.field === p.field) eachValues.push(got.value as string);
      else if (p.input === "pure" && spec.perRecord?.fields.includes(p.field)) record[p.field] = got.value;
      else if (p.input === "pure" || p.input === "shared") {
        if (p.field in args && JSON.stringify(args[p.field]) !== JSON.stringify(got.value)) return { error: `every ${spec.fn} call must pass the same ${p.field}` };
        args[p.field] = got.value;
      } else if (p.input === "derived") derived.set(p.name, got.value);
    }
  }
  if (used.size !== ptb.inputs.length) return { error: "the transaction has inputs no call uses" };
  if (spec.each) args[spec.each.field] = eachValues;
  if (spec.perRecord) args[spec.perRecord.field] = records;
  for (const p of spec.params) {
    if (p.input === "derived" && derived.get(p.name) !== p.derive(args)) return { error: `${p.name} does not match the other arguments` };
  }
  return { body: { ...envelope, kind, args: args as unknown as TxArgs[TxKind] } };
}

/** The local network's Sui epoch: it never changes (the JSON-RPC's system state and checkpoint say 0). */
export const LOCAL_SUI_EPOCH = 0;

/**
 * The window a ValidDuring expiration allows: a timestamp window of at most 2 × TX_CLOCK_SKEW_MS (this project's
 * builders), or epoch bounds containing the current epoch, as the SDK sets them when it pays gas from an address
 * balance (`minEpoch` = current, `maxEpoch` = current + 1). The local epoch never ends, so the digest record alone
 * keeps such a transaction single-use.
 */
function validityWindow(v: { minEpoch: string | null; maxEpoch: string | null; minTimestamp: string | null; maxTimestamp: string | null }): { validFrom: number; validUntil: number } | { error: string } {
  if (v.minEpoch !== null || v.maxEpoch !== null) {
    if (v.minTimestamp !== null || v.maxTimestamp !== null) return { error: "give either epoch bounds or a timestamp window, not both" };
    if (v.minEpoch === null || v.maxEpoch === null) return { error: "epoch bounds need both epochs" };
    if (!(BigInt(v.minEpoch) <= LOCAL_SUI_EPOCH && LOCAL_SUI_EPOCH <= BigInt(v.maxEpoch)) || BigInt(v.maxEpoch) - BigInt(v.minEpoch) > 1n) {
      return { error: `the epoch bounds must contain the current epoch ${LOCAL_SUI_EPOCH} and span at most one epoch change` };
    }
    return { validFrom: 0, validUntil: Number.MAX_SAFE_INTEGER };
  }
  if (v.minTimestamp === null || v.maxTimestamp === null) return { error: "the validity window needs both timestamps" };
  const validFrom = Number(v.minTimestamp);
  const validUntil = Number(v.maxTimestamp);
  if (validUntil < validFrom || validUntil - validFrom > 2 * TX_CLOCK_SKEW_MS) {
    return { error: `the validity window must be at most ${(2 * TX_CLOCK_SKEW_MS) / 60_000} minutes` };
  }
  return { validFrom, validUntil };
}

function readParam(p: MoveParam, arg: ParsedInput, target: ChainTarget): { value: unknown } | { error: string } {
  if (p.input === "pure" || p.input === "derived") {
    if (!arg.Pure) return { error: `${p.input === "pure" ? p.field : p.name} must be a pure argument` };
    return decodePure(p.input === "pure" ? p.codec : "address", new Uint8Array(Buffer.from(arg.Pure.bytes, "base64")));
  }
  const ref = arg.Object?.SharedObject;
  if (!ref) return { error: "object arguments must be shared objects" };
  const id = normalizeSuiAddress(ref.objectId);
  if (String(ref.initialSharedVersion) !== LEDGER_INITIAL_SHARED_VERSION) return { error: `object ${id} was shared at version ${LEDGER_INITIAL_SHARED_VERSION}` };
  if (p.input === "clock") return id === CLOCK_ID ? { value: id } : { error: "expected the Clock object 0x6" };
  if (p.input === "registry") return id === target.registryId ? { value: id } : { error: `expected the account registry ${target.registryId}` };
  if (p.mutable && !ref.mutable) return { error: `${p.field} must be passed mutably` };
  return { value: id };
}
