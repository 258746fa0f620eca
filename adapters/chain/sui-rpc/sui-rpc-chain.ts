// The chain port over a Sui full node's JSON-RPC (CHAIN_RPC_URL): a real network, or the local ledger's RPC, which
// speaks the same methods. Writes are the same TransactionData the local ledger executes (tx.ts), signed here and
// executed by the node; reads go through the memory package's objects: MemWalAccount (delegate keys), the
// AccountRegistry's accounts table (exists, and an owner's account for the dashboard), MemoryBlob objects owned by a
// memory's owner (restore's listing).
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { normalizeSuiAddress } from "@mysten/sui/utils";
import { PortError, type AccountDirectory, type BlobObject, type BlobRecordInput, type ChainPort, type ExecutedTx, type ResolvedAccount, type ServerTransactions, type SponsoredChainPort, type WalletBalance } from "../../ports.ts";
import { accountRegistryType, memoryBlobType, memWalAccountType, type ChainTarget, type MemoryAccount, type ObjectOwner, type SignedTx, type StoredObject } from "../../../schemas/chain.ts";
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
/** Object ids per `sui_multiGetObjects` call (the full node's limit). */
const MULTI_GET_MAX = 50;

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

export class SuiRpcChain implements ChainPort, SponsoredChainPort, AccountDirectory {
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
    const account = await this.getAccount(accountIdHint);
    if (!account?.active) return null;
    const held = account.delegate_keys.some((k) => k.public_key === publicKeyHex.toLowerCase());
    return held ? { owner: account.owner, accountId: account.id } : null;
  }

  /** The MemWalAccount object `accountId`, or null when it is not one of this package. */
  async getAccount(accountId: string): Promise<MemoryAccount | null> {
    const id = normalizeSuiAddress(accountId);
    const f = await this.fields(id, memWalAccountType(this.packageId));
    if (!f) return null;
    const keys = (f.delegate_keys as { fields?: Fields }[] | undefined) ?? [];
    return {
      id,
      owner: normalizeSuiAddress(String(f.owner)),
      active: f.active === true,
      delegate_keys: keys.map(({ fields: k = {} }) => ({
        public_key: hexOf(k.public_key).toLowerCase(),
        sui_address: normalizeSuiAddress(String(k.sui_address)),
        label: String(k.label ?? ""),
        created_at: Number(k.created_at),
      })),
    };
  }

  /** The registry's accounts table maps owner → account id (a `Field<address, ID>` whose value is the id). */
  async getAccountByOwner(owner: string): Promise<MemoryAccount | null> {
    const field = await this.accountsEntry(owner);
    const accountId = (field?.content as { fields?: { value?: unknown } } | undefined)?.fields?.value;
    return typeof accountId === "string" ? this.getAccount(accountId) : null;
  }

  async accountExists(owner: string): Promise<boolean> {
    return !!(await this.accountsEntry(owner));
  }

  private async accountsEntry(owner: string) {
    if (!this.accountsTable) {
      const registry = await this.fields(this.target.registryId, accountRegistryType(this.packageId));
      const table = ((registry?.accounts as { fields?: { id?: { id?: string } } } | undefined)?.fields?.id?.id) ?? undefined;
      if (!table) throw new PortError(PORT, "unavailable", `MEMORY_REGISTRY_ID ${this.target.registryId} is not an AccountRegistry of ${this.packageId}`);
      this.accountsTable = table;
    }
    const field = await this.client
      .getDynamicFieldObject({ parentId: this.accountsTable, name: { type: "address", value: normalizeSuiAddress(owner) } })
      .catch((err) => Promise.reject(portError(err)));
    return field.data ?? null;
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
      const executed = await this.client.waitForTransaction({ digest, options: { showObjectChanges: true } }).catch((err) => Promise.reject(portError(err)));
      const created = (executed.objectChanges ?? []).flatMap((c) => (c.type === "created" && c.objectType === memoryBlobType(this.packageId) ? [c.objectId] : []));
      // Created objects are not listed in call order: each is matched to its record by its fields.
      const objects = [];
      for (let i = 0; i < created.length; i += MULTI_GET_MAX) {
        const ids = created.slice(i, i + MULTI_GET_MAX);
        objects.push(...(await this.client.multiGetObjects({ ids, options: { showContent: true, showOwner: true } }).catch((err) => Promise.reject(portError(err)))));
      }
      for (const o of objects) {
        const f = (o.data?.content as { fields?: Fields } | undefined)?.fields;
        const owner = o.data?.owner && typeof o.data.owner === "object" && "AddressOwner" in o.data.owner ? normalizeSuiAddress(o.data.owner.AddressOwner) : undefined;
        const m = f && missing.find((x) => x.blobId === f.blob_id && x.owner === owner);
        if (m && o.data) found.set(`${m.owner}/${m.blobId}`, { objectId: o.data.objectId, blobId: m.blobId, owner: m.owner, namespace: m.namespace, packageId: this.packageId, createdAtMs: Number(executed.timestampMs ?? Date.now()), size: m.size });
      }
    }
    return wanted.map((w) => {
      const b = found.get(`${w.owner}/${w.blobId}`);
      if (!b) throw new PortError(PORT, "unavailable", "record_blob created no MemoryBlob");
      return b;
    });
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
