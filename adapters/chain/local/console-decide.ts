// The ledger's rules for the console's bucket-policy transactions (kinds in console-model.ts). Called from decide.ts
// for those kinds; produces ObjectPut events, so materialisation, receipts and the JSON-RPC reads need nothing new.
// Every kind is an ordinary (gas-paying) transaction: the console sponsors the gas, the caller's service key signs.
import { Effect } from "effect";
import { reject, type StoreUnavailable, type TxRejected } from "./errors.ts";
import { normalizeAddress } from "../sui/keys.ts";
import type { ChainEvent, GenesisState } from "./model.ts";
import type { StoredObject } from "../../../schemas/chain.ts";
import { KEYS } from "./state-keys.ts";
import type { StateView, TxOutcome, Decision } from "./state-view.ts";
import { deriveObjectId, type VerifiedTx } from "./tx.ts";
import { MAX_GROUP_MEMBERS } from "./console-model.ts";
import type { ConsoleTxKind } from "../sui/call-kinds.ts";
import { MAX_GRANT_GROUPS } from "../sui/move-calls.ts";
import { accessGroupType, bucketPolicyType, type AccessGroupFields, type AccessScope, type BucketPolicyFields } from "../../../schemas/chain.ts";

type Fx<A> = Effect.Effect<A, TxRejected | StoreUnavailable>;

export interface ConsoleDecideTools {
  readonly genesis: GenesisState | null;
  /** Charges the fixed gas fee to the gas owner (the sponsor). */
  readonly chargeGas: Effect.Effect<void, TxRejected | StoreUnavailable>;
  readonly append: (events: ChainEvent[], outcome: TxOutcome) => Decision;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const fail = (kind: TxRejected["kind"], message: string) => Effect.fail(reject(kind, message));

function uuid(raw: unknown, field: string): Fx<string> {
  return typeof raw === "string" && UUID_RE.test(raw) ? Effect.succeed(raw) : fail("invalid", `${field} must be a UUID`);
}

function address(raw: unknown, field: string): Fx<string> {
  const a = typeof raw === "string" ? normalizeAddress(raw) : null;
  return a ? Effect.succeed(a) : fail("invalid", `${field} must be 0x followed by 64 hex characters`);
}

function stripSeq(o: StoredObject): StoredObject {
  const { _seq, ...rest } = o as StoredObject & { _seq?: unknown };
  return rest as StoredObject;
}

function nextVersion(v: string): string {
  return (BigInt(v) + 1n).toString();
}

function loadObject<F>(view: StateView, rawId: unknown, type: string, what: string): Fx<{ object: StoredObject; fields: F }> {
  return Effect.gen(function* () {
    const id = yield* address(rawId, `${what} id`);
    const stored = yield* view.get<StoredObject>(KEYS.object(id));
    if (!stored || stored.type !== type) return yield* fail("not_found", `${what} ${id} not found`);
    const object = stripSeq(stored);
    return { object, fields: object.fields as F };
  });
}

function put(object: StoredObject, fields: BucketPolicyFields | AccessGroupFields, digest: string, isNew: boolean): StoredObject {
  return {
    object_id: object.object_id,
    type: object.type,
    version: isNew ? "1" : nextVersion(object.version),
    owner: { Shared: { initial_shared_version: isNew ? "1" : (object.owner as { Shared?: { initial_shared_version: string } }).Shared?.initial_shared_version ?? "1" } },
    fields,
    previous_transaction: digest,
  };
}

const objectPut = (object: StoredObject): ChainEvent => ({ type: "ObjectPut", object, dynamic_fields: [] });

export function decideConsoleTx(view: StateView, vtx: VerifiedTx, kind: ConsoleTxKind, tools: ConsoleDecideTools): Fx<Decision> {
  return Effect.gen(function* () {
    const { body } = vtx;
    if (!tools.genesis) return yield* fail("rejected", "the ledger has no genesis yet");
    const pkg = tools.genesis.package_id;
    const policyType = bucketPolicyType(pkg);
    const groupType = accessGroupType(pkg);
    const a = body.args as Record<string, unknown>;
    const sender = body.sender;
    const requireAdmin = (admins: readonly string[], what: string) =>
      admins.includes(sender) ? Effect.void : fail("forbidden", `${sender} is not an admin of ${what}`);

    switch (kind) {
      case "bucket_policy_create": {
        const bucketId = yield* uuid(a.bucket_id, "bucket_id");
        const spaceId = yield* uuid(a.space_id, "space_id");
        yield* tools.chargeGas;
        const id = deriveObjectId(vtx.digestBytes, 0);
        const fields: BucketPolicyFields = { id, bucket_id: bucketId, space_id: spaceId, admins: [sender], groups: [] };
        const object = put({ object_id: id, type: policyType, version: "0", owner: "Immutable", fields, previous_transaction: vtx.digest }, fields, vtx.digest, true);
        return tools.append([objectPut(object)], { object });
      }

      case "bucket_group_create": {
        const bucketId = yield* uuid(a.bucket_id, "bucket_id");
        const policy = yield* loadObject<BucketPolicyFields>(view, a.policy_id, policyType, "bucket policy");
        if (policy.fields.bucket_id !== bucketId) return yield* fail("invalid", "the bucket policy belongs to another bucket");
        yield* requireAdmin(policy.fields.admins, "the bucket policy");
        if (policy.fields.groups.length >= MAX_GROUP_MEMBERS) return yield* fail("rejected", "the bucket has too many access groups");
        yield* tools.chargeGas;
        const id = deriveObjectId(vtx.digestBytes, 0);
        const groupFields: AccessGroupFields = { id, bucket_id: bucketId, policy_id: policy.object.object_id, admins: [sender], members: [] };
        const group = put({ object_id: id, type: groupType, version: "0", owner: "Immutable", fields: groupFields, previous_transaction: vtx.digest }, groupFields, vtx.digest, true);
        const nextPolicy = put(policy.object, { ...policy.fields, groups: [...policy.fields.groups, id] }, vtx.digest, false);
        return tools.append([objectPut(group), objectPut(nextPolicy)], { object: group });
      }

      case "grant_bucket_access": {
        const recipient = yield* address(a.recipient, "recipient");
        const scope = a.scope;
        if (scope !== "read" && scope !== "readwrite") return yield* fail("invalid", "scope must be read or readwrite");
        if (!Array.isArray(a.group_ids) || a.group_ids.length === 0 || a.group_ids.length > MAX_GRANT_GROUPS) {
          return yield* fail("invalid", `group_ids must list 1 to ${MAX_GRANT_GROUPS} group ids`);
        }
        const ids = new Set<string>();
        const events: ChainEvent[] = [];
        let last: StoredObject | undefined;
        for (const raw of a.group_ids) {
          const group = yield* loadObject<AccessGroupFields>(view, raw, groupType, "access group");
          if (ids.has(group.object.object_id)) return yield* fail("invalid", "group_ids lists a group twice");
          ids.add(group.object.object_id);
          yield* requireAdmin(group.fields.admins, `access group ${group.object.object_id}`);
          const others = group.fields.members.filter((m) => m.address !== recipient);
          if (others.length >= MAX_GROUP_MEMBERS) return yield* fail("rejected", "the access group is full");
          const members = [...others, { address: recipient, scope: scope as AccessScope }];
          last = put(group.object, { ...group.fields, members }, vtx.digest, false);
          events.push(objectPut(last));
        }
        yield* tools.chargeGas;
        return tools.append(events, { object: last });
      }

      case "share_admin": {
        const member = yield* address(a.member, "member");
        const group = yield* loadObject<AccessGroupFields>(view, a.group_id, groupType, "access group");
        yield* requireAdmin(group.fields.admins, `access group ${group.object.object_id}`);
        if (group.fields.admins.includes(member)) return yield* fail("rejected", `${member} is already an admin of the group`);
        if (group.fields.admins.length >= MAX_GROUP_MEMBERS) return yield* fail("rejected", "the access group has too many admins");
        yield* tools.chargeGas;
        const object = put(group.object, { ...group.fields, admins: [...group.fields.admins, member] }, vtx.digest, false);
        return tools.append([objectPut(object)], { object });
      }

      case "unshare":
      case "unshare_bucket_access": {
        const who = yield* address(kind === "unshare" ? a.member : a.service_signer, kind === "unshare" ? "member" : "service_signer");
        const group = yield* loadObject<AccessGroupFields>(view, a.group_id, groupType, "access group");
        yield* requireAdmin(group.fields.admins, `access group ${group.object.object_id}`);
        const isMember = group.fields.members.some((m) => m.address === who);
        const isAdmin = group.fields.admins.includes(who);
        if (!isMember && !isAdmin) return yield* fail("not_found", `${who} has no access through this group`);
        const admins = group.fields.admins.filter((x) => x !== who);
        if (admins.length === 0) return yield* fail("rejected", "a group keeps at least one admin");
        yield* tools.chargeGas;
        const object = put(group.object, { ...group.fields, admins, members: group.fields.members.filter((m) => m.address !== who) }, vtx.digest, false);
        return tools.append([objectPut(object)], { object });
      }
    }
  });
}
