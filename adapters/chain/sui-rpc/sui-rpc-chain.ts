// The chain port over a Sui full node's JSON-RPC (CHAIN_RPC_URL): a real network, or the local ledger's RPC, which
// speaks the same methods. Writes are the same TransactionData the local ledger executes (tx.ts), signed here and
// executed by the node; reads go through the memory package's objects: MemWalAccount (delegate keys), the
// AccountRegistry's accounts table (exists), MemoryBlob objects owned by a memory's owner (restore's listing).
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { normalizeSuiAddress } from "@mysten/sui/utils";
import { PortError, type BlobObject, type ChainPort, type ExecutedTx, type ResolvedAccount, type ServerTransactions, type SponsoredChainPort, type WalletBalance } from "../../ports.ts";
import { accountRegistryType, memoryBlobType, memWalAccountType, type ChainTarget, type ObjectOwner, type SignedTx, type StoredObject } from "../../../schemas/chain.ts";
import { encodeTransactionKind } from "../local/transaction-data.ts";
import { directTransactions } from "../server-transactions.ts";

const PORT = "chain";
const SUI = "0x2::sui::SUI";

export interface SuiRpcChainOptions {
  readonly rpcUrl: string;
  readonly network: string;
  /** MEMORY_PACKAGE_ID */
  readonly packageId: string;
  /** MEMORY_REGISTRY_ID */
  readonly registryId: string;
  /** Coin type of the storage token (WAL) whose balance the monitor watches. */
  readonly walCoinType?: string;
}

type Fields = Record<string, unknown>;

/** A JSON-RPC refusal is the chain's answer (rejected); a transport failure is an outage (unavailable). */
function portError(err: unknown): PortError {
  if (err instanceof PortError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const rpc = err && typeof err === "object" && "code" in err && typeof (err as { code: unknown }).code === "number";
  return new PortError(PORT, rpc ? "rejected" : "unavailable", message);
}

const hexOf = (bytes: unknown) => (Array.isArray(bytes) ? Buffer.from(bytes as number[]).toString("hex") : typeof bytes === "string" ? bytes.replace(/^0x/, "") : "");

function ownerOf(owner: unknown): ObjectOwner {
  if (owner && typeof owner === "object") {
    const o = owner as Record<string, unknown>;
    if (typeof o.AddressOwner === "string") return { AddressOwner: o.AddressOwner };
    if (typeof o.ObjectOwner === "string") return { ObjectOwner: o.ObjectOwner };
    if (o.Shared && typeof o.Shared === "object") return { Shared: { initial_shared_version: String((o.Shared as Fields).initial_shared_version) } };
  }
  return "Immutable";
}

export class SuiRpcChain implements ChainPort, SponsoredChainPort {
  readonly packageId: string;
  readonly network: string;
  readonly target: ChainTarget;
  private readonly client: SuiJsonRpcClient;
  private readonly walCoinType: string | undefined;
  private accountsTable: string | undefined;
  /** How recordBlob's transactions reach the node: directly, unless withServerTransactions says otherwise. */
  private serverTransactions: ServerTransactions;

  private constructor(client: SuiJsonRpcClient, opts: SuiRpcChainOptions, chainIdentifier: string) {
    this.client = client;
    this.packageId = normalizeSuiAddress(opts.packageId);
    this.network = opts.network;
    this.walCoinType = opts.walCoinType;
    this.target = { network: opts.network, chainIdentifier, packageId: this.packageId, registryId: normalizeSuiAddress(opts.registryId) };
    this.serverTransactions = directTransactions(this.target, (tx) => this.executeBlock(tx));
  }

  /** This chain with its server-signed writes executed by `wrap(direct)`; everything else is shared with it. */
  withServerTransactions(wrap: (direct: ServerTransactions) => ServerTransactions): SuiRpcChain {
    const view = Object.create(this) as SuiRpcChain;
    view.serverTransactions = wrap(this.serverTransactions);
    return view;
  }

  /** Connects and reads the network's chain identifier (its genesis checkpoint digest), which transactions name. */
  static async connect(opts: SuiRpcChainOptions): Promise<SuiRpcChain> {
    const client = new SuiJsonRpcClient({ url: opts.rpcUrl, network: opts.network as "localnet" });
    try {
      const genesis = await client.getCheckpoint({ id: "0" });
      return new SuiRpcChain(client, opts, genesis.digest);
    } catch (err) {
      throw portError(err);
    }
  }

  private async fields(objectId: string, type: string): Promise<Fields | null> {
    const o = await this.client.getObject({ id: objectId, options: { showContent: true, showType: true } }).catch((err) => Promise.reject(portError(err)));
    const content = o.data?.content as { dataType?: string; type?: string; fields?: Fields } | undefined;
    return content?.dataType === "moveObject" && content.type === type ? (content.fields ?? {}) : null;
  }

  /** Needs the account id (the signed x-account-id): a node has no index from a delegate key to its account. */
  async resolveDelegate(publicKeyHex: string, accountIdHint?: string): Promise<ResolvedAccount | null> {
    if (!accountIdHint) return null;
    const accountId = normalizeSuiAddress(accountIdHint);
    const f = await this.fields(accountId, memWalAccountType(this.packageId));
    if (!f || f.active !== true) return null;
    const keys = (f.delegate_keys as { fields?: Fields }[] | undefined) ?? [];
    const held = keys.some((k) => hexOf(k.fields?.public_key) === publicKeyHex.toLowerCase());
    return held ? { owner: normalizeSuiAddress(String(f.owner)), accountId } : null;
  }

  async accountExists(owner: string): Promise<boolean> {
    if (!this.accountsTable) {
      const registry = await this.fields(this.target.registryId, accountRegistryType(this.packageId));
      const table = ((registry?.accounts as { fields?: { id?: { id?: string } } } | undefined)?.fields?.id?.id) ?? undefined;
      if (!table) throw new PortError(PORT, "unavailable", `MEMORY_REGISTRY_ID ${this.target.registryId} is not an AccountRegistry of ${this.packageId}`);
      this.accountsTable = table;
    }
    const field = await this.client
      .getDynamicFieldObject({ parentId: this.accountsTable, name: { type: "address", value: normalizeSuiAddress(owner) } })
      .catch((err) => Promise.reject(portError(err)));
    return !!field.data;
  }

  async recordBlob(input: { owner: string; namespace: string; blobId: string; size: number; walletSecretKey: Uint8Array }): Promise<BlobObject> {
    const owner = normalizeSuiAddress(input.owner);
    // Idempotent per (owner, blob id), as the port promises: a retried job finds its blob recorded.
    const existing = (await this.listBlobs(owner, { namespace: input.namespace, limit: 10_000 })).find((b) => b.blobId === input.blobId);
    if (existing) return existing;
    let kind: Uint8Array;
    try {
      kind = encodeTransactionKind("record_blob", { owner, blob_id: input.blobId, namespace: input.namespace, package_id: this.packageId, size: input.size }, this.target);
    } catch (err) {
      throw new PortError(PORT, "invalid", err instanceof Error ? err.message : String(err));
    }
    const { digest } = await this.serverTransactions.execute(kind, input.walletSecretKey);
    // A sponsored execution answers with the digest only: the created object is read from the transaction.
    const executed = await this.client.waitForTransaction({ digest, options: { showObjectChanges: true } }).catch((err) => Promise.reject(portError(err)));
    const created = executed.objectChanges?.find((c) => c.type === "created" && c.objectType === memoryBlobType(this.packageId));
    if (!created || created.type !== "created") throw new PortError(PORT, "unavailable", "record_blob created no MemoryBlob");
    return { objectId: created.objectId, blobId: input.blobId, owner, namespace: input.namespace, packageId: this.packageId, createdAtMs: Number(executed.timestampMs ?? Date.now()), size: input.size };
  }

  async listBlobs(owner: string, opts: { namespace?: string; limit: number }): Promise<BlobObject[]> {
    const out: BlobObject[] = [];
    let cursor: string | null | undefined;
    do {
      const page = await this.client
        .getOwnedObjects({ owner: normalizeSuiAddress(owner), filter: { StructType: memoryBlobType(this.packageId) }, options: { showContent: true }, cursor })
        .catch((err) => Promise.reject(portError(err)));
      for (const item of page.data) {
        const f = (item.data?.content as { fields?: Fields } | undefined)?.fields;
        if (!f || (opts.namespace !== undefined && f.namespace !== opts.namespace)) continue;
        out.push({
          objectId: item.data!.objectId,
          blobId: String(f.blob_id),
          owner: normalizeSuiAddress(String(f.owner ?? owner)),
          namespace: String(f.namespace),
          packageId: normalizeSuiAddress(String(f.package_id)),
          createdAtMs: Number(f.created_at),
          size: Number(f.size),
        });
      }
      cursor = page.hasNextPage ? page.nextCursor : null;
    } while (cursor);
    return out.sort((a, b) => b.createdAtMs - a.createdAtMs).slice(0, opts.limit);
  }

  async balance(address: string): Promise<WalletBalance> {
    const owner = normalizeSuiAddress(address);
    const tokens: [string, string][] = [["SUI", SUI], ...(this.walCoinType ? [["WAL", this.walCoinType] as [string, string]] : [])];
    const balances: Record<string, bigint> = {};
    for (const [token, coinType] of tokens) {
      const b = await this.client.getBalance({ owner, coinType }).catch((err) => Promise.reject(portError(err)));
      balances[token] = BigInt(b.totalBalance);
    }
    return { address: owner, balances };
  }

  async execute(tx: SignedTx): Promise<ExecutedTx> {
    const executed = await this.executeBlock(tx);
    const ids = (executed.objectChanges ?? []).flatMap((c) => (c.type === "created" || c.type === "mutated" ? [c.objectId] : []));
    const objects = (await Promise.all(ids.map((id) => this.getObject(id)))).filter((o): o is StoredObject => o !== null);
    return { digest: executed.digest, objects };
  }

  async getObject(objectId: string): Promise<StoredObject | null> {
    const o = await this.client
      .getObject({ id: normalizeSuiAddress(objectId), options: { showContent: true, showType: true, showOwner: true, showPreviousTransaction: true } })
      .catch((err) => Promise.reject(portError(err)));
    if (!o.data) return null;
    const content = o.data.content as { fields?: Fields } | undefined;
    return {
      object_id: o.data.objectId,
      type: String(o.data.type),
      version: String(o.data.version),
      owner: ownerOf(o.data.owner),
      fields: content?.fields ?? {},
      previous_transaction: String(o.data.previousTransaction ?? ""),
    };
  }

  private async executeBlock(tx: SignedTx) {
    try {
      const r = await this.client.executeTransactionBlock({ transactionBlock: tx.tx_bytes, signature: [...tx.signatures], options: { showEffects: true, showObjectChanges: true } });
      if (r.effects?.status.status !== "success") throw new PortError(PORT, "rejected", r.effects?.status.error ?? "transaction failed");
      return r;
    } catch (err) {
      throw portError(err);
    }
  }
}
