// The Sui gRPC API (sui.rpc.v2) methods the local ledger answers, for `@mysten/sui`'s SuiGrpcClient (its core API:
// getChainIdentifier, getObject(s), getDynamicField, listOwnedObjects, getBalance, executeTransaction,
// getTransaction / waitForTransaction), and through it the chain port and Seal's key-server reads:
//
//   LedgerService             GetServiceInfo, GetObject, BatchGetObjects, GetTransaction, GetEpoch
//   StateService              ListOwnedObjects (an owner's memory blobs; coins: none), GetBalance
//   TransactionExecutionService ExecuteTransaction, SimulateTransaction
//   MovePackageService        GetFunction
//
// Objects come from the same ObjectSource as the JSON-RPC server, transactions from the same ledger; the messages are
// the SDK's generated protobuf types (GrpcTypes). Everything else is UNIMPLEMENTED (grpc-web.ts).
import { GrpcTypes } from "@mysten/sui/grpc";
import { isValidSuiObjectId, normalizeStructTag, normalizeSuiAddress, toBase64 } from "@mysten/sui/utils";
import { memoryBlobType, type SignedTx } from "../../../../schemas/chain.ts";
import type { TxReceipt } from "../model.ts";
import type { ChainObject, ChainOwner, ObjectSource } from "./objects.ts";
import { COIN_TYPES, DIGEST_RE, SUI, changedObjects, refusalMessage, tokenOf, type ChangedObject, type LedgerTransactions } from "./transactions.ts";
import { GrpcCode, GrpcStatusError, unary, type GrpcMethod } from "./grpc-web.ts";
import { functionDescriptor, grpcTransaction, grpcTransactionKind, transactionDataJson } from "./grpc-transaction.ts";
import { Transaction } from "@mysten/sui/transactions";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { LOCAL_SUI_EPOCH } from "../transaction-data.ts";
import { GAS_PRICE } from "../../sui/transaction-envelope.ts";

const { LedgerService, StateService, TransactionExecutionService, MovePackageService, Owner_OwnerKind } = GrpcTypes;
type ProtoObject = GrpcTypes.Object;
type ProtoOwner = GrpcTypes.Owner;

/** Object fields a read mask may name beyond the always-served id, version, digest, owner and type. */
const DEFAULT_OBJECT_MASK = ["object_id", "version", "digest"];
/** Objects per BatchGetObjects and owned objects per page (a full node's default page size). */
const MAX_BATCH = 50;

function maskOf(readMask: { paths: string[] } | undefined, fallback: readonly string[]): Set<string> {
  return new Set(readMask?.paths.length ? readMask.paths : fallback);
}

function ownerProto(owner: ChainOwner): ProtoOwner {
  switch (owner.kind) {
    case "Immutable":
      return { kind: Owner_OwnerKind.IMMUTABLE };
    case "AddressOwner":
      return { kind: Owner_OwnerKind.ADDRESS, address: owner.address };
    case "ObjectOwner":
      return { kind: Owner_OwnerKind.OBJECT, address: owner.address };
    case "Shared":
      return { kind: Owner_OwnerKind.SHARED, version: BigInt(owner.initialSharedVersion) };
  }
}

/** An owner as the ledger's receipts name it ({AddressOwner} / {ObjectOwner} / {Shared} / "Immutable"). */
function ledgerOwnerProto(owner: unknown): ProtoOwner {
  const o = (owner && typeof owner === "object" ? owner : {}) as Record<string, unknown>;
  if (typeof o.AddressOwner === "string") return ownerProto({ kind: "AddressOwner", address: normalizeSuiAddress(o.AddressOwner) });
  if (typeof o.ObjectOwner === "string") return ownerProto({ kind: "ObjectOwner", address: normalizeSuiAddress(o.ObjectOwner) });
  if (o.Shared && typeof o.Shared === "object") return ownerProto({ kind: "Shared", initialSharedVersion: String((o.Shared as Record<string, unknown>).initial_shared_version) });
  return ownerProto({ kind: "Immutable" });
}

/** The object as the read mask asks for it; `json` is the ledger's field values (a node renders its own). */
function objectProto(o: ChainObject, mask: Set<string>): ProtoObject {
  const json = mask.has("json") && o.fields ? GrpcTypes.Object.fromJson({ json: o.fields as never }).json : undefined;
  return GrpcTypes.Object.create({
    objectId: o.objectId,
    version: BigInt(o.version),
    digest: o.digest,
    owner: ownerProto(o.owner),
    objectType: o.type,
    hasPublicTransfer: o.hasPublicTransfer ?? false,
    ...(mask.has("contents") && o.contents ? { contents: { name: o.type, value: o.contents } } : {}),
    ...(mask.has("previous_transaction") && o.previousTransaction ? { previousTransaction: o.previousTransaction } : {}),
    ...(json ? { json } : {}),
  });
}

function objectId(value: string | undefined, what = "object_id"): string {
  if (typeof value !== "string" || !isValidSuiObjectId(normalizeSuiAddress(value))) throw new GrpcStatusError(GrpcCode.INVALID_ARGUMENT, `invalid ${what}`);
  return normalizeSuiAddress(value);
}

/** A ledger receipt as an ExecutedTransaction: success effects listing the created objects with their types. */
function executedProto(receipt: TxReceipt, packageId: string, signed?: SignedTx): GrpcTypes.ExecutedTransaction {
  const { ChangedObject_IdOperation: IdOperation, ChangedObject_InputObjectState: InputState, ChangedObject_OutputObjectState: OutputState } = GrpcTypes;
  const { created, mutated } = changedObjects(receipt, packageId);
  const change = (o: ChangedObject, isNew: boolean) =>
    GrpcTypes.ChangedObject.create({
      objectId: o.objectId,
      objectType: o.objectType,
      inputState: isNew ? InputState.DOES_NOT_EXIST : InputState.EXISTS,
      ...(isNew ? {} : { inputVersion: BigInt(o.version) - 1n }),
      outputState: OutputState.OBJECT_WRITE,
      outputVersion: BigInt(o.version),
      outputDigest: o.digest,
      outputOwner: ledgerOwnerProto(o.owner),
      idOperation: isNew ? IdOperation.CREATED : IdOperation.NONE,
    });
  const objectChanges = [...created.map((o) => change(o, true)), ...mutated.map((o) => change(o, false))];
  const balanceChanges = receipt.events.flatMap((e) =>
    e.type === "BalanceChanged" && COIN_TYPES[e.token] ? [GrpcTypes.BalanceChange.create({ address: e.address, coinType: COIN_TYPES[e.token], amount: e.delta })] : [],
  );
  return GrpcTypes.ExecutedTransaction.create({
    digest: receipt.digest,
    transaction: signed ? grpcTransaction(new Uint8Array(Buffer.from(signed.tx_bytes, "base64")), receipt.digest) : { digest: receipt.digest },
    signatures: (signed?.signatures ?? []).map((s) => GrpcTypes.UserSignature.create({ bcs: { name: "UserSignatureBytes", value: Buffer.from(s, "base64") } })),
    effects: {
      digest: receipt.digest,
      transactionDigest: receipt.digest,
      status: { success: true },
      epoch: 0n,
      gasUsed: { computationCost: BigInt(receipt.gas_used), storageCost: 0n, storageRebate: 0n, nonRefundableStorageFee: 0n },
      changedObjects: objectChanges,
    },
    checkpoint: BigInt(receipt.seq),
    timestamp: { seconds: BigInt(Math.floor(receipt.executed_at / 1000)), nanos: (receipt.executed_at % 1000) * 1_000_000 },
    balanceChanges,
  });
}

export interface LedgerGrpcOptions {
  readonly objects: ObjectSource;
  readonly transactions?: LedgerTransactions;
  /** The network's name and its chain identifier (base58 digest of checkpoint 0). */
  readonly chainName: string;
  readonly chainIdentifier: string;
  /** The JSON-RPC on the same listener, against which SimulateTransaction resolves unresolved transactions. */
  readonly selfJsonRpcUrl?: () => string;
}

/** The ledger's gRPC methods; without `transactions` only the service info and object reads. */
export function ledgerGrpcMethods(opts: LedgerGrpcOptions): GrpcMethod[] {
  const { objects, transactions: ledger } = opts;

  async function objectResult(id: string | undefined, mask: Set<string>): Promise<GrpcTypes.GetObjectResult> {
    try {
      const o = await objects.getObject(objectId(id));
      if (!o) throw new GrpcStatusError(GrpcCode.NOT_FOUND, `object ${normalizeSuiAddress(id!)} not found`);
      return GrpcTypes.GetObjectResult.create({ result: { oneofKind: "object", object: objectProto(o, mask) } });
    } catch (err) {
      if (!(err instanceof GrpcStatusError)) throw err;
      return GrpcTypes.GetObjectResult.create({ result: { oneofKind: "error", error: { code: err.code, message: err.message, details: [] } } });
    }
  }

  const reads: GrpcMethod[] = [
    unary<GrpcTypes.GetServiceInfoRequest, GrpcTypes.GetServiceInfoResponse>(LedgerService, "GetServiceInfo", async () => ({
      chainId: opts.chainIdentifier,
      chain: opts.chainName,
      epoch: 0n,
      checkpointHeight: 0n,
      lowestAvailableCheckpoint: 0n,
      lowestAvailableCheckpointObjects: 0n,
      server: "memrelay local ledger",
    })),
    unary<GrpcTypes.GetObjectRequest, GrpcTypes.GetObjectResponse>(LedgerService, "GetObject", async (req) => {
      const result = (await objectResult(req.objectId, maskOf(req.readMask, DEFAULT_OBJECT_MASK))).result;
      if (result.oneofKind === "error") throw new GrpcStatusError(result.error.code, result.error.message);
      return { object: result.oneofKind === "object" ? result.object : undefined };
    }),
    // The epoch (ValidDuring bounds) and reference gas price that transaction builders read.
    unary<GrpcTypes.GetEpochRequest, GrpcTypes.GetEpochResponse>(LedgerService, "GetEpoch", async () => ({
      epoch: {
        epoch: BigInt(LOCAL_SUI_EPOCH),
        referenceGasPrice: GAS_PRICE,
        start: { seconds: 0n, nanos: 0 },
        systemState: {
          version: 2n,
          epoch: BigInt(LOCAL_SUI_EPOCH),
          protocolVersion: 1n,
          referenceGasPrice: GAS_PRICE,
          epochStartTimestampMs: 0n,
          safeMode: false,
          validatorReportRecords: [],
          parameters: { epochDurationMs: BigInt(24 * 3600 * 1000) },
        },
      },
    })),
    unary<GrpcTypes.GetFunctionRequest, GrpcTypes.GetFunctionResponse>(MovePackageService, "GetFunction", async (req) => {
      const pkg = await objects.getObject(objectId(req.packageId, "package_id"));
      const f = pkg?.type === "package" ? pkg.functions?.[`${req.moduleName}::${req.name}`] : undefined;
      if (!f) throw new GrpcStatusError(GrpcCode.NOT_FOUND, `function ${req.moduleName}::${req.name} not found in package ${normalizeSuiAddress(req.packageId ?? "0x0")}`);
      return { function: functionDescriptor(req.name!, f) };
    }),
    unary<GrpcTypes.BatchGetObjectsRequest, GrpcTypes.BatchGetObjectsResponse>(LedgerService, "BatchGetObjects", async (req) => {
      if (req.requests.length > MAX_BATCH) throw new GrpcStatusError(GrpcCode.INVALID_ARGUMENT, `at most ${MAX_BATCH} objects per request`);
      const mask = maskOf(req.readMask, DEFAULT_OBJECT_MASK);
      return { objects: await Promise.all(req.requests.map((r) => objectResult(r.objectId, mask))) };
    }),
  ];
  if (!ledger) return reads;

  return [
    ...reads,
    unary<GrpcTypes.GetTransactionRequest, GrpcTypes.GetTransactionResponse>(LedgerService, "GetTransaction", async (req) => {
      if (typeof req.digest !== "string" || !DIGEST_RE.test(req.digest)) throw new GrpcStatusError(GrpcCode.INVALID_ARGUMENT, "invalid digest");
      const receipt = await ledger.getTransaction(req.digest);
      if (!receipt) throw new GrpcStatusError(GrpcCode.NOT_FOUND, `transaction ${req.digest} not found`);
      return { transaction: executedProto(receipt, ledger.packageId) };
    }),
    unary<GrpcTypes.ExecuteTransactionRequest, GrpcTypes.ExecuteTransactionResponse>(TransactionExecutionService, "ExecuteTransaction", async (req) => {
      const bytes = req.transaction?.bcs?.value;
      const signatures = req.signatures.map((s) => s.bcs?.value);
      if (!bytes?.length || signatures.length === 0 || signatures.some((s) => !s?.length)) {
        throw new GrpcStatusError(GrpcCode.INVALID_ARGUMENT, "expected transaction.bcs and the signatures' bcs");
      }
      const signed: SignedTx = { tx_bytes: toBase64(bytes), signatures: signatures.map((s) => toBase64(s!)) };
      let digest: string;
      try {
        ({ digest } = await ledger.submit(signed));
      } catch (err) {
        // The ledger records executed transactions only: a refusal is the request's fault, as a node's is.
        throw new GrpcStatusError(GrpcCode.INVALID_ARGUMENT, refusalMessage(err));
      }
      const receipt = await ledger.getTransaction(digest);
      if (!receipt) throw new GrpcStatusError(GrpcCode.INTERNAL, "executed transaction not readable yet");
      return { transaction: executedProto(receipt, ledger.packageId, signed) };
    }),
    // A simulation is the ledger's decision on the current state, not committed (gas is a fixed fee). The SDK's gRPC
    // client also sends transactions it has not resolved (objects by id, no gas) and expects them back resolved, as a
    // full node does: they are resolved by the SDK's own resolver against this listener's JSON-RPC.
    unary<GrpcTypes.SimulateTransactionRequest, GrpcTypes.SimulateTransactionResponse>(TransactionExecutionService, "SimulateTransaction", async (req) => {
      if (!ledger.dryRun || !opts.selfJsonRpcUrl) throw new GrpcStatusError(GrpcCode.UNIMPLEMENTED, "SimulateTransaction is not available");
      const failed = (description: string) => ({ transaction: GrpcTypes.ExecutedTransaction.create({ effects: GrpcTypes.TransactionEffects.create({ status: { success: false, error: { description } }, epoch: 0n }) }), commandOutputs: [] });
      let bytes = req.transaction?.bcs?.value;
      if (!bytes?.length) {
        if (!req.transaction) throw new GrpcStatusError(GrpcCode.INVALID_ARGUMENT, "expected a transaction");
        let tx: Transaction;
        try {
          tx = Transaction.from(transactionDataJson(req.transaction, req.doGasSelection === true));
        } catch (err) {
          throw new GrpcStatusError(GrpcCode.INVALID_ARGUMENT, `unreadable transaction: ${err instanceof Error ? err.message : String(err)}`);
        }
        const client = new SuiJsonRpcClient({ url: opts.selfJsonRpcUrl(), network: opts.chainName });
        if (req.checks === GrpcTypes.SimulateTransactionRequest_TransactionChecks.DISABLED) {
          // Kind-only resolution (`build({ onlyTransactionKind: true })`): the resolved commands and inputs.
          const kind = await tx.build({ client, onlyTransactionKind: true }).catch((err: Error) => err);
          if (kind instanceof Error) return failed(kind.message);
          return { transaction: GrpcTypes.ExecutedTransaction.create({ transaction: grpcTransactionKind(kind), effects: { status: { success: true }, epoch: 0n } }), commandOutputs: [] };
        }
        const built = await tx.build({ client }).catch((err: Error & { executionError?: { message?: string } }) => err);
        if (built instanceof Error) return failed(built.executionError?.message ?? built.message);
        bytes = built;
      }
      const result = await ledger.dryRun(bytes);
      if ("error" in result) return failed(result.error);
      const executed = executedProto(result.receipt, ledger.packageId);
      return { transaction: { ...executed, transaction: grpcTransaction(bytes, result.receipt.digest) }, commandOutputs: [] };
    }),
    // Owned objects: the ledger indexes only the memory blobs an address owns (its other objects are shared); it
    // holds no coin objects (balances are address balances), so a coin listing is empty.
    unary<GrpcTypes.ListOwnedObjectsRequest, GrpcTypes.ListOwnedObjectsResponse>(StateService, "ListOwnedObjects", async (req) => {
      const owner = objectId(req.owner, "owner");
      if (req.objectType && /^0x0*2::coin::Coin</.test(req.objectType)) return { objects: [] };
      const blobType = memoryBlobType(ledger.packageId);
      if (!req.objectType || normalizeStructTag(req.objectType) !== normalizeStructTag(blobType)) {
        throw new GrpcStatusError(GrpcCode.INVALID_ARGUMENT, `this ledger lists owned objects of object_type ${blobType} only`);
      }
      const size = Math.min(Math.max(req.pageSize ?? MAX_BATCH, 1), MAX_BATCH);
      const token = req.pageToken ? Buffer.from(req.pageToken).toString("ascii") : "";
      if (token && !/^[0-9]{1,9}$/.test(token)) throw new GrpcStatusError(GrpcCode.INVALID_ARGUMENT, "invalid page_token");
      const start = token ? Number(token) : 0;
      const blobs = await ledger.listBlobs(owner, { limit: start + size + 1 });
      const mask = maskOf(req.readMask, DEFAULT_OBJECT_MASK);
      const page = (await Promise.all(blobs.slice(start, start + size).map((b) => objects.getObject(b.objectId)))).filter((o): o is ChainObject => o !== null);
      const more = blobs.length > start + size;
      return { objects: page.map((o) => objectProto(o, mask)), ...(more ? { nextPageToken: Buffer.from(String(start + size), "ascii") } : {}) };
    }),
    unary<GrpcTypes.GetBalanceRequest, GrpcTypes.GetBalanceResponse>(StateService, "GetBalance", async (req) => {
      const owner = objectId(req.owner, "owner");
      let coinType: string;
      try {
        coinType = normalizeStructTag(req.coinType || SUI);
      } catch {
        throw new GrpcStatusError(GrpcCode.INVALID_ARGUMENT, "invalid coin_type");
      }
      const token = tokenOf(coinType);
      const amount = token ? ((await ledger.balance(owner)).balances[token] ?? 0n) : 0n;
      // Ledger balances are address balances: no coin objects.
      return { balance: { coinType, balance: amount, addressBalance: amount, coinBalance: 0n } };
    }),
  ];
}
