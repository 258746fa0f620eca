// The ledger's rules: given the current state (read through a StateView) and a verified transaction, decide the
// events it produces or why it is refused. No writes happen here.
import { Effect } from "effect";
import { TypeTagSerializer } from "@mysten/sui/bcs";
import { deriveDynamicFieldID } from "@mysten/sui/utils";
import { reject, type StoreUnavailable, type TxRejected } from "./errors.ts";
import { isAddress, normalizeAddress, PUBLIC_KEY_HEX_RE, suiAddressOf } from "../sui/keys.ts";
import { GAS_FEE_MIST } from "../sui/transaction-envelope.ts";
import { GAS_TOKEN, MAX_DELEGATE_KEYS, MAX_LABEL_BYTES, MAX_NAMESPACE_BYTES, SYSTEM_KINDS, U64_MAX, type Account, type BlobRecord, type ChainEvent, type GenesisState, type ObjectInput, type StoredDynamicField, type TxArgs, type TxKind } from "./model.ts";
import type { StoredObject } from "../../../schemas/chain.ts";
import { ALL_SCOPE, KEYS, indexCount, namespaceScope, type BlobIndexHead, type BlobIndexPage } from "./state-keys.ts";
import { deriveBlobObjectId, deriveObjectId, type VerifiedTx } from "./tx.ts";
import { blobRecordOf, type BlobObjectView } from "./blob-object.ts";
import type { DelegateEntry } from "./writes.ts";
import { decideConsoleTx } from "./console-decide.ts";
import { decideWalrusTx } from "./walrus-decide.ts";
import type { DecideContext, Decision, StateView, TxOutcome } from "./state-view.ts";

type Fx<A> = Effect.Effect<A, TxRejected | StoreUnavailable>;

const encoder = new TextEncoder();
const TOKEN_RE = /^[A-Z][A-Z0-9_]{0,15}$/;
const BLOB_ID_RE = /^[A-Za-z0-9_=-]{1,128}$/;
const U64_RE = /^(0|[1-9][0-9]{0,19})$/;

function parseAmount(s: unknown): bigint | null {
  if (typeof s !== "string" || !U64_RE.test(s)) return null;
  const v = BigInt(s);
  return v <= U64_MAX ? v : null;
}

/** Running balances of the addresses a transaction touches, emitting BalanceChanged events. */
class BalanceSheet {
  private readonly cache = new Map<string, bigint>();
  readonly events: ChainEvent[] = [];
  constructor(private readonly view: StateView) {}

  private balance(address: string, token: string): Effect.Effect<bigint, StoreUnavailable> {
    const k = `${address}/${token}`;
    const hit = this.cache.get(k);
    if (hit !== undefined) return Effect.succeed(hit);
    return this.view.get<Record<string, unknown>>(KEYS.balance(address)).pipe(
      Effect.map((b) => {
        const v = typeof b?.[token] === "string" ? BigInt(b[token] as string) : 0n;
        this.cache.set(k, v);
        return v;
      }),
    );
  }

  debit(address: string, token: string, amount: bigint, reason: "gas" | "transfer"): Fx<void> {
    const self = this;
    return Effect.gen(function* () {
      const have = yield* self.balance(address, token);
      if (have < amount) {
        return yield* Effect.fail(reject("insufficient_funds", `${address} has ${have} ${token}, needs ${amount}${reason === "gas" ? " for gas" : ""}`));
      }
      self.set(address, token, have - amount, -amount, reason);
    });
  }

  credit(address: string, token: string, amount: bigint, reason: "transfer" | "mint"): Fx<void> {
    const self = this;
    return Effect.gen(function* () {
      const have = yield* self.balance(address, token);
      if (have + amount > U64_MAX) return yield* Effect.fail(reject("invalid", `balance of ${token} would overflow u64`));
      self.set(address, token, have + amount, amount, reason);
    });
  }

  current(address: string, token: string): bigint {
    return this.cache.get(`${address}/${token}`) ?? 0n;
  }

  private set(address: string, token: string, amount: bigint, delta: bigint, reason: "gas" | "transfer" | "mint"): void {
    this.cache.set(`${address}/${token}`, amount);
    this.events.push({ type: "BalanceChanged", address, token, amount: amount.toString(), delta: delta.toString(), reason });
  }
}

const fail = (kind: TxRejected["kind"], message: string) => Effect.fail(reject(kind, message));

function args<K extends TxKind>(vtx: VerifiedTx, _kind: K): TxArgs[K] {
  return vtx.body.args as TxArgs[K];
}

function accountId(raw: unknown): Fx<string> {
  const id = typeof raw === "string" ? normalizeAddress(raw) : null;
  return id ? Effect.succeed(id) : fail("invalid", "account_id must be 0x followed by 64 hex characters");
}

function publicKeyHex(raw: unknown): Fx<string> {
  const hex = typeof raw === "string" ? raw.toLowerCase() : "";
  return PUBLIC_KEY_HEX_RE.test(hex) ? Effect.succeed(hex) : fail("invalid", "public_key must be 32 bytes as hex");
}

/** The account named by `rawId`, which the sender must own (or, when `operatorMay`, be the operator). */
function ownedAccount(view: StateView, vtx: VerifiedTx, rawId: unknown, genesis: GenesisState | null, operatorMay = false): Fx<Account> {
  return Effect.gen(function* () {
    const id = yield* accountId(rawId);
    const account = yield* view.get<Account>(KEYS.account(id));
    if (!account) return yield* fail("not_found", `account ${id} not found`);
    const isOperator = operatorMay && genesis !== null && vtx.body.sender === genesis.operator_address;
    if (account.owner !== vtx.body.sender && !isOperator) return yield* fail("forbidden", "only the account owner may do this");
    return account;
  });
}

function strip<T extends object>(v: T): T {
  const { _seq, ...rest } = v as T & { _seq?: number };
  return rest as T;
}

function nextVersion(a: Account, patch: Partial<Account>): Account {
  return { ...strip(a), ...patch, version: a.version + 1 };
}

function validateObject(input: ObjectInput, digest: string): Fx<{ object: StoredObject; fields: StoredDynamicField[] }> {
  return Effect.gen(function* () {
    if (!input || typeof input !== "object") return yield* fail("invalid", "object must be an object");
    const id = typeof input.object_id === "string" ? normalizeAddress(input.object_id) : null;
    if (!id) return yield* fail("invalid", "object_id must be 0x followed by 64 hex characters");
    if (typeof input.type !== "string" || input.type.length === 0 || input.type.length > 1024) return yield* fail("invalid", "object type must be a non-empty string");
    if (typeof input.version !== "string" || !U64_RE.test(input.version)) return yield* fail("invalid", "object version must be a u64 decimal string");
    if (input.bcs !== undefined && typeof input.bcs !== "string") return yield* fail("invalid", "bcs must be base64");
    const dfs = input.dynamic_fields ?? [];
    if (!Array.isArray(dfs) || dfs.length > 64) return yield* fail("invalid", "at most 64 dynamic fields");
    const fields: StoredDynamicField[] = [];
    for (const f of dfs) {
      if (!f?.name || typeof f.name.type !== "string" || typeof f.value_type !== "string") return yield* fail("invalid", "dynamic field needs name.type and value_type");
      let field_id: string | undefined;
      if (f.name.bcs !== undefined) {
        if (typeof f.name.bcs !== "string") return yield* fail("invalid", "name.bcs must be base64");
        try {
          field_id = deriveDynamicFieldID(id, TypeTagSerializer.parseFromStr(f.name.type, true), new Uint8Array(Buffer.from(f.name.bcs, "base64")));
        } catch (err) {
          return yield* fail("invalid", `bad dynamic field name type ${f.name.type}: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
      fields.push({ parent_id: id, name: f.name, value_type: f.value_type, value: f.value, ...(f.value_bcs !== undefined ? { value_bcs: f.value_bcs } : {}), ...(field_id ? { field_id } : {}) });
    }
    const object: StoredObject = {
      object_id: id,
      type: input.type,
      version: input.version,
      owner: input.owner ?? "Immutable",
      fields: input.fields ?? {},
      ...(input.bcs !== undefined ? { bcs: input.bcs } : {}),
      ...(fields.length > 0 ? { dynamic_field_names: fields.map((f) => f.name) } : {}),
      previous_transaction: digest,
    };
    return { object, fields };
  });
}

function blobRecordArgs(vtx: VerifiedTx): Record<string, unknown>[] {
  const records = vtx.body.kind === "record_blob" ? (vtx.body.args as Record<string, unknown>).records : undefined;
  return Array.isArray(records) ? (records as Record<string, unknown>[]) : [];
}

/** The (owner, scope) blob indexes a record_blob appends to. */
function blobIndexes(vtx: VerifiedTx): [string, string][] {
  const out: [string, string][] = [];
  for (const r of blobRecordArgs(vtx)) {
    const owner = typeof r?.owner === "string" ? normalizeAddress(r.owner) : null;
    if (owner && typeof r.namespace === "string") out.push([owner, ALL_SCOPE], [owner, namespaceScope(r.namespace)]);
  }
  return out;
}

/** The newest pages of the blob indexes `vtx` appends to, once their heads (prefetched) are read: a head names its page. */
export function pagesToPrefetch(vtx: VerifiedTx, read: (key: string) => Record<string, unknown> | null | undefined): string[] {
  const keys: string[] = [];
  for (const [owner, scope] of blobIndexes(vtx)) {
    const head = read(KEYS.blobHead(owner, scope)) as BlobIndexHead | null | undefined;
    if (head) keys.push(KEYS.blobPage(owner, scope, head.page));
  }
  return keys;
}

/** The keys `decide` will read for `vtx`, so a block can load them all at once. Best effort: bad input reads nothing. */
export function keysToPrefetch(vtx: VerifiedTx, registryId: string): string[] {
  const { body } = vtx;
  const keys = [KEYS.balance(vtx.gasOwner)];
  const a = body.args as Record<string, unknown>;
  const addr = (v: unknown) => (typeof v === "string" ? normalizeAddress(v) : null);
  const account = addr(a.account_id);
  if (account) keys.push(KEYS.account(account));
  switch (body.kind) {
    case "create_account":
      keys.push(KEYS.owner(body.sender));
      break;
    case "add_delegate_key":
      if (typeof a.public_key === "string" && PUBLIC_KEY_HEX_RE.test(a.public_key.toLowerCase())) keys.push(KEYS.delegateKey(a.public_key.toLowerCase()));
      break;
    case "record_blob": {
      for (const r of blobRecordArgs(vtx)) {
        const owner = addr(r?.owner);
        if (owner && typeof r.blob_id === "string" && BLOB_ID_RE.test(r.blob_id)) keys.push(KEYS.object(deriveBlobObjectId(registryId, owner, r.blob_id)));
      }
      for (const [owner, scope] of blobIndexes(vtx)) keys.push(KEYS.blobHead(owner, scope));
      break;
    }
    case "transfer":
    case "mint": {
      const to = addr(a.to);
      if (to) keys.push(KEYS.balance(to));
      break;
    }
  }
  return keys;
}

export function decide(view: StateView, vtx: VerifiedTx, ctx: DecideContext): Fx<Decision> {
  return Effect.gen(function* () {
    const { body } = vtx;
    const genesis = yield* view.get<GenesisState>(KEYS.genesis);
    const sheet = new BalanceSheet(view);
    const isSystem = SYSTEM_KINDS.has(body.kind);
    if (isSystem && body.kind !== "genesis") {
      if (!genesis) return yield* fail("rejected", "the ledger has no genesis yet");
      if (body.sender !== genesis.operator_address) return yield* fail("forbidden", `${body.kind} is reserved to the ledger operator`);
      if (body.gas_owner !== undefined) return yield* fail("invalid", "system transactions take no sponsor");
    }
    let gasUsed = 0n;
    const chargeGas = Effect.gen(function* () {
      yield* sheet.debit(vtx.gasOwner, GAS_TOKEN, GAS_FEE_MIST, "gas");
      gasUsed = GAS_FEE_MIST;
    });
    const append = (events: ChainEvent[], outcome: TxOutcome): Decision => ({ kind: "append", events: [...sheet.events, ...events], gasUsed, outcome });

    switch (body.kind) {
      case "genesis": {
        const a = args(vtx, "genesis");
        const pk = typeof a.operator_public_key === "string" ? a.operator_public_key.toLowerCase() : "";
        if (!PUBLIC_KEY_HEX_RE.test(pk) || vtx.signers.get(body.sender) !== pk) return yield* fail("forbidden", "genesis must be signed by the operator key it names");
        if (genesis) {
          if (genesis.operator_address === body.sender) return { kind: "noop", outcome: { genesis: strip(genesis) } } satisfies Decision;
          return yield* fail("rejected", "the ledger already has a genesis with another operator");
        }
        const g: GenesisState = { operator_address: body.sender, operator_public_key: pk, network: body.chain, package_id: String(a.package_id ?? ""), created_at: ctx.now };
        return append([{ type: "Genesis", genesis: g }], { genesis: g });
      }

      case "create_account": {
        const existing = yield* view.get<{ account_id: string }>(KEYS.owner(body.sender));
        if (existing) return yield* fail("rejected", `${body.sender} already has account ${existing.account_id}`);
        yield* chargeGas;
        const account: Account = { id: deriveObjectId(vtx.digestBytes, 0), owner: body.sender, delegate_keys: [], created_at: ctx.now, active: true, version: 1 };
        return append([{ type: "AccountCreated", account }], { account });
      }

      case "add_delegate_key": {
        const a = args(vtx, "add_delegate_key");
        const account = yield* ownedAccount(view, vtx, a.account_id, genesis);
        const pk = yield* publicKeyHex(a.public_key);
        const label = typeof a.label === "string" ? a.label : "";
        if (encoder.encode(label).length > MAX_LABEL_BYTES) return yield* fail("invalid", `label must be at most ${MAX_LABEL_BYTES} bytes`);
        if (!account.active) return yield* fail("rejected", "account is deactivated");
        if (account.delegate_keys.some((k) => k.public_key === pk)) return yield* fail("rejected", "delegate key already added to this account");
        if (account.delegate_keys.length >= MAX_DELEGATE_KEYS) return yield* fail("rejected", `an account holds at most ${MAX_DELEGATE_KEYS} delegate keys`);
        const other = yield* view.get<DelegateEntry>(KEYS.delegateKey(pk));
        if (other) return yield* fail("rejected", "delegate key belongs to another account");
        yield* chargeGas;
        const key = { public_key: pk, sui_address: suiAddressOf(Buffer.from(pk, "hex")), label, created_at: ctx.now };
        const next = nextVersion(account, { delegate_keys: [...account.delegate_keys, key] });
        return append([{ type: "DelegateKeyAdded", account: next, key }], { account: next });
      }

      case "remove_delegate_key": {
        const a = args(vtx, "remove_delegate_key");
        const account = yield* ownedAccount(view, vtx, a.account_id, genesis);
        const pk = yield* publicKeyHex(a.public_key);
        const key = account.delegate_keys.find((k) => k.public_key === pk);
        if (!key) return yield* fail("not_found", "delegate key not in this account");
        yield* chargeGas;
        const next = nextVersion(account, { delegate_keys: account.delegate_keys.filter((k) => k.public_key !== pk) });
        return append([{ type: "DelegateKeyRemoved", account: next, public_key: pk, sui_address: key.sui_address }], { account: next });
      }

      case "deactivate_account":
      case "reactivate_account": {
        const a = args(vtx, "deactivate_account");
        const account = yield* ownedAccount(view, vtx, a.account_id, genesis, true);
        const activate = body.kind === "reactivate_account";
        if (account.active === activate) return yield* fail("rejected", `account is already ${activate ? "active" : "deactivated"}`);
        yield* chargeGas;
        const next = nextVersion(account, { active: activate });
        return append([{ type: activate ? "AccountReactivated" : "AccountDeactivated", account: next }], { account: next });
      }

      case "record_blob": {
        const a = args(vtx, "record_blob");
        const packageId = typeof a.package_id === "string" ? normalizeAddress(a.package_id) : null;
        if (!packageId) return yield* fail("invalid", "package_id must be an object id");
        if (!Array.isArray(a.records) || a.records.length === 0) return yield* fail("invalid", "record_blob needs at least one record");
        // Each record is idempotent per (owner, blob id): one already recorded (earlier, or earlier in this
        // transaction) is left as it is; its object sits at an id derived from both. Index counts per owner and
        // scope run across the records of this transaction.
        const heads = new Map<string, number>();
        const head = (owner: string, scope: string) =>
          Effect.gen(function* () {
            const key = KEYS.blobHead(owner, scope);
            if (!heads.has(key)) {
              const h = yield* view.get<BlobIndexHead>(key);
              const newest = h ? yield* view.get<BlobIndexPage<BlobRecord>>(KEYS.blobPage(owner, scope, h.page)) : null;
              heads.set(key, indexCount(h, newest));
            }
            return { key, index: heads.get(key)! };
          });
        const recorded = new Map<string, BlobRecord>();
        const events: ChainEvent[] = [];
        const blobs: BlobRecord[] = [];
        for (const r of a.records) {
          const owner = typeof r?.owner === "string" ? normalizeAddress(r.owner) : null;
          if (!owner) return yield* fail("invalid", "owner must be an address");
          if (typeof r.blob_id !== "string" || !BLOB_ID_RE.test(r.blob_id)) return yield* fail("invalid", "blob_id must be URL-safe base64, at most 128 characters");
          if (typeof r.namespace !== "string" || r.namespace.length === 0 || encoder.encode(r.namespace).length > MAX_NAMESPACE_BYTES) {
            return yield* fail("invalid", `namespace must be 1..${MAX_NAMESPACE_BYTES} bytes`);
          }
          if (!Number.isSafeInteger(r.size) || r.size < 0) return yield* fail("invalid", "size must be a non-negative integer");
          const objectId = deriveBlobObjectId(ctx.registryId, owner, r.blob_id);
          const existing = recorded.get(objectId) ?? blobRecordOf(yield* view.get<BlobObjectView>(KEYS.object(objectId)));
          if (existing) {
            blobs.push(existing);
            continue;
          }
          const [all, ns] = [yield* head(owner, ALL_SCOPE), yield* head(owner, namespaceScope(r.namespace))];
          heads.set(all.key, all.index + 1);
          heads.set(ns.key, ns.index + 1);
          const blob: BlobRecord = {
            object_id: objectId,
            owner,
            blob_id: r.blob_id,
            namespace: r.namespace,
            package_id: packageId,
            size: r.size,
            created_at: ctx.now,
          };
          recorded.set(objectId, blob);
          blobs.push(blob);
          events.push({ type: "BlobRecorded", blob, index_all: all.index, index_ns: ns.index });
        }
        if (!events.length) return { kind: "noop", outcome: { blobs } } satisfies Decision;
        yield* chargeGas;
        return append(events, { blobs });
      }

      case "transfer": {
        const a = args(vtx, "transfer");
        const to = typeof a.to === "string" ? normalizeAddress(a.to) : null;
        const amount = parseAmount(a.amount);
        if (!to || !isAddress(to)) return yield* fail("invalid", "to must be an address");
        if (typeof a.token !== "string" || !TOKEN_RE.test(a.token)) return yield* fail("invalid", "token must be an upper-case symbol");
        if (amount === null || amount === 0n) return yield* fail("invalid", "amount must be a positive u64 decimal string");
        yield* chargeGas;
        yield* sheet.debit(body.sender, a.token, amount, "transfer");
        yield* sheet.credit(to, a.token, amount, "transfer");
        return append([], { balance: { address: body.sender, token: a.token, amount: sheet.current(body.sender, a.token).toString() } });
      }

      case "mint": {
        const a = args(vtx, "mint");
        const to = typeof a.to === "string" ? normalizeAddress(a.to) : null;
        const amount = parseAmount(a.amount);
        if (!to) return yield* fail("invalid", "to must be an address");
        if (typeof a.token !== "string" || !TOKEN_RE.test(a.token)) return yield* fail("invalid", "token must be an upper-case symbol");
        if (amount === null || amount === 0n) return yield* fail("invalid", "amount must be a positive u64 decimal string");
        yield* sheet.credit(to, a.token, amount, "mint");
        return append([], { balance: { address: to, token: a.token, amount: sheet.current(to, a.token).toString() } });
      }

      case "put_object": {
        const a = args(vtx, "put_object");
        const { object, fields } = yield* validateObject(a.object, vtx.digest);
        return append([{ type: "ObjectPut", object, dynamic_fields: fields }], { object });
      }

      case "walrus":
        return yield* decideWalrusTx(view, vtx, args(vtx, "walrus"), {
          debit: (address, token, amount) => sheet.debit(address, token, amount, "transfer"),
          credit: (address, token, amount) => sheet.credit(address, token, amount, "transfer"),
          chargeGas,
          append,
        });

      default:
        return yield* decideConsoleTx(view, vtx, body.kind, { genesis, chargeGas, append });
    }
  });
}
