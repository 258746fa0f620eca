// Executes Walrus transactions (walrus-ptb.ts) on the local ledger, command by command with Move's rules for values
// (a Coin, Storage, Blob or Metadata must be used exactly once; references borrow). The calls it implements:
//
//   0x2::coin::redeem_funds<T>(withdrawal)          a coin from the sender's address balance (FundsWithdrawal input)
//   0x2::coin::send_funds<T>(coin, address)         a coin back into an address balance
//   0x2::coin::destroy_zero<T>(coin), zero<T>()
//   SplitCoins, MergeCoins, TransferObjects         (a transferred coin lands in the recipient's address balance)
//   walrus::system::reserve_space(&mut System, amount: u64, epochs_ahead: u32, &mut Coin<WAL>): Storage
//                                 (within the System's free capacity; the used capacity grows)
//   walrus::system::register_blob(&mut System, Storage, blob_id: u256, root_hash: u256, size: u64,
//                                 encoding_type: u8, deletable: bool, &mut Coin<WAL>): Blob
//   walrus::system::certify_blob(&System, &mut Blob, signature, signers_bitmap, message)
//   walrus::system::extend_blob(&mut System, &mut Blob, extended_epochs: u32, &mut Coin<WAL>)   (certified blobs)
//   walrus::system::delete_blob(&System, Blob): Storage                                         (deletable blobs)
//   walrus::metadata::new(), walrus::blob::add_metadata / insert_or_update_metadata_pair / remove_metadata_pair
//                                                   a Blob's attributes, in its `b"metadata"` dynamic field
//
// with the checks of Walrus's Move code: prices from the System's inner state, the blob id derived from its root
// hash, the storage covering the encoded size and the current epoch, and a certificate whose signers hold a quorum of
// the shards and whose aggregate BLS signature (min-pk) verifies over the confirmation message for this blob. Any
// other call, command or input is refused with the reason. WAL paid for storage goes to the System object's address.
import { Effect } from "effect";
import { bcs, type BcsType } from "@mysten/sui/bcs";
import { deriveDynamicFieldID, normalizeSuiAddress } from "@mysten/sui/utils";
import { reject, type StoreUnavailable, type TxRejected } from "./errors.ts";
import type { ChainEvent } from "./model.ts";
import type { StoredObject } from "../../../schemas/chain.ts";
import { KEYS } from "./state-keys.ts";
import type { Decision, StateView, TxOutcome } from "./state-view.ts";
import { deriveObjectId, type VerifiedTx } from "./tx.ts";
import { ledgerObjectDigest } from "./rpc/ledger-source.ts";
import { tokenOf } from "./rpc/transactions.ts";
import { localWalrusIds, MAX_EPOCHS_AHEAD, parseSystemInnerField, systemInnerFieldId, withUsedCapacity } from "./walrus-deployment.ts";
import { BlobBcs, METADATA_FIELD_NAME, MetadataBcs, blobIdFromU256, deriveBlobId, encodedBlobLength, RS2_ENCODING, StorageBcs, StorageConfirmationBcs, storageUnits, type BlobValue, type StorageValue } from "./walrus-layouts.ts";
import { verifyCertificate } from "./walrus-certificate.ts";
import type { PtbArg, WalrusPtb } from "./walrus-ptb.ts";

type Fx<A> = Effect.Effect<A, TxRejected | StoreUnavailable>;
const fail = (message: string, kind: TxRejected["kind"] = "invalid") => Effect.fail(reject(kind, message));

type Value =
  | { kind: "coin"; coinType: string; token: string; value: bigint }
  | { kind: "storage"; storage: StorageValue; owner: string | null; created: boolean; version: string }
  | {
      kind: "blob";
      blob: BlobValue;
      owner: string | null;
      created: boolean;
      version: string;
      changed: boolean;
      /** Deleted by delete_blob: not written. */
      deleted?: boolean;
      /** Its attributes (the `metadata` dynamic field): undefined until read, null when it has none. */
      attributes?: { entries: Map<string, string>; created: boolean; version: string; changed: boolean } | null;
    }
  | { kind: "metadata"; entries: Map<string, string> }
  | { kind: "pure"; bytes: Uint8Array }
  | { kind: "withdrawal"; amount: bigint; coinType: string; from: "sender" | "sponsor" }
  | { kind: "system"; mutable: boolean };

type Slot = { value: Value; moved: boolean; reusable: boolean };

export interface WalrusDecideTools {
  /** Moves WAL/SUI between address balances with BalanceChanged events. */
  readonly debit: (address: string, token: string, amount: bigint) => Fx<void>;
  readonly credit: (address: string, token: string, amount: bigint) => Fx<void>;
  readonly chargeGas: Fx<void>;
  readonly append: (events: ChainEvent[], outcome: TxOutcome) => Decision;
}

function u64(bytes: Uint8Array, what: string): Fx<bigint> {
  return bytes.length === 8 ? Effect.succeed(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true)) : fail(`${what} must be a u64`);
}

function pureOf<T, I>(type: BcsType<T, I>, bytes: Uint8Array, what: string): Fx<T> {
  try {
    const v = type.parse(bytes);
    if (Buffer.compare(Buffer.from(type.serialize(v as unknown as I).toBytes()), Buffer.from(bytes)) !== 0) return fail(`${what} is not canonical BCS`);
    return Effect.succeed(v);
  } catch {
    return fail(`${what} is not valid BCS`);
  }
}

const blobType = (pkg: string) => `${pkg}::blob::Blob`;
/** Where a Blob's attributes live: its dynamic field named `b"metadata"`. */
const metadataFieldId = (blobId: string) => deriveDynamicFieldID(blobId, "vector<u8>", METADATA_FIELD_NAME);
const storageType = (pkg: string) => `${pkg}::storage_resource::Storage`;

export function decideWalrusTx(view: StateView, vtx: VerifiedTx, ptb: WalrusPtb, tools: WalrusDecideTools): Fx<Decision> {
  return Effect.gen(function* () {
    const network = vtx.body.chain;
    const ids = localWalrusIds(network);
    const sender = vtx.body.sender;
    const innerField = yield* view.get<StoredObject>(KEYS.object(systemInnerFieldId(network)));
    if (!innerField?.bcs) return yield* fail(`the Walrus system of ${network} is not deployed on this ledger`, "not_found");
    const system = parseSystemInnerField(new Uint8Array(Buffer.from(innerField.bcs, "base64")));
    const epoch = system.committee.epoch;
    const nShards = system.committee.nShards;
    // The objects the transaction transfers, and the blobs it changes in place: written when it succeeds.
    const transferred: Extract<Value, { kind: "blob" | "storage" }>[] = [];
    const touched = new Set<Extract<Value, { kind: "blob" }>>();
    /** Objects that stop being objects of their own (wrapped or deleted). */
    const removed: { object_id: string; blob_id?: string }[] = [];
    /** Bytes reserved by this transaction, added to the System's used capacity. */
    let reserved = 0n;
    let created = 0;
    const newId = () => deriveObjectId(vtx.digestBytes, created++);

    // Inputs, loaded when first used.
    const inputs: (Slot | undefined)[] = [];
    const input = (i: number): Fx<Slot> =>
      Effect.gen(function* () {
        const raw = ptb.inputs[i];
        if (!raw) return yield* fail(`input ${i} does not exist`);
        const have = inputs[i];
        if (have) return have;
        let slot: Slot;
        if ("pure" in raw) slot = { value: { kind: "pure", bytes: new Uint8Array(Buffer.from(raw.pure, "base64")) }, moved: false, reusable: true };
        else if ("withdrawal" in raw) {
          slot = { value: { kind: "withdrawal", amount: BigInt(raw.withdrawal.amount), coinType: raw.withdrawal.coin_type, from: raw.withdrawal.from }, moved: false, reusable: false };
        } else if ("shared" in raw) {
          if (raw.shared.id !== ids.systemObjectId) return yield* fail(`shared object ${raw.shared.id} is not the Walrus System object`);
          if (raw.shared.initial_shared_version !== "1") return yield* fail("the System object was shared at version 1");
          slot = { value: { kind: "system", mutable: raw.shared.mutable }, moved: false, reusable: true };
        } else {
          const stored = yield* view.get<StoredObject>(KEYS.object(raw.owned.id));
          if (!stored?.bcs || (stored.type !== blobType(ids.packageId) && stored.type !== storageType(ids.packageId))) return yield* fail(`object ${raw.owned.id} is not a Walrus Blob or Storage`, "not_found");
          const owner = typeof stored.owner === "object" && "AddressOwner" in stored.owner ? stored.owner.AddressOwner : null;
          if (owner !== sender) return yield* fail(`object ${raw.owned.id} is not owned by the sender`, "forbidden");
          if (raw.owned.version !== stored.version || raw.owned.digest !== ledgerObjectDigest(stored)) {
            return yield* fail(`object ${raw.owned.id} is at version ${stored.version}; the transaction names another version or digest`, "rejected");
          }
          const bytes = new Uint8Array(Buffer.from(stored.bcs, "base64"));
          slot =
            stored.type === blobType(ids.packageId)
              ? { value: { kind: "blob", blob: BlobBcs.parse(bytes), owner, created: false, version: stored.version, changed: false }, moved: false, reusable: false }
              : { value: { kind: "storage", storage: StorageBcs.parse(bytes), owner, created: false, version: stored.version }, moved: false, reusable: false };
        }
        inputs[i] = slot;
        return slot;
      });

    const results: Slot[][] = [];
    const slotOf = (a: PtbArg): Fx<Slot> => {
      if ("gas" in a) return fail("the gas coin cannot be used: gas is paid from the gas owner's address balance");
      if ("input" in a) return input(a.input);
      const [c, n] = "result" in a ? [a.result, 0] : a.nested;
      const out = results[c];
      if (!out) return fail(`command ${c} has no result yet`);
      if ("result" in a && out.length !== 1) return fail(`command ${c} returns ${out.length} values; name one with NestedResult`);
      const slot = out[n];
      return slot ? Effect.succeed(slot) : fail(`command ${c} has no result ${n}`);
    };
    /** By value: the value moves out of its slot. */
    const take = (a: PtbArg): Fx<Value> =>
      slotOf(a).pipe(
        Effect.flatMap((slot) => {
          if (slot.moved) return fail("a value is used after it was moved");
          if (!slot.reusable) slot.moved = true;
          return Effect.succeed(slot.value);
        }),
      );
    /** By reference. */
    const borrow = (a: PtbArg): Fx<Value> => slotOf(a).pipe(Effect.flatMap((slot) => (slot.moved ? fail("a value is used after it was moved") : Effect.succeed(slot.value))));
    const coin = (v: Value, what: string): Fx<Extract<Value, { kind: "coin" }>> => (v.kind === "coin" ? Effect.succeed(v) : fail(`${what} must be a Coin`));
    const pure = (v: Value, what: string): Fx<Uint8Array> => (v.kind === "pure" ? Effect.succeed(v.bytes) : fail(`${what} must be a pure argument`));
    const walCoin = (v: Value, what: string): Fx<Extract<Value, { kind: "coin" }>> =>
      coin(v, what).pipe(Effect.flatMap((c) => (c.coinType === ids.walCoinType ? Effect.succeed(c) : fail(`${what} must be a Coin<${ids.walCoinType}>`))));
    const pay = (c: Extract<Value, { kind: "coin" }>, amount: bigint, what: string): Fx<void> =>
      Effect.gen(function* () {
        if (c.value < amount) return yield* fail(`${what} costs ${amount} WAL; the payment coin holds ${c.value}`, "insufficient_funds");
        c.value -= amount;
        yield* tools.credit(ids.systemObjectId, c.token, amount);
      });
    /** `v` as a value of `kind`, else the transaction is refused with `what`. */
    const ofKind = <K extends Value["kind"]>(v: Value, kind: K, what: string): Fx<Extract<Value, { kind: K }>> =>
      v.kind === kind ? Effect.succeed(v as Extract<Value, { kind: K }>) : fail(what);
    const systemArg = (v: Value, mutable: boolean): Fx<void> =>
      v.kind !== "system" ? fail("the first argument must be the Walrus System object") : mutable && !v.mutable ? fail("the System object must be passed mutably") : Effect.succeed(undefined);
    /** A blob's attributes: a new blob has none; an existing one's are read from its dynamic field once. */
    const attributesOf = (blob: Extract<Value, { kind: "blob" }>): Fx<NonNullable<Extract<Value, { kind: "blob" }>["attributes"]> | null> =>
      Effect.gen(function* () {
        if (blob.attributes !== undefined) return blob.attributes;
        if (blob.created) return (blob.attributes = null);
        const field = yield* view.get<StoredObject>(KEYS.object(metadataFieldId(blob.blob.id)));
        if (!field?.bcs) return (blob.attributes = null);
        const metadata = MetadataBcs.parse(new Uint8Array(Buffer.from(field.bcs, "base64")).subarray(32 + METADATA_FIELD_NAME.length));
        return (blob.attributes = { entries: new Map(metadata.metadata.contents.map((e) => [e.key, e.value])), created: false, version: field.version, changed: false });
      });
    const addressOf = (bytes: Uint8Array, what: string): Fx<string> => (bytes.length === 32 ? Effect.succeed(normalizeSuiAddress(Buffer.from(bytes).toString("hex"))) : fail(`${what} must be an address`));

    for (const [index, command] of ptb.commands.entries()) {
      const out: Value[] = [];
      if ("split" in command) {
        const from = yield* borrow(command.split.coin).pipe(Effect.flatMap((v) => coin(v, "SplitCoins' coin")));
        for (const a of command.split.amounts) {
          const amount = yield* u64(yield* pure(yield* take(a), "a split amount"), "a split amount");
          if (amount > from.value) return yield* fail(`cannot split ${amount} from a coin of ${from.value}`, "insufficient_funds");
          from.value -= amount;
          out.push({ kind: "coin", coinType: from.coinType, token: from.token, value: amount });
        }
      } else if ("merge" in command) {
        const into = yield* borrow(command.merge.into).pipe(Effect.flatMap((v) => coin(v, "MergeCoins' destination")));
        for (const a of command.merge.from) {
          if ((yield* slotOf(a)).value === into) return yield* fail("MergeCoins cannot merge a coin into itself");
          const c = yield* take(a).pipe(Effect.flatMap((v) => coin(v, "a merged coin")));
          if (c.coinType !== into.coinType) return yield* fail("merged coins must be of one type");
          into.value += c.value;
        }
      } else if ("transfer" in command) {
        const to = yield* addressOf(yield* pure(yield* take(command.transfer.to), "the recipient"), "the recipient");
        for (const a of command.transfer.objects) {
          const v = yield* take(a);
          if (v.kind === "coin") yield* tools.credit(to, v.token, v.value);
          else if (v.kind === "blob" || v.kind === "storage") {
            v.owner = to;
            if (v.kind === "blob") v.changed = true;
            transferred.push(v);
          } else return yield* fail("TransferObjects takes coins, Blob and Storage objects");
        }
      } else {
        const call = command.call;
        const args = call.arguments;
        const arity = (n: number) => (args.length === n ? Effect.succeed(undefined) : fail(`${call.module}::${call.function} takes ${n} arguments`));
        const typeArg = (): Fx<{ coinType: string; token: string }> => {
          const t = call.type_arguments[0];
          const token = t ? tokenOf(t) : undefined;
          return call.type_arguments.length === 1 && t && token ? Effect.succeed({ coinType: t, token }) : fail(`${call.module}::${call.function} takes one coin type argument the ledger knows (SUI or WAL)`);
        };
        if (call.module === "coin") {
          const { coinType, token } = yield* typeArg();
          switch (call.function) {
            case "redeem_funds": {
              yield* arity(1);
              const w = yield* take(args[0]!);
              if (w.kind !== "withdrawal" || w.coinType !== coinType) return yield* fail("redeem_funds takes a funds withdrawal of its coin type");
              yield* tools.debit(w.from === "sender" ? sender : vtx.gasOwner, token, w.amount);
              out.push({ kind: "coin", coinType, token, value: w.amount });
              break;
            }
            case "send_funds": {
              yield* arity(2);
              const c = yield* take(args[0]!).pipe(Effect.flatMap((v) => coin(v, "send_funds' coin")));
              if (c.coinType !== coinType) return yield* fail("send_funds' coin is of another type");
              yield* tools.credit(yield* addressOf(yield* pure(yield* take(args[1]!), "send_funds' recipient"), "send_funds' recipient"), token, c.value);
              break;
            }
            case "destroy_zero": {
              yield* arity(1);
              const c = yield* take(args[0]!).pipe(Effect.flatMap((v) => coin(v, "destroy_zero's coin")));
              if (c.value !== 0n) return yield* fail(`destroy_zero on a coin of ${c.value}`);
              break;
            }
            case "zero":
              yield* arity(0);
              out.push({ kind: "coin", coinType, token, value: 0n });
              break;
          }
        } else if (call.module === "metadata" || call.module === "blob") {
          if (call.type_arguments.length) return yield* fail(`${call.module}::${call.function} takes no type arguments`);
          if (call.module === "metadata") {
            yield* arity(0);
            out.push({ kind: "metadata", entries: new Map() });
          } else {
            const blob = yield* ofKind(yield* borrow(args[0]!), "blob", `blob::${call.function} takes a Blob first`);
            const attributes = yield* attributesOf(blob);
            const text = (a: PtbArg, what: string) => Effect.flatMap(take(a), (v) => Effect.flatMap(pure(v, what), (b) => pureOf(bcs.string(), b, what)));
            if (call.function === "add_metadata") {
              yield* arity(2);
              const metadata = yield* ofKind(yield* take(args[1]!), "metadata", "add_metadata takes a Metadata");
              if (attributes) return yield* fail("the blob already has metadata", "rejected");
              blob.attributes = { entries: metadata.entries, created: true, version: "1", changed: true };
            } else if (call.function === "insert_or_update_metadata_pair") {
              yield* arity(3);
              const [key, value] = [yield* text(args[1]!, "key"), yield* text(args[2]!, "value")];
              const current = attributes ?? { entries: new Map<string, string>(), created: true, version: "1", changed: true };
              current.entries.set(key, value);
              current.changed = true;
              blob.attributes = current;
            } else {
              yield* arity(2);
              const key = yield* text(args[1]!, "key");
              if (!attributes?.entries.has(key)) return yield* fail(`the blob has no metadata key ${JSON.stringify(key)}`, "not_found");
              attributes.entries.delete(key);
              attributes.changed = true;
            }
            touched.add(blob);
          }
        } else {
          if (call.type_arguments.length) return yield* fail(`system::${call.function} takes no type arguments`);
          switch (call.function) {
            case "reserve_space": {
              yield* arity(4);
              yield* systemArg(yield* borrow(args[0]!), true);
              const amount = yield* u64(yield* pure(yield* take(args[1]!), "storage_amount"), "storage_amount");
              const epochs = yield* pureOf(bcs.u32(), yield* pure(yield* take(args[2]!), "epochs_ahead"), "epochs_ahead");
              if (epochs < 1 || epochs > MAX_EPOCHS_AHEAD) return yield* fail(`epochs_ahead must be 1..${MAX_EPOCHS_AHEAD}`);
              if (system.usedCapacity + reserved + amount > system.totalCapacity) {
                return yield* fail(`not enough free storage: ${system.usedCapacity + reserved} of ${system.totalCapacity} bytes are reserved`, "rejected");
              }
              reserved += amount;
              const payment = yield* walCoin(yield* borrow(args[3]!), "reserve_space's payment");
              yield* pay(payment, storageUnits(amount) * system.storagePricePerUnit * BigInt(epochs), "the storage");
              out.push({ kind: "storage", storage: { id: newId(), start_epoch: epoch, end_epoch: epoch + epochs, storage_size: amount.toString() }, owner: null, created: true, version: "1" });
              break;
            }
            case "register_blob": {
              yield* arity(8);
              yield* systemArg(yield* borrow(args[0]!), true);
              const storage = yield* ofKind(yield* take(args[1]!), "storage", "register_blob's storage must be a Storage");
              // An existing Storage object is wrapped into the blob: it stops being an object of its own.
              if (!storage.created) removed.push({ object_id: storage.storage.id });
              const blobId = yield* pureOf(bcs.u256(), yield* pure(yield* take(args[2]!), "blob_id"), "blob_id");
              const rootHash = yield* pureOf(bcs.u256(), yield* pure(yield* take(args[3]!), "root_hash"), "root_hash");
              const size = yield* u64(yield* pure(yield* take(args[4]!), "size"), "size");
              const encoding = yield* pureOf(bcs.u8(), yield* pure(yield* take(args[5]!), "encoding_type"), "encoding_type");
              const deletable = yield* pureOf(bcs.bool(), yield* pure(yield* take(args[6]!), "deletable"), "deletable");
              const payment = yield* walCoin(yield* borrow(args[7]!), "register_blob's write payment");
              if (encoding !== RS2_ENCODING) return yield* fail(`encoding_type ${encoding} is not supported (RS2 is ${RS2_ENCODING})`);
              const derived = deriveBlobId(blobIdFromU256(rootHash), encoding, size);
              if (Buffer.compare(Buffer.from(derived), Buffer.from(blobIdFromU256(blobId))) !== 0) return yield* fail("blob_id is not derived from root_hash, encoding_type and size");
              const s = storage.storage;
              if (!(s.start_epoch <= epoch && epoch < s.end_epoch)) return yield* fail(`the storage covers epochs ${s.start_epoch}..${s.end_epoch}, not the current epoch ${epoch}`);
              if (size > BigInt(Number.MAX_SAFE_INTEGER)) return yield* fail("size is too large");
              const encoded = encodedBlobLength(Number(size), nShards);
              if (BigInt(encoded) > BigInt(s.storage_size)) return yield* fail(`the blob's encoded size ${encoded} exceeds the storage's ${s.storage_size}`);
              yield* pay(payment, storageUnits(encoded) * system.writePricePerUnit, "writing the blob");
              out.push({
                kind: "blob",
                blob: { id: newId(), registered_epoch: epoch, blob_id: BigInt(blobId).toString(), size: size.toString(), encoding_type: encoding, certified_epoch: null, storage: s, deletable },
                owner: null,
                created: true,
                version: "1",
                changed: true,
              });
              break;
            }
            case "extend_blob": {
              yield* arity(4);
              yield* systemArg(yield* borrow(args[0]!), true);
              const blob = yield* ofKind(yield* borrow(args[1]!), "blob", "extend_blob's blob must be a Blob");
              const epochs = yield* pureOf(bcs.u32(), yield* pure(yield* take(args[2]!), "extended_epochs"), "extended_epochs");
              const payment = yield* walCoin(yield* borrow(args[3]!), "extend_blob's payment");
              const s = blob.blob.storage;
              if (blob.blob.certified_epoch === null) return yield* fail("only a certified blob can be extended", "rejected");
              if (epoch >= s.end_epoch) return yield* fail("the blob's storage has expired", "rejected");
              if (epochs < 1 || s.end_epoch + epochs - epoch > MAX_EPOCHS_AHEAD) return yield* fail(`extended_epochs must be at least 1 and end at most ${MAX_EPOCHS_AHEAD} epochs ahead`);
              yield* pay(payment, storageUnits(BigInt(s.storage_size)) * system.storagePricePerUnit * BigInt(epochs), "extending the storage");
              blob.blob.storage = { ...s, end_epoch: s.end_epoch + epochs };
              blob.changed = true;
              touched.add(blob);
              break;
            }
            case "delete_blob": {
              yield* arity(2);
              yield* systemArg(yield* borrow(args[0]!), false);
              const blob = yield* ofKind(yield* take(args[1]!), "blob", "delete_blob's blob must be a Blob");
              if (!blob.blob.deletable) return yield* fail("the blob is not deletable", "rejected");
              if (epoch >= blob.blob.storage.end_epoch) return yield* fail("the blob's storage has expired", "rejected");
              const attributes = yield* attributesOf(blob);
              blob.deleted = true;
              if (!blob.created) removed.push({ object_id: blob.blob.id, blob_id: blob.blob.blob_id });
              if (attributes && !attributes.created) removed.push({ object_id: metadataFieldId(blob.blob.id) });
              // The blob's storage becomes an object of its own again.
              out.push({ kind: "storage", storage: blob.blob.storage, owner: null, created: true, version: "1" });
              break;
            }
            case "certify_blob": {
              yield* arity(5);
              yield* systemArg(yield* borrow(args[0]!), false);
              const blob = yield* ofKind(yield* borrow(args[1]!), "blob", "certify_blob's blob must be a Blob");
              const signature = yield* pureOf(bcs.byteVector(), yield* pure(yield* take(args[2]!), "signature"), "signature");
              const bitmap = yield* pureOf(bcs.byteVector(), yield* pure(yield* take(args[3]!), "signers_bitmap"), "signers_bitmap");
              const message = yield* pureOf(bcs.byteVector(), yield* pure(yield* take(args[4]!), "message"), "message");
              yield* verifyCertificate(system.committee, { signature, bitmap, message });
              const msg = StorageConfirmationBcs.parse(message);
              if (msg.epoch !== epoch) return yield* fail(`the certificate is for epoch ${msg.epoch}, not the current epoch ${epoch}`);
              const b = blob.blob;
              if (BigInt(msg.blobId) !== BigInt(b.blob_id)) return yield* fail("the certificate is for another blob id");
              const persistence = msg.blobType.Deletable ? normalizeSuiAddress(msg.blobType.Deletable.objectId) : null;
              if (b.deletable ? persistence !== b.id : persistence !== null) return yield* fail(`the certificate is not for this ${b.deletable ? "deletable blob object" : "permanent blob"}`);
              if (b.certified_epoch !== null) return yield* fail("the blob is already certified", "rejected");
              if (epoch >= b.storage.end_epoch) return yield* fail("the blob's storage has expired", "rejected");
              b.certified_epoch = epoch;
              blob.changed = true;
              touched.add(blob);
              break;
            }
          }
        }
      }
      results[index] = out.map((value) => ({ value, moved: false, reusable: false }));
    }

    // Move's rule: a value without `drop` (Coin, Storage, Blob) must be used.
    for (const [c, out] of results.entries()) {
      const names: Record<string, string> = { coin: "Coin", blob: "Blob", storage: "Storage", metadata: "Metadata" };
      for (const slot of out) if (!slot.moved) return yield* fail(`result of command ${c} (a ${names[slot.value.kind] ?? slot.value.kind}) is never used`);
    }
    for (const slot of inputs) {
      if (slot && !slot.reusable && !slot.moved && slot.value.kind === "withdrawal") return yield* fail("a funds withdrawal is never redeemed");
    }
    yield* tools.chargeGas;

    const events: ChainEvent[] = [];
    const write = (v: Extract<Value, { kind: "blob" | "storage" }>) => {
      const version = v.created ? "1" : (BigInt(v.version) + 1n).toString();
      const bytes = v.kind === "blob" ? BlobBcs.serialize(v.blob).toBytes() : StorageBcs.serialize(v.storage).toBytes();
      const id = v.kind === "blob" ? v.blob.id : v.storage.id;
      const fields = v.kind === "blob" ? { blob_id: v.blob.blob_id, certified_epoch: v.blob.certified_epoch, deletable: v.blob.deletable, end_epoch: v.blob.storage.end_epoch } : { ...v.storage };
      const object: StoredObject = {
        object_id: id,
        type: v.kind === "blob" ? blobType(ids.packageId) : storageType(ids.packageId),
        version,
        owner: { AddressOwner: v.owner! },
        fields,
        bcs: Buffer.from(bytes).toString("base64"),
        previous_transaction: vtx.digest,
      };
      events.push({ type: "WalrusObjectWritten", object, created: v.created });
      if (v.kind === "blob" && v.attributes?.changed) writeAttributes(id, v.attributes);
      return object;
    };
    const writeAttributes = (blobId: string, a: NonNullable<Extract<Value, { kind: "blob" }>["attributes"]>) => {
      const fieldId = metadataFieldId(blobId);
      const contents = [...a.entries].map(([key, value]) => ({ key, value }));
      const value = MetadataBcs.serialize({ metadata: { contents } }).toBytes();
      const object: StoredObject = {
        object_id: fieldId,
        type: `0x2::dynamic_field::Field<vector<u8>, ${ids.packageId}::metadata::Metadata>`,
        version: a.created ? "1" : (BigInt(a.version) + 1n).toString(),
        owner: { ObjectOwner: blobId },
        fields: { name: "metadata", value: Object.fromEntries(a.entries) },
        bcs: Buffer.concat([Buffer.from(fieldId.slice(2), "hex"), METADATA_FIELD_NAME, value]).toString("base64"),
        previous_transaction: vtx.digest,
      };
      events.push({ type: "WalrusObjectWritten", object, created: a.created });
    };
    const written = new Set<Value>();
    let blobObject: StoredObject | undefined;
    for (const v of [...transferred, ...touched]) {
      if (written.has(v) || (v.kind === "blob" && v.deleted)) continue;
      written.add(v);
      const o = write(v);
      if (v.kind === "blob") blobObject = o;
    }
    for (const r of removed) events.push({ type: "WalrusObjectRemoved", ...r });
    if (reserved > 0n) {
      const { _seq, ...field } = innerField as StoredObject & { _seq?: number };
      const bytes = withUsedCapacity(new Uint8Array(Buffer.from(field.bcs!, "base64")), system.usedCapacity + reserved);
      events.push({ type: "WalrusObjectWritten", object: { ...field, version: (BigInt(field.version) + 1n).toString(), bcs: Buffer.from(bytes).toString("base64"), previous_transaction: vtx.digest }, created: false });
    }
    return tools.append(events, blobObject ? { object: blobObject } : {});
  });
}
