// The chain port over a Sui full node (CHAIN_GRPC_URL: its gRPC API, spoken as gRPC-web; else CHAIN_RPC_URL: its
// JSON-RPC): a real network, or the local ledger's RPC listener, which speaks both. One adapter over the SDK's
// transport-neutral core API (`client.core`), so both transports run the same code. Writes are the same
// TransactionData the local ledger executes (tx.ts), signed here and executed by the node; reads parse the memory
// package's objects from their BCS contents (move-layouts.ts), which every API returns alike: MemWalAccount (delegate
// keys), the AccountRegistry's accounts table (exists, and an owner's account for the dashboard), MemoryBlob objects
// owned by a memory's owner (restore's listing).
import type { ClientWithCoreApi, SuiClientTypes } from "@mysten/sui/client";
import { ObjectError } from "@mysten/sui/client";
import { RpcError } from "@mysten/sui/grpc";
import { bcs } from "@mysten/sui/bcs";
import { fromBase64, normalizeStructTag, normalizeSuiAddress } from "@mysten/sui/utils";
import { PortError, SignatureRejected, type AccountDirectory, type BlobObject, type BlobRecordInput, type ChainPort, type ExecutedTx, type ResolvedAccount, type ServerTransactions, type SponsoredChainPort, type WalletBalance } from "../../ports.ts";
import { accountRegistryType, memoryBlobType, memWalAccountType, type ChainTarget, type ChainTransport, type MemoryAccount, type ObjectOwner, type SignedTx, type StoredObject } from "../../../schemas/chain.ts";
import { encodeTransactionKind } from "../sui/transaction-kind.ts";
import { directTransactions } from "../server-transactions.ts";
import { AccountRegistryBcs, MemoryBlobBcs, MemWalAccountBcs, ObjectIdBcs } from "../move-layouts.ts";
import { suiNodeClient, transportOf } from "./node-client.ts";

const PORT = "chain";
const SUI = "0x2::sui::SUI";

export interface SuiRpcChainOptions {
  /** CHAIN_RPC_URL: the node's JSON-RPC, used when no grpcUrl is given. */
  readonly rpcUrl?: string;
  /** CHAIN_GRPC_URL: the node's gRPC API (gRPC-web); takes precedence over rpcUrl. */
  readonly grpcUrl?: string;
  readonly network: string;
  /** MEMORY_PACKAGE_ID */
  readonly packageId: string;
  /** MEMORY_REGISTRY_ID */
  readonly registryId: string;
  /** Coin type of the storage token (WAL) whose balance the monitor watches. */
  readonly walCoinType?: string;
}

/** gRPC statuses that are the node's answer to this request (rejected); any other is an outage (unavailable). */
const GRPC_REFUSALS = new Set(["INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "FAILED_PRECONDITION", "OUT_OF_RANGE"]);

/**
 * How a Sui node refuses a transaction whose user signature does not verify (its QuorumDriverError::InvalidUserSignature
 * around SuiError::InvalidSignature): JSON-RPC error -32002 or gRPC INVALID_ARGUMENT, with this message. Only that
 * inner error: the same outer error also says a required signer's signature is absent (a valid signature by someone
 * other than the sender), which the local ledger does not count as a bad signature either.
 */
const INVALID_USER_SIGNATURE = /^Invalid user signature: Signature is not valid\b/;

/**
 * A node's refusal is the chain's answer (rejected; SignatureRejected when the user signature does not verify); a
 * transport failure is an outage (unavailable).
 */
export function portError(err: unknown): PortError {
  if (err instanceof PortError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const code = err && typeof err === "object" && "code" in err ? (err as { code: unknown }).code : undefined;
  // JSON-RPC errors carry a numeric code; an HTTP failure or a refused connection has none.
  const refused = err instanceof RpcError ? GRPC_REFUSALS.has(String(code)) : typeof code === "number";
  if (refused && INVALID_USER_SIGNATURE.test(message)) return new SignatureRejected(PORT, message);
  return new PortError(PORT, refused ? "rejected" : "unavailable", message);
}

const caught = (err: unknown) => Promise.reject(portError(err));

function ownerOf(owner: SuiClientTypes.ObjectOwner | null): ObjectOwner {
  if (owner?.$kind === "AddressOwner") return { AddressOwner: normalizeSuiAddress(owner.AddressOwner) };
  if (owner?.$kind === "ObjectOwner") return { ObjectOwner: normalizeSuiAddress(owner.ObjectOwner) };
  if (owner?.$kind === "Shared") return { Shared: { initial_shared_version: String(owner.Shared.initialSharedVersion) } };
  return "Immutable";
}

export class SuiRpcChain implements ChainPort, SponsoredChainPort, AccountDirectory {
  readonly packageId: string;
  readonly network: string;
  readonly target: ChainTarget;
  readonly transport: ChainTransport;
  private readonly core: ClientWithCoreApi["core"];
  private readonly walCoinType: string | undefined;
  private accountsTable: string | undefined;
  /** How recordBlob's transactions reach the node: directly, unless withServerTransactions says otherwise. */
  private serverTransactions: ServerTransactions;

  private constructor(client: ClientWithCoreApi, transport: ChainTransport, opts: SuiRpcChainOptions, chainIdentifier: string) {
    this.core = client.core;
    this.transport = transport;
    this.packageId = normalizeSuiAddress(opts.packageId);
    this.network = opts.network;
    this.walCoinType = opts.walCoinType;
    this.target = { network: opts.network, chainIdentifier, packageId: this.packageId, registryId: normalizeSuiAddress(opts.registryId) };
    this.serverTransactions = directTransactions(this.target, (tx) => this.executeBlock(tx, {}));
  }

  /** This chain with its server-signed writes executed by `wrap(direct)`; everything else is shared with it. */
  withServerTransactions(wrap: (direct: ServerTransactions) => ServerTransactions): SuiRpcChain {
    const view = Object.create(this) as SuiRpcChain;
    view.serverTransactions = wrap(this.serverTransactions);
    return view;
  }

  /** Connects and reads the network's chain identifier (its genesis checkpoint digest), which transactions name. */
  static async connect(opts: SuiRpcChainOptions): Promise<SuiRpcChain> {
    if (!transportOf(opts)) throw new PortError(PORT, "invalid", "a Sui node URL is required: CHAIN_GRPC_URL or CHAIN_RPC_URL");
    const { client, transport } = suiNodeClient(opts);
    const { chainIdentifier } = await client.core.getChainIdentifier().catch(caught);
    return new SuiRpcChain(client, transport, opts, chainIdentifier);
  }

  /** The object's BCS contents when it exists and is of `type`, else null. */
  private async contents(objectId: string, type: string): Promise<Uint8Array | null> {
    const { objects } = await this.core.getObjects({ objectIds: [normalizeSuiAddress(objectId)], include: { content: true } }).catch(caught);
    const o = objects[0];
    if (o instanceof ObjectError && o.reason === "notFound") return null;
    if (!o || o instanceof Error) throw portError(o ?? new Error("no object in the answer"));
    return normalizeStructTag(o.type) === normalizeStructTag(type) ? o.content : null;
  }

  /** Needs the account id (the signed x-account-id): a node has no index from a delegate key to its account. */
  async resolveDelegate(publicKeyHex: string, accountIdHint?: string): Promise<ResolvedAccount | null> {
    if (!accountIdHint) return null;
    const account = await this.getAccount(accountIdHint);
    if (!account?.active) return null;
    const held = account.delegate_keys.some((k) => k.public_key === publicKeyHex.toLowerCase());
    return held ? { owner: account.owner, accountId: account.id } : null;
  }

  /** The MemWalAccount object `accountId`, or null when it is not one of this package. */
  async getAccount(accountId: string): Promise<MemoryAccount | null> {
    const id = normalizeSuiAddress(accountId);
    const bytes = await this.contents(id, memWalAccountType(this.packageId));
    if (!bytes) return null;
    const a = parsed(() => MemWalAccountBcs.parse(bytes));
    return {
      id,
      owner: normalizeSuiAddress(a.owner),
      active: a.active,
      delegate_keys: a.delegate_keys.map((k) => ({
        public_key: Buffer.from(k.public_key).toString("hex"),
        sui_address: normalizeSuiAddress(k.sui_address),
        label: k.label,
        created_at: Number(k.created_at),
      })),
    };
  }

  /** The registry's accounts table maps owner → account id (a `Field<address, ID>` whose value is the id). */
  async getAccountByOwner(owner: string): Promise<MemoryAccount | null> {
    const accountId = await this.accountsEntry(owner);
    return accountId ? this.getAccount(accountId) : null;
  }

  async accountExists(owner: string): Promise<boolean> {
    return (await this.accountsEntry(owner)) !== null;
  }

  /** The owner's account id in the registry's accounts table, or null. */
  private async accountsEntry(owner: string): Promise<string | null> {
    if (!this.accountsTable) {
      const registry = await this.contents(this.target.registryId, accountRegistryType(this.packageId));
      if (!registry) throw new PortError(PORT, "unavailable", `MEMORY_REGISTRY_ID ${this.target.registryId} is not an AccountRegistry of ${this.packageId}`);
      this.accountsTable = normalizeSuiAddress(parsed(() => AccountRegistryBcs.parse(registry)).accounts.id);
    }
    try {
      const { dynamicField } = await this.core.getDynamicField({ parentId: this.accountsTable, name: { type: "address", bcs: bcs.Address.serialize(normalizeSuiAddress(owner)).toBytes() } });
      return normalizeSuiAddress(parsed(() => ObjectIdBcs.parse(dynamicField.value.bcs)));
    } catch (err) {
      if (err instanceof ObjectError && err.reason === "notFound") return null;
      throw portError(err);
    }
  }

  async recordBlob(input: BlobRecordInput & { walletSecretKey: Uint8Array }): Promise<BlobObject> {
    const [blob] = await this.recordBlobs([input], input.walletSecretKey);
    return blob!;
  }

  async recordBlobs(inputs: readonly BlobRecordInput[], walletSecretKey: Uint8Array): Promise<BlobObject[]> {
    const wanted = inputs.map((i) => ({ ...i, owner: normalizeSuiAddress(i.owner) }));
    // Idempotent per (owner, blob id), as the port promises: a retried job finds its blob recorded.
    const found = new Map<string, BlobObject>();
    for (const owner of new Set(wanted.map((w) => w.owner))) {
      for (const b of await this.listBlobs(owner, { limit: 10_000 })) found.set(`${owner}/${b.blobId}`, b);
    }
    const missing = wanted.filter((w, i) => !found.has(`${w.owner}/${w.blobId}`) && wanted.findIndex((o) => o.owner === w.owner && o.blobId === w.blobId) === i);
    if (missing.length) {
      const records = missing.map((m) => ({ owner: m.owner, blob_id: m.blobId, namespace: m.namespace, size: m.size }));
      let kind: Uint8Array;
      try {
        kind = encodeTransactionKind("record_blob", { package_id: this.packageId, records }, this.target);
      } catch (err) {
        throw new PortError(PORT, "invalid", err instanceof Error ? err.message : String(err));
      }
      const { digest } = await this.serverTransactions.execute(kind, walletSecretKey);
      // A sponsored execution answers with the digest only: the created objects are read from the transaction.
      const executed = await this.core.waitForTransaction({ digest, include: { objectTypes: true }, timeout: 30_000 }).catch(caught);
      const tx = executed.Transaction ?? executed.FailedTransaction;
      const blobType = normalizeStructTag(memoryBlobType(this.packageId));
      const created = Object.entries(tx.objectTypes ?? {}).flatMap(([id, type]) => (normalizeStructTag(type) === blobType ? [id] : []));
      // Created objects are not listed in call order: each is matched to its record by its contents.
      const { objects } = await this.core.getObjects({ objectIds: created, include: { content: true } }).catch(caught);
      for (const o of objects) {
        if (o instanceof Error) continue;
        const blob = this.blobOf(o.objectId, o.content);
        const m = blob && missing.find((x) => x.blobId === blob.blobId && x.owner === blob.owner);
        if (m) found.set(`${m.owner}/${m.blobId}`, { ...blob, namespace: m.namespace, size: m.size });
      }
    }
    return wanted.map((w) => {
      const b = found.get(`${w.owner}/${w.blobId}`);
      if (!b) throw new PortError(PORT, "unavailable", "record_blob created no MemoryBlob");
      return b;
    });
  }

  /** A MemoryBlob's contents as the port's BlobObject (null when they do not parse). */
  private blobOf(objectId: string, content: Uint8Array): BlobObject | null {
    try {
      const f = MemoryBlobBcs.parse(content);
      return {
        objectId: normalizeSuiAddress(objectId),
        blobId: f.blob_id,
        owner: normalizeSuiAddress(f.owner),
        namespace: f.namespace,
        packageId: normalizeSuiAddress(f.package_id),
        createdAtMs: Number(f.created_at),
        size: Number(f.size),
      };
    } catch {
      return null;
    }
  }

  async listBlobs(owner: string, opts: { namespace?: string; limit: number }): Promise<BlobObject[]> {
    const out: BlobObject[] = [];
    let cursor: string | null = null;
    do {
      const page: SuiClientTypes.ListOwnedObjectsResponse<{ content: true }> = await this.core
        .listOwnedObjects({ owner: normalizeSuiAddress(owner), type: memoryBlobType(this.packageId), include: { content: true }, cursor })
        .catch(caught);
      for (const item of page.objects) {
        const blob = this.blobOf(item.objectId, item.content);
        if (blob && (opts.namespace === undefined || blob.namespace === opts.namespace)) out.push(blob);
      }
      cursor = page.hasNextPage ? page.cursor : null;
    } while (cursor);
    return out.sort((a, b) => b.createdAtMs - a.createdAtMs).slice(0, opts.limit);
  }

  async balance(address: string): Promise<WalletBalance> {
    const owner = normalizeSuiAddress(address);
    const tokens: [string, string][] = [["SUI", SUI], ...(this.walCoinType ? [["WAL", this.walCoinType] as [string, string]] : [])];
    const balances: Record<string, bigint> = {};
    for (const [token, coinType] of tokens) {
      const { balance } = await this.core.getBalance({ owner, coinType }).catch(caught);
      balances[token] = BigInt(balance.balance);
    }
    return { address: owner, balances };
  }

  async execute(tx: SignedTx): Promise<ExecutedTx> {
    const executed = await this.executeBlock(tx, { objectTypes: true });
    const ids = Object.keys(executed.objectTypes ?? {});
    const objects = (await Promise.all(ids.map((id) => this.getObject(id)))).filter((o): o is StoredObject => o !== null);
    return { digest: executed.digest, objects };
  }

  /**
   * An object with its field values as the node renders them as JSON (the console reads them). The shape of that JSON
   * is the node's: a JSON-RPC node nests structs as {type, fields}; the local ledger answers both APIs with its own.
   */
  async getObject(objectId: string): Promise<StoredObject | null> {
    const { objects } = await this.core.getObjects({ objectIds: [normalizeSuiAddress(objectId)], include: { json: true, previousTransaction: true } }).catch(caught);
    const o = objects[0];
    if (o instanceof ObjectError && o.reason === "notFound") return null;
    if (!o || o instanceof Error) throw portError(o ?? new Error("no object in the answer"));
    return {
      object_id: normalizeSuiAddress(o.objectId),
      type: o.type,
      version: String(o.version),
      owner: ownerOf(o.owner),
      fields: o.json ?? {},
      previous_transaction: String(o.previousTransaction ?? ""),
    };
  }

  private async executeBlock<I extends SuiClientTypes.TransactionInclude>(tx: SignedTx, include: I) {
    const r = await this.core.executeTransaction({ transaction: fromBase64(tx.tx_bytes), signatures: [...tx.signatures], include }).catch(caught);
    if (r.FailedTransaction) throw new PortError(PORT, "rejected", r.FailedTransaction.status.error?.message ?? "transaction failed");
    return r.Transaction;
  }
}

/** Parses a node's object contents; contents of another layout mean the node is not serving this package. */
function parsed<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new PortError(PORT, "unavailable", `unexpected object contents: ${err instanceof Error ? err.message : String(err)}`);
  }
}
