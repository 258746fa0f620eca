// The JSON-RPC methods that execute and read transactions on the local ledger, in the shapes `SuiJsonRpcClient`
// parses: sui_executeTransactionBlock, sui_getTransactionBlock (with raw effects), suix_getBalance,
// suix_getReferenceGasPrice, suix_getOwnedObjects (an owner's memory blobs), and what the SDK's transaction builder
// reads: sui_dryRunTransactionBlock, suix_getLatestSuiSystemState, suix_getCoins (none). A
// refused transaction is a JSON-RPC error carrying the ledger's reason (the ledger records only executed ones), a
// signature that does not verify in a Sui node's words (refusalMessage).
import { bcs } from "@mysten/sui/bcs";
import { fromBase64, normalizeStructTag, normalizeSuiAddress } from "@mysten/sui/utils";
import { memoryBlobType, memWalAccountType, type SignedTx } from "../../../../schemas/chain.ts";
import type { TxReceipt } from "../model.ts";
import { LOCAL_SUI_EPOCH } from "../transaction-data.ts";
import { GAS_PRICE } from "../../sui/transaction-envelope.ts";
import { ledgerObjectDigest } from "./ledger-source.ts";
import { SignatureRejected } from "../../../ports.ts";

/** What the methods need from the ledger (LocalChain provides it). */
export interface LedgerTransactions {
  readonly packageId: string;
  /** The owner's recorded blob objects, newest first (suix_getOwnedObjects of `blob_registry::MemoryBlob`). */
  listBlobs(owner: string, opts: { limit: number }): Promise<readonly { readonly objectId: string }[]>;
  getObject(objectId: string): Promise<{ readonly object_id: string } | null>;
  submit(tx: SignedTx): Promise<{ readonly digest: string }>;
  getTransaction(digest: string): Promise<TxReceipt | null>;
  balance(address: string): Promise<{ readonly balances: Readonly<Record<string, bigint>> }>;
  /** Decides a transaction against the current state without signatures or commit (sui_dryRunTransactionBlock). */
  dryRun?(txBytes: Uint8Array): Promise<{ readonly receipt: TxReceipt } | { readonly error: string }>;
}

/**
 * A refused transaction's message on both APIs. A signature that does not verify is worded as a Sui node words it
 * (QuorumDriverError::InvalidUserSignature around SuiError::InvalidSignature), which the chain port over a node turns
 * back into SignatureRejected; any other refusal carries the ledger's reason.
 */
export function refusalMessage(err: unknown): string {
  const why = err instanceof Error ? err.message : String(err);
  return err instanceof SignatureRejected ? `Invalid user signature: Signature is not valid: ${why}` : `Transaction refused: ${why}`;
}

/** A JSON-RPC error answer (code and message). */
export class RpcError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

interface BlockOptions {
  showInput?: boolean;
  showRawInput?: boolean;
  showEffects?: boolean;
  showRawEffects?: boolean;
  showEvents?: boolean;
  showObjectChanges?: boolean;
  showBalanceChanges?: boolean;
}

export const SUI = "0x2::sui::SUI";
/** Coin types of the ledger's tokens; WAL is the Walrus token. */
export const COIN_TYPES: Readonly<Record<string, string>> = { SUI, WAL: "0x356a26eb9e012a68958082340d4c4116e7f55615cf27affcff209cf0ae544f59::wal::WAL" };
export const tokenOf = (coinType: string) => Object.entries(COIN_TYPES).find(([, t]) => normalizeStructTag(t) === normalizeStructTag(coinType))?.[0];

export const DIGEST_RE = /^[1-9A-HJ-NP-Za-km-z]{32,64}$/;

/** SenderSignedData (intent TransactionData v0 Sui) of a signed transaction, base64 — the `rawTransaction` field. */
function senderSignedData(tx: SignedTx): string {
  const value = bcs.TransactionData.parse(fromBase64(tx.tx_bytes));
  return bcs.SenderSignedData.serialize([
    {
      intentMessage: { intent: { scope: { TransactionData: true }, version: { V0: true }, appId: { Sui: true } }, value },
      txSignatures: [...tx.signatures],
    },
  ]).toBase64();
}

export interface ChangedObject {
  readonly objectId: string;
  readonly objectType: string;
  readonly owner: unknown;
  readonly version: string;
  /** The object's digest; objects whose digest the ledger does not keep carry the transaction's. */
  readonly digest: string;
}

/** The objects a transaction created, and those it changed (Walrus blobs it certified or transferred). */
export function changedObjects(receipt: Pick<TxReceipt, "events" | "digest">, packageId: string): { created: ChangedObject[]; mutated: ChangedObject[] } {
  const created: ChangedObject[] = [];
  const mutated: ChangedObject[] = [];
  const at = { version: "1", digest: receipt.digest };
  for (const e of receipt.events) {
    if (e.type === "AccountCreated") created.push({ objectId: e.account.id, objectType: memWalAccountType(packageId), owner: { Shared: { initial_shared_version: 1 } }, ...at });
    else if (e.type === "BlobRecorded") created.push({ objectId: e.blob.object_id, objectType: memoryBlobType(packageId), owner: { AddressOwner: e.blob.owner }, ...at });
    else if (e.type === "ObjectPut") created.push({ objectId: e.object.object_id, objectType: e.object.type, owner: e.object.owner, ...at });
    else if (e.type === "WalrusObjectWritten") {
      const o = { objectId: e.object.object_id, objectType: e.object.type, owner: e.object.owner, version: e.object.version, digest: ledgerObjectDigest(e.object) };
      (e.created ? created : mutated).push(o);
    }
  }
  return { created, mutated };
}

type EffectsOwner = Parameters<typeof bcs.Owner.serialize>[0];

function effectsOwner(owner: unknown): EffectsOwner {
  if (owner === "Immutable") return { Immutable: true };
  const o = owner as { AddressOwner?: string; ObjectOwner?: string; Shared?: { initial_shared_version: string | number } };
  if (o.AddressOwner) return { AddressOwner: o.AddressOwner };
  if (o.ObjectOwner) return { ObjectOwner: o.ObjectOwner };
  return { Shared: { initialSharedVersion: String(o.Shared?.initial_shared_version ?? 1) } };
}

/**
 * BCS `TransactionEffects` (V2) of a receipt, the `rawEffects` the SDK's core API parses: success, the fixed gas, and
 * the created and changed objects. A changed object's input digest is not kept by the ledger; the transaction digest
 * stands in for it.
 */
export function rawEffects(receipt: TxReceipt, packageId: string): number[] {
  const { created, mutated } = changedObjects(receipt, packageId);
  const write = (o: ChangedObject) => ({ ObjectWrite: [o.digest, effectsOwner(o.owner)] as [string, EffectsOwner] });
  const lamport = [...created, ...mutated].reduce((max, o) => (BigInt(o.version) > max ? BigInt(o.version) : max), 1n);
  return [
    ...bcs.TransactionEffects.serialize({
      V2: {
        status: { Success: true },
        executedEpoch: "0",
        gasUsed: { computationCost: receipt.gas_used, storageCost: "0", storageRebate: "0", nonRefundableStorageFee: "0" },
        transactionDigest: receipt.digest,
        gasObjectIndex: null,
        eventsDigest: null,
        dependencies: [],
        lamportVersion: lamport.toString(),
        changedObjects: [
          ...created.map((o) => [o.objectId, { inputState: { NotExist: true }, outputState: write(o), idOperation: { Created: true } }] as const),
          ...mutated.map((o) => [o.objectId, { inputState: { Exist: [[String(BigInt(o.version) - 1n), receipt.digest], effectsOwner(o.owner)] }, outputState: write(o), idOperation: { None: true } }] as const),
        ] as never,
        unchangedConsensusObjects: [],
        auxDataDigest: null,
      },
    }).toBytes(),
  ];
}

/** A transaction block as the JSON-RPC answers it, showing what `options` asks for. */
function blockJson(receipt: TxReceipt, options: BlockOptions, packageId: string, signed?: SignedTx): Record<string, unknown> {
  const out: Record<string, unknown> = { digest: receipt.digest, timestampMs: String(receipt.executed_at), checkpoint: String(receipt.seq) };
  if (options.showRawInput && signed) out.rawTransaction = senderSignedData(signed);
  const { created, mutated } = changedObjects(receipt, packageId);
  const reference = (o: ChangedObject) => ({ owner: o.owner, reference: { objectId: o.objectId, version: Number(o.version), digest: o.digest } });
  if (options.showEffects) {
    out.effects = {
      messageVersion: "v1",
      status: { status: "success" },
      executedEpoch: "0",
      gasUsed: { computationCost: receipt.gas_used, storageCost: "0", storageRebate: "0", nonRefundableStorageFee: "0" },
      transactionDigest: receipt.digest,
      created: created.map(reference),
      ...(mutated.length ? { mutated: mutated.map(reference) } : {}),
      gasObject: { owner: { AddressOwner: receipt.gas_owner ?? receipt.sender }, reference: { objectId: "0x0", version: 0, digest: receipt.digest } },
    };
  }
  if (options.showRawEffects) out.rawEffects = rawEffects(receipt, packageId);
  if (options.showEvents) out.events = [];
  if (options.showObjectChanges) {
    out.objectChanges = [
      ...created.map((o) => ({ type: "created", sender: receipt.sender, owner: o.owner, objectType: o.objectType, objectId: o.objectId, version: o.version, digest: o.digest })),
      ...mutated.map((o) => ({ type: "mutated", sender: receipt.sender, owner: o.owner, objectType: o.objectType, objectId: o.objectId, version: o.version, previousVersion: String(BigInt(o.version) - 1n), digest: o.digest })),
    ];
  }
  if (options.showBalanceChanges) {
    out.balanceChanges = receipt.events.flatMap((e) =>
      e.type === "BalanceChanged" && COIN_TYPES[e.token] ? [{ owner: { AddressOwner: e.address }, coinType: COIN_TYPES[e.token], amount: e.delta }] : [],
    );
  }
  return out;
}

export function transactionMethods(
  ledger: LedgerTransactions,
  readOwned: (objectId: string, options: Record<string, boolean>) => Promise<unknown>,
): Record<string, (params: unknown[]) => Promise<unknown>> {
  const options = (o: unknown): BlockOptions => (o && typeof o === "object" ? (o as BlockOptions) : {});
  return {
    sui_executeTransactionBlock: async ([txBytes, signatures, opts]) => {
      if (typeof txBytes !== "string" || !Array.isArray(signatures) || !signatures.every((s) => typeof s === "string")) {
        throw new RpcError(-32602, "Invalid Params: expected (tx_bytes base64, signatures[])");
      }
      const signed: SignedTx = { tx_bytes: txBytes, signatures: signatures as string[] };
      let digest: string;
      try {
        ({ digest } = await ledger.submit(signed));
      } catch (err) {
        // -32002 is the full node's "transaction execution failed / refused" family.
        throw new RpcError(-32002, refusalMessage(err));
      }
      const receipt = await ledger.getTransaction(digest);
      if (!receipt) throw new RpcError(-32603, "executed transaction not readable yet");
      return blockJson(receipt, options(opts), ledger.packageId, signed);
    },
    sui_getTransactionBlock: async ([digest, opts]) => {
      if (typeof digest !== "string" || !DIGEST_RE.test(digest)) throw new RpcError(-32602, "Invalid Params: digest");
      const receipt = await ledger.getTransaction(digest);
      if (!receipt) throw new RpcError(-32602, `Could not find the referenced transaction [TransactionDigest(${digest})].`);
      return blockJson(receipt, options(opts), ledger.packageId);
    },
    suix_getBalance: async ([owner, coinType]) => {
      if (typeof owner !== "string") throw new RpcError(-32602, "Invalid Params: owner");
      const type = typeof coinType === "string" ? coinType : SUI;
      const token = tokenOf(type);
      const amount = token ? ((await ledger.balance(normalizeSuiAddress(owner))).balances[token] ?? 0n) : 0n;
      // Ledger balances are address balances: no coin objects.
      return { coinType: normalizeStructTag(type), coinObjectCount: 0, totalBalance: amount.toString(), lockedBalance: {}, fundsInAddressBalance: amount.toString() };
    },
    suix_getReferenceGasPrice: async () => GAS_PRICE.toString(),
    // Ledger balances are address balances: there are no coin objects to list.
    suix_getCoins: async ([owner]) => {
      if (typeof owner !== "string") throw new RpcError(-32602, "Invalid Params: owner");
      return { data: [], nextCursor: null, hasNextPage: false };
    },
    // What transaction builders read: the epoch (ValidDuring bounds) and the reference gas price.
    suix_getLatestSuiSystemState: async () => ({
      systemStateVersion: "2",
      epoch: String(LOCAL_SUI_EPOCH),
      protocolVersion: "1",
      referenceGasPrice: GAS_PRICE.toString(),
      epochStartTimestampMs: "0",
      epochDurationMs: String(24 * 3600 * 1000),
      safeMode: false,
      safeModeStorageRewards: "0",
      safeModeComputationRewards: "0",
      safeModeStorageRebates: "0",
      safeModeNonRefundableStorageFee: "0",
      stakeSubsidyStartEpoch: "0",
      maxValidatorCount: "0",
      minValidatorJoiningStake: "0",
      validatorLowStakeThreshold: "0",
      validatorLowStakeGracePeriod: "0",
      storageFundTotalObjectStorageRebates: "0",
      storageFundNonRefundableBalance: "0",
      stakeSubsidyBalance: "0",
      stakeSubsidyDistributionCounter: "0",
      stakeSubsidyCurrentDistributionAmount: "0",
      stakeSubsidyPeriodLength: "0",
      stakeSubsidyDecreaseRate: 0,
      activeValidators: [],
    }),
    // Gas is a fixed fee, so a dry run is the ledger's decision on the current state: success with the fee and the
    // objects it would create, or the reason it would refuse.
    sui_dryRunTransactionBlock: async ([txBytes]) => {
      if (typeof txBytes !== "string") throw new RpcError(-32602, "Invalid Params: expected tx_bytes base64");
      if (!ledger.dryRun) throw new RpcError(-32601, "Method not found: sui_dryRunTransactionBlock");
      const result = await ledger.dryRun(fromBase64(txBytes));
      if ("error" in result) {
        return {
          effects: { messageVersion: "v1", status: { status: "failure", error: result.error }, executedEpoch: "0", gasUsed: { computationCost: "0", storageCost: "0", storageRebate: "0", nonRefundableStorageFee: "0" }, transactionDigest: "", gasObject: { owner: "Immutable", reference: { objectId: "0x0", version: 0, digest: "" } } },
          events: [],
          objectChanges: [],
          balanceChanges: [],
          input: {},
        };
      }
      return { ...blockJson(result.receipt, { showEffects: true, showObjectChanges: true, showBalanceChanges: true }, ledger.packageId), events: [], input: {} };
    },
    // Owned objects: the ledger indexes only the memory blobs an address owns (its other objects are shared).
    suix_getOwnedObjects: async ([owner, query, cursor, limit]) => {
      if (typeof owner !== "string") throw new RpcError(-32602, "Invalid Params: owner");
      const q = (query ?? {}) as { filter?: { StructType?: string }; options?: Record<string, boolean> };
      const blobType = memoryBlobType(ledger.packageId);
      if (!q.filter?.StructType || normalizeStructTag(q.filter.StructType) !== normalizeStructTag(blobType)) {
        throw new RpcError(-32602, `Invalid Params: this ledger lists owned objects by the filter {StructType: "${blobType}"} only`);
      }
      const size = Math.min(Math.max(Number(limit ?? 50) || 50, 1), 50);
      const start = typeof cursor === "string" && /^[0-9]{1,9}$/.test(cursor) ? Number(cursor) : 0;
      const blobs = await ledger.listBlobs(normalizeSuiAddress(owner), { limit: start + size + 1 });
      const page = blobs.slice(start, start + size);
      const data = await Promise.all(page.map((b) => readOwned(b.objectId, q.options ?? {})));
      const more = blobs.length > start + size;
      return { data, nextCursor: more ? String(start + size) : null, hasNextPage: more };
    },
  };
}
