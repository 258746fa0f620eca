// The local chain port: a persistent ledger event-sourced on the JetStream CHAIN stream (`chain.tx`), materialised into
// the `chain_state` KV bucket. Writes go through Ledger.submit (signed transactions, optimistic concurrency); reads are
// single KV gets, current as soon as the writing call returns, from any process.
import { Effect } from "effect";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { ensureStreams, type EventLog } from "../../../eventlog/connection.ts";
import { isStreamOrConsumerMissing } from "../../../eventlog/jetstream-errors.ts";
import { STREAMS } from "../../../eventlog/subjects.ts";
import { PortError, type BlobObject, type BlobRecordInput, type ChainPort, type ExecutedTx, type ServerTransactions, type SponsoredChainPort, type ResolvedAccount, type WalletBalance } from "../../ports.ts";
import { PORT, toPortError } from "./errors.ts";
import { keypairFromSecret, normalizeAddress, PUBLIC_KEY_HEX_RE, type ChainKeypair, type SecretKeyInput } from "../sui/keys.ts";
import { Ledger, type SubmitOptions, type SubmitResult } from "./ledger.ts";
import { BLOB_PAGE_SIZE, DEFAULT_TOKENS, type Account, type CallKind, type BlobRecord, type DynamicFieldInput, type GenesisState, type StoredDynamicField, type TxArgs, type TxReceipt } from "./model.ts";
import { type ChainTarget, type ObjectOwner, type SignedTx, type StoredObject } from "../../../schemas/chain.ts";
import { ALL_SCOPE, CHAIN_STATE_LAYOUT, KEYS, dynamicFieldBcsKey, dynamicFieldNameKey, namespaceScope, type BlobIndexHead, type BlobIndexPage } from "./state-keys.ts";
import { ChainStateStore } from "./state-store.ts";
import { buildSignedTx, deriveBlobObjectId, signOwnTransaction, txBody, type VerifiedTx } from "./tx.ts";
import { txDigestBytes } from "../sui/digest.ts";
import { decide } from "./decide.ts";
import { blobIdFromString, blobIdToU256, type WalrusRegistration } from "./walrus-layouts.ts";
import { StateView } from "./state-view.ts";
import { toBase58 } from "@mysten/sui/utils";
import { blobRecordOf, type BlobObjectView } from "./blob-object.ts";
import { decodeTransactionData, localTarget } from "./transaction-data.ts";
import { encodeTransactionKind } from "../sui/transaction-kind.ts";
import { directTransactions } from "../server-transactions.ts";
import type { DelegateEntry } from "./writes.ts";
import type { NetworkProfile } from "../../../config/network-profile.ts";

export interface LocalChainOptions {
  /** Package id carried by recorded blob objects (and, with Seal, the id of the published package object). */
  readonly packageId: string;
  readonly network?: string;
  /** The ledger operator's secret key: signs the genesis of an empty ledger, mint and put_object. */
  readonly operatorKey?: SecretKeyInput;
  /** Replicas of the chain_state bucket (and of the streams when created from a bare connection). */
  readonly replicas?: number;
  /** How often to check for, and repair, a state left behind by a crashed writer. 0 disables. Default 2000 ms. */
  readonly healIntervalMs?: number;
  readonly submitTimeoutMs?: number;
  /** Most transactions this process commits in one appended block (group commit). Default 128. */
  readonly maxBlockTxs?: number;
  /** MEMRELAY_NETWORK_PROFILE: finality waits and the owned-object rule of the ledger (ledger.ts). Default `local`. */
  readonly profile?: NetworkProfile;
}

export interface PutObjectInput {
  readonly type: string;
  readonly version: string | number;
  readonly fields: unknown;
  readonly owner?: ObjectOwner;
  readonly bcs?: string;
  readonly dynamicFields?: readonly DynamicFieldInput[];
}

/** A dynamic field name by JSON value, or by BCS bytes (base64) as the Sui core client asks for it. */
export type DynamicFieldLookup = { readonly type: string; readonly value: unknown } | { readonly type: string; readonly bcs: string };

const BLOB_LIST_MAX = 10_000;

function isEventLog(x: EventLog | NatsConnection): x is EventLog {
  return typeof (x as EventLog).jsm === "object" && typeof (x as EventLog).kvm === "object";
}

/** What `encode` builds; arguments it cannot encode are the caller's mistake (an invalid PortError). */
function encoded<T>(encode: () => T): T {
  try {
    return encode();
  } catch (err) {
    throw new PortError(PORT, "invalid", err instanceof Error ? err.message : String(err));
  }
}

/** UTF-16 surrogates: a string holding one may not survive UTF-8 unchanged (a lone one becomes U+FFFD). */
const SURROGATE = /[\uD800-\uDFFF]/;

/** A record whose arguments decode to exactly themselves (what signOwnTransaction's body must hold). */
function isCanonicalRecord(r: { owner: string; blob_id: string; namespace: string; size: number }): boolean {
  return normalizeAddress(r.owner) === r.owner && !SURROGATE.test(r.blob_id) && !SURROGATE.test(r.namespace) && Number.isSafeInteger(r.size) && r.size >= 0;
}

function toBlobObject(b: BlobRecord): BlobObject {
  return { objectId: b.object_id, blobId: b.blob_id, owner: b.owner, namespace: b.namespace, packageId: b.package_id, createdAtMs: b.created_at, size: b.size };
}

function strip<T>(v: T | null): T | null {
  if (!v || typeof v !== "object") return v;
  const { _seq, ...rest } = v as T & { _seq?: unknown };
  return rest as T;
}

async function run<A>(effect: Effect.Effect<A, unknown>): Promise<A> {
  try {
    return await Effect.runPromise(effect);
  } catch (err) {
    throw toPortError(err);
  }
}

export class LocalChain implements ChainPort, SponsoredChainPort {
  readonly packageId: string;
  readonly network: string;
  /** What this ledger's transactions name: network (chain identifier), package and account registry. */
  readonly target: ChainTarget;
  private readonly operator: ChainKeypair | null;
  private healTimer: NodeJS.Timeout | null = null;
  private healing = false;
  /** How recordBlob's transactions reach the ledger: directly, unless withServerTransactions says otherwise. */
  private serverTransactions: ServerTransactions;
  /** The direct way: this process signs, pays and submits to its own ledger (which then need not verify them again). */
  private readonly ownTransactions: ServerTransactions;

  private constructor(
    readonly ledger: Ledger,
    private readonly store: ChainStateStore,
    private readonly operatorSecret: SecretKeyInput | undefined,
    opts: LocalChainOptions,
  ) {
    const pkg = normalizeAddress(opts.packageId);
    if (!pkg) throw new PortError(PORT, "invalid", "packageId must be 0x followed by 64 hex characters");
    this.packageId = pkg;
    this.network = opts.network ?? "localnet";
    this.target = localTarget(this.network, pkg);
    this.operator = opts.operatorKey === undefined ? null : keypairFromSecret(opts.operatorKey);
    this.ownTransactions = directTransactions(this.target, (tx) => this.submit(tx));
    this.serverTransactions = this.ownTransactions;
  }

  /**
   * Opens the ledger on an event log (or a bare NATS connection, creating the streams if CHAIN is missing), catches
   * the state up with the stream and, on an empty ledger with an operator key, writes the genesis.
   */
  static async open(conn: EventLog | NatsConnection, opts: LocalChainOptions): Promise<LocalChain> {
    // On an event log, its replicas setting (NATS_REPLICAS) unless the caller says otherwise.
    const replicas = opts.replicas ?? (isEventLog(conn) ? conn.replicas : undefined) ?? 1;
    let js: JetStreamClient;
    let jsm: JetStreamManager;
    let kvm: Kvm;
    if (isEventLog(conn)) {
      ({ js, jsm, kvm } = conn);
    } else {
      js = jetstream(conn);
      jsm = await jetstreamManager(conn);
      kvm = new Kvm(conn);
      try {
        await jsm.streams.info(STREAMS.chain);
      } catch (err) {
        if (!isStreamOrConsumerMissing(err)) throw err;
        await ensureStreams(jsm, replicas);
      }
    }
    const store = await ChainStateStore.open(kvm, replicas);
    const pkg = normalizeAddress(opts.packageId);
    if (!pkg) throw new PortError(PORT, "invalid", "packageId must be 0x followed by 64 hex characters");
    const ledger = new Ledger(js, jsm, store, { target: localTarget(opts.network ?? "localnet", pkg), submitTimeoutMs: opts.submitTimeoutMs, maxBlockTxs: opts.maxBlockTxs, profile: opts.profile });
    const chain = new LocalChain(ledger, store, opts.operatorKey, opts);
    await chain.catchUp();
    if ((await store.layout()) !== CHAIN_STATE_LAYOUT) {
      // State written with another key layout (or none yet): materialise the stream again in this one.
      await run(ledger.rematerialise());
      await store.setLayout(CHAIN_STATE_LAYOUT);
    }
    await chain.ensureGenesis();
    chain.startHealing(opts.healIntervalMs ?? 2_000);
    return chain;
  }

  /** The account registry object transactions name (served by the RPC with its accounts table). */
  get registryId(): string {
    return this.target.registryId;
  }

  get operatorAddress(): string | null {
    return this.operator?.address ?? null;
  }

  // ------------------------------------------------------------------ ChainPort

  async resolveDelegate(publicKeyHex: string, accountIdHint?: string): Promise<ResolvedAccount | null> {
    const pk = publicKeyHex.toLowerCase();
    if (!PUBLIC_KEY_HEX_RE.test(pk)) return null;
    const entry = await this.read<DelegateEntry>(KEYS.delegateKey(pk));
    if (!entry || !entry.active) return null;
    if (accountIdHint && entry.account_id !== accountIdHint.toLowerCase()) return null;
    return { owner: entry.owner, accountId: entry.account_id };
  }

  async recordBlob(input: BlobRecordInput & { walletSecretKey: Uint8Array }): Promise<BlobObject> {
    const [blob] = await this.recordBlobs([input], input.walletSecretKey);
    return blob!;
  }

  async recordBlobs(inputs: readonly BlobRecordInput[], walletSecretKey: Uint8Array): Promise<BlobObject[]> {
    const records = inputs.map((i) => ({ owner: i.owner.toLowerCase(), blob_id: i.blobId, namespace: i.namespace, size: i.size }));
    const args = { package_id: this.packageId, records };
    const executed =
      this.serverTransactions === this.ownTransactions && records.every(isCanonicalRecord)
        ? await run(this.ledger.submitOwn(encoded(() => signOwnTransaction(txBody({ target: this.target, kind: "record_blob", args, sender: keypairFromSecret(walletSecretKey).address }), this.target, walletSecretKey))))
        : await this.serverTransactions.execute(encoded(() => encodeTransactionKind("record_blob", args, this.target)), walletSecretKey);
    // Executed directly, the ledger's outcome names the blobs the transaction created; the others were recorded
    // before it (record_blob is a no-op for a known owner and blob id), and a sponsored execution answers with its
    // digest only: those are read back.
    const outcome = "outcome" in executed ? (executed as SubmitResult).outcome : undefined;
    const made = new Map((outcome?.blobs ?? []).map((b) => [`${b.owner}/${b.blob_id}`, b]));
    return Promise.all(
      records.map(async (r) => {
        const blob = made.get(`${r.owner}/${r.blob_id}`) ?? (await this.readBlob(r.owner, r.blob_id));
        if (!blob) throw new PortError(PORT, "unavailable", "record_blob produced no blob object");
        return toBlobObject(blob);
      }),
    );
  }

  /** This ledger with its server-signed writes executed by `wrap(direct)`; everything else is shared with it. */
  withServerTransactions(wrap: (direct: ServerTransactions) => ServerTransactions): LocalChain {
    const view = Object.create(this) as LocalChain;
    view.serverTransactions = wrap(this.serverTransactions);
    return view;
  }

  async listBlobs(owner: string, opts: { namespace?: string; limit: number }): Promise<BlobObject[]> {
    const addr = normalizeAddress(owner);
    const limit = Math.min(Math.max(0, Math.floor(opts.limit)), BLOB_LIST_MAX);
    if (!addr || limit === 0) return [];
    const scope = opts.namespace === undefined ? ALL_SCOPE : namespaceScope(opts.namespace);
    const head = await this.read<BlobIndexHead>(KEYS.blobHead(addr, scope));
    if (!head) return [];
    // The newest page may hold a single item: one page more than `limit` needs when full.
    const pages: number[] = [];
    for (let p = head.page; p >= Math.max(0, head.page - Math.ceil(limit / BLOB_PAGE_SIZE)); p--) pages.push(p);
    const contents = await Promise.all(pages.map((p) => this.read<BlobIndexPage<BlobRecord>>(KEYS.blobPage(addr, scope, p))));
    const out: BlobObject[] = [];
    for (const page of contents) {
      const items = page?.items ?? [];
      for (let i = items.length - 1; i >= 0 && out.length < limit; i--) {
        const item = items[i];
        if (item) out.push(toBlobObject(item));
      }
    }
    return out;
  }

  async accountExists(owner: string): Promise<boolean> {
    const addr = normalizeAddress(owner);
    return addr !== null && (await this.read(KEYS.owner(addr))) !== null;
  }

  async balance(address: string): Promise<WalletBalance> {
    const addr = normalizeAddress(address);
    if (!addr) throw new PortError(PORT, "invalid", "address must be 0x followed by 64 hex characters");
    const stored = (await this.read<Record<string, string>>(KEYS.balance(addr))) ?? {};
    const balances: Record<string, bigint> = {};
    for (const t of DEFAULT_TOKENS) balances[t] = 0n;
    for (const [token, amount] of Object.entries(stored)) if (typeof amount === "string") balances[token] = BigInt(amount);
    return { address: addr, balances };
  }

  // ------------------------------------------------------------------ other reads

  /** Owner and account of an active delegate key, by the key's Sui address (Seal key-server policy). */
  async ownerOfDelegateAddress(suiAddress: string): Promise<ResolvedAccount | null> {
    const addr = normalizeAddress(suiAddress);
    if (!addr) return null;
    const entry = await this.read<DelegateEntry>(KEYS.delegateAddress(addr));
    return entry && entry.active ? { owner: entry.owner, accountId: entry.account_id } : null;
  }

  async getAccount(accountId: string): Promise<Account | null> {
    const id = normalizeAddress(accountId);
    return id ? this.read<Account>(KEYS.account(id)) : null;
  }

  async getAccountByOwner(owner: string): Promise<Account | null> {
    const addr = normalizeAddress(owner);
    if (!addr) return null;
    const ref = await this.read<{ account_id: string }>(KEYS.owner(addr));
    return ref ? this.read<Account>(KEYS.account(ref.account_id)) : null;
  }

  async getBlob(owner: string, blobId: string): Promise<BlobObject | null> {
    const addr = normalizeAddress(owner);
    if (!addr || !/^[A-Za-z0-9_=-]{1,128}$/.test(blobId)) return null;
    const b = await this.readBlob(addr, blobId);
    return b ? toBlobObject(b) : null;
  }

  /** A recorded blob by owner and blob id: its object, at the id derived from both. */
  private async readBlob(owner: string, blobId: string): Promise<BlobRecord | null> {
    return blobRecordOf(await this.read<BlobObjectView>(KEYS.object(deriveBlobObjectId(this.target.registryId, owner, blobId))));
  }

  /** An object by id: operator-published objects, their dynamic-field objects, and recorded blob objects. */
  async getObject(objectId: string): Promise<StoredObject | null> {
    const id = normalizeAddress(objectId);
    const o = id ? await this.read<StoredObject>(KEYS.object(id)) : null;
    // a blob recorded before state layout 4 is also stored at its derived id, which is not an object's id
    return o && o.object_id === id ? o : null;
  }

  async getDynamicField(parentId: string, name: DynamicFieldLookup): Promise<StoredDynamicField | null> {
    const id = normalizeAddress(parentId);
    if (!id) return null;
    const nameKey = "bcs" in name && typeof name.bcs === "string" ? dynamicFieldBcsKey({ type: name.type, bcs: name.bcs }) : dynamicFieldNameKey(name as { type: string; value: unknown });
    return this.read<StoredDynamicField>(KEYS.dynamicField(id, nameKey));
  }

  /** The Walrus Blob objects registered for `blobId` (URL-safe base64): what storage nodes check before they store or confirm it. */
  async walrusBlobRegistrations(blobId: string): Promise<WalrusRegistration[]> {
    const bytes = blobIdFromString(blobId);
    if (!bytes) return [];
    const objects = await this.read<Record<string, WalrusRegistration | null>>(KEYS.walrusBlob(blobIdToU256(bytes).toString()));
    return Object.values(objects ?? {}).filter((r): r is WalrusRegistration => r !== null);
  }

  async getTransaction(digest: string): Promise<TxReceipt | null> {
    if (!/^[1-9A-HJ-NP-Za-km-z]{32,64}$/.test(digest)) return null;
    return this.read<TxReceipt>(KEYS.tx(digest));
  }

  async genesis(): Promise<GenesisState | null> {
    return this.read<GenesisState>(KEYS.genesis);
  }

  // ------------------------------------------------------------------ writes

  /** Executes a signed transaction (built with buildSignedTx or any Sui Ed25519 signer). Throws PortError. */
  submit(tx: SignedTx, options?: SubmitOptions): Promise<SubmitResult> {
    return run(this.ledger.submit(tx, options));
  }

  /** The sponsored-transaction port: submits, then reads the objects the transaction put from its receipt. */
  async execute(tx: SignedTx): Promise<ExecutedTx> {
    const result = await this.submit(tx);
    const receipt = await this.getTransaction(result.digest);
    const objects: StoredObject[] = [];
    for (const e of receipt?.events ?? []) if (e.type === "ObjectPut") objects.push(e.object);
    if (!objects.length && result.outcome.object) objects.push(result.outcome.object);
    return { digest: result.digest, objects };
  }

  /** The ledger's decision on unsigned transaction bytes against the current state, not committed (a dry run). */
  async dryRun(txBytes: Uint8Array): Promise<{ receipt: TxReceipt } | { error: string }> {
    const decoded = decodeTransactionData(txBytes, this.target);
    if ("error" in decoded) return decoded;
    const digestBytes = txDigestBytes(txBytes);
    const { body } = decoded;
    const vtx: VerifiedTx = { body, digest: toBase58(digestBytes), digestBytes, signers: new Map(), gasOwner: body.gas_owner ?? body.sender };
    const now = Date.now();
    try {
      const decision = await Effect.runPromise(decide(new StateView(this.store), vtx, { now, registryId: this.target.registryId }));
      const events = decision.kind === "append" ? decision.events : [];
      const gasUsed = decision.kind === "append" ? decision.gasUsed : 0n;
      return { receipt: { v: 1, digest: vtx.digest, kind: body.kind, sender: body.sender, gas_owner: body.gas_owner ?? null, gas_used: gasUsed.toString(), executed_at: now, events, seq: 0, index: 0 } };
    } catch (err) {
      return { error: toPortError(err).message };
    }
  }

  /** Builds, signs (sender, and sponsor paying the gas) and submits one transaction. */
  signAndSubmit<K extends CallKind>(kind: K, sender: SecretKeyInput, args: TxArgs[K], opts: { gasOwner?: SecretKeyInput; submit?: SubmitOptions } = {}): Promise<SubmitResult> {
    let tx: SignedTx;
    try {
      tx = buildSignedTx({ target: this.target, kind, args, sender, gasOwner: opts.gasOwner });
    } catch (err) {
      return Promise.reject(new PortError(PORT, "invalid", err instanceof Error ? err.message : String(err)));
    }
    return this.submit(tx, opts.submit);
  }

  /** Publishes (or replaces) an object, signed by the operator key. */
  async putObject(objectId: string, input: PutObjectInput): Promise<StoredObject> {
    const result = await this.signAndSubmit("put_object", this.requireOperator(), {
      object: {
        object_id: objectId,
        type: input.type,
        version: String(input.version),
        fields: input.fields,
        ...(input.owner !== undefined ? { owner: input.owner } : {}),
        ...(input.bcs !== undefined ? { bcs: input.bcs } : {}),
        ...(input.dynamicFields !== undefined ? { dynamic_fields: input.dynamicFields } : {}),
      },
    });
    if (!result.outcome.object) throw new PortError(PORT, "unavailable", "put_object produced no object");
    return result.outcome.object;
  }

  /** Dev faucet: mints `amount` of `token` to `to`, signed by the operator key. Returns the new balance. */
  async mint(to: string, amount: bigint | string, token = "SUI"): Promise<bigint> {
    const result = await this.signAndSubmit("mint", this.requireOperator(), { to: to.toLowerCase(), token, amount: String(amount) });
    return BigInt(result.outcome.balance?.amount ?? "0");
  }

  /** Re-applies chain.tx messages the state has not materialised yet; returns the applied sequence. */
  catchUp(): Promise<number> {
    return run(this.ledger.catchUp());
  }

  /** Stops background healing and waits for queued transactions. The connection belongs to the caller. */
  async close(): Promise<void> {
    if (this.healTimer) clearInterval(this.healTimer);
    this.healTimer = null;
    await this.ledger.idle();
  }

  // ------------------------------------------------------------------ internals

  private async read<T>(key: string): Promise<T | null> {
    try {
      return strip(await this.store.get<T>(key));
    } catch (err) {
      throw toPortError(err);
    }
  }

  private requireOperator(): SecretKeyInput {
    if (this.operatorSecret === undefined) throw new PortError(PORT, "forbidden", "this chain handle has no operator key");
    return this.operatorSecret;
  }

  private async ensureGenesis(): Promise<void> {
    const existing = await this.genesis();
    if (existing && existing.network !== this.network) {
      throw new PortError(PORT, "invalid", `this ledger's network is ${existing.network}, not ${this.network}`);
    }
    if (!this.operator) return;
    if (existing) {
      if (existing.operator_address !== this.operator.address) {
        throw new PortError(PORT, "forbidden", `operator key ${this.operator.address} is not the ledger's operator ${existing.operator_address}`);
      }
      return;
    }
    await this.signAndSubmit("genesis", this.requireOperator(), { operator_public_key: this.operator.publicKeyHex, package_id: this.packageId });
  }

  private startHealing(intervalMs: number): void {
    if (intervalMs <= 0) return;
    this.healTimer = setInterval(() => {
      if (this.healing) return;
      this.healing = true;
      Effect.runPromise(this.ledger.catchUp())
        .catch(() => undefined)
        .finally(() => {
          this.healing = false;
        });
    }, intervalMs);
    this.healTimer.unref();
  }
}
