// Operator actions on the console's directory (issue 5: keys are minted by an operator command for now): sign up a
// user with a personal space, create team spaces, add and remove members, mint and revoke API keys. Shared by the
// `memrelay console` command and the tests. Users and spaces are state-carrying aggregates decided against the
// event log; keys go through their actor (registering → active), whose host may run here or in the console.
import { randomUUID } from "node:crypto";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { AGG, CMD, EV, type KeyMinted, type KeyRole, type SpaceRole, type SpaceState, type UserState } from "../../schemas/console/events.ts";
import { PLAN_TIERS, isUuid, type PlanTier } from "../../schemas/console/http.ts";
import { ConsoleLog } from "./log.ts";
import { consoleCommand } from "../../schemas/console/commands.ts";
import type { Decision, Fold } from "../../eventlog/aggregate-store.ts";
import { newApiKey } from "./api-keys.ts";
import * as decide from "./deciders.ts";
import { SPACE, USER, type DirectoryEvent } from "./deciders.ts";
import { ConsoleRefusal, orThrow, type ConsoleError } from "./errors.ts";

export interface DirectoryContext {
  readonly clog: ConsoleLog;
  /** Resolves once the console read model reflects stream sequence `seq`. */
  settle(seq: number): Promise<void>;
  readonly tiers?: Readonly<Record<string, PlanTier>>;
}

export interface SignedUp {
  readonly user: UserState;
  readonly space: SpaceState;
}

const EMAIL_RE = /^[^\s@]{1,64}@[^\s@]{1,190}$/;
// Times come from the console log's clock (actors/clock.ts), the one the commands it publishes are stamped with.
const now = (ctx: DirectoryContext) => ctx.clog.clock.now();

const tiersOf = (ctx: DirectoryContext) => ctx.tiers ?? PLAN_TIERS;
const tierOf = (ctx: DirectoryContext, tier: string): PlanTier => orThrow(decide.tierOf(tiersOf(ctx), tier));

/** Decides on a directory aggregate and waits until the read model reflects what was appended. */
async function handle<S, R>(ctx: DirectoryContext, aggregate: string, fold: Fold<S, DirectoryEvent>, decider: (state: S) => Decision<R, ConsoleError>): Promise<R> {
  const o = await ctx.clog.aggregates.handle(aggregate, fold, decider);
  if (o.ok && o.seq) await ctx.settle(o.seq);
  return orThrow(o);
}

export async function signUp(ctx: DirectoryContext, input: { email: string; name?: string; tier?: string; storageCap?: number }): Promise<SignedUp> {
  const email = input.email.trim();
  if (!EMAIL_RE.test(email)) throw new ConsoleRefusal({ code: "invalid_input", message: "email must look like name@domain" });
  const tierName = input.tier ?? "free";
  const tier = tierOf(ctx, tierName);
  const userId = randomUUID();
  const spaceId = randomUUID();
  orThrow(await ctx.clog.claim("email", "users", email, userId));
  const at = now(ctx);
  const space: SpaceState = {
    space_id: spaceId,
    type: "personal",
    name: `${input.name ?? email}'s space`,
    tier: tierName,
    storage_cap: input.storageCap ?? tier.storage,
    members: [{ user_id: userId, role: "owner", added_at: at }],
    created_at: at,
  };
  const user: UserState = { user_id: userId, email, name: input.name ?? email, personal_space_id: spaceId, created_at: at };
  // The space first, then the user who owns it; waiting for the read model to show the user covers both appends.
  orThrow(await ctx.clog.aggregates.handle(`${AGG.space}.${spaceId}`, SPACE, decide.createSpace(space)));
  await handle(ctx, `${AGG.user}.${userId}`, USER, decide.createUser(user));
  return { user, space };
}

async function requireUser(ctx: DirectoryContext, userId: string): Promise<UserState> {
  if (!isUuid(userId)) throw new ConsoleRefusal({ code: "invalid_input", message: "user id must be a UUID" });
  const { state: user } = await ctx.clog.aggregates.read(`${AGG.user}.${userId}`, USER);
  if (!user) throw new ConsoleRefusal({ code: "user_not_found", userId });
  return user;
}

export async function createTeamSpace(ctx: DirectoryContext, input: { ownerUserId: string; name: string; tier?: string; storageCap?: number }): Promise<SpaceState> {
  await requireUser(ctx, input.ownerUserId);
  const name = input.name.trim();
  if (!name || name.length > 100) throw new ConsoleRefusal({ code: "invalid_input", message: "space name must be 1 to 100 characters" });
  const tierName = input.tier ?? "free";
  const tier = tierOf(ctx, tierName);
  const at = now(ctx);
  const space: SpaceState = {
    space_id: randomUUID(),
    type: "team",
    name,
    tier: tierName,
    storage_cap: input.storageCap ?? tier.storage,
    members: [{ user_id: input.ownerUserId, role: "owner", added_at: at }],
    created_at: at,
  };
  await handle(ctx, `${AGG.space}.${space.space_id}`, SPACE, decide.createSpace(space));
  return space;
}

export async function addMember(ctx: DirectoryContext, input: { spaceId: string; userId: string; role?: SpaceRole }): Promise<SpaceState> {
  await requireUser(ctx, input.userId);
  const role = input.role ?? "member";
  if (!["owner", "admin", "member"].includes(role)) throw new ConsoleRefusal({ code: "invalid_input", message: "role must be owner, admin or member" });
  return handle(ctx, `${AGG.space}.${input.spaceId}`, SPACE, decide.addMember({ spaceId: input.spaceId, userId: input.userId, role, tiers: tiersOf(ctx), at: now(ctx) }));
}

export async function removeMember(ctx: DirectoryContext, input: { spaceId: string; userId: string }): Promise<SpaceState> {
  return handle(ctx, `${AGG.space}.${input.spaceId}`, SPACE, decide.removeMember(input));
}

export interface MintedKey {
  readonly key_id: string;
  readonly role: KeyRole;
  readonly prefix: string;
  /** the API key, shown once */
  readonly secret: string;
  readonly space_id: string | null;
  /** read_write keys: the service key (Ed25519, Sui format), shown once; only its address is stored */
  readonly service_key?: { readonly address: string; readonly secret_key: string };
}

export async function mintKey(ctx: DirectoryContext, input: { userId: string; role: KeyRole; spaceId?: string | null; label?: string | null }): Promise<MintedKey> {
  await requireUser(ctx, input.userId);
  if (input.role !== "read_write" && input.role !== "read_only") throw new ConsoleRefusal({ code: "invalid_input", message: "role must be read_write or read_only" });
  if (input.spaceId && !isUuid(input.spaceId)) throw new ConsoleRefusal({ code: "invalid_input", message: "space id must be a UUID" });
  const key = newApiKey();
  const service = input.role === "read_write" ? Ed25519Keypair.generate() : null;
  const keyId = randomUUID();
  const data: KeyMinted = {
    key_id: keyId,
    user_id: input.userId,
    role: input.role,
    hash: key.hash,
    prefix: key.prefix,
    label: input.label ?? null,
    space_id: input.spaceId ?? null,
    service_address: service ? service.getPublicKey().toSuiAddress() : null,
    created_at: now(ctx),
  };
  const r = await ctx.clog.dispatch(keyId, consoleCommand(CMD.keyMint, data), (e) =>
    e.type === EV.keyActivated ? { ok: true as const } : e.type === EV.keyRejected ? { ok: false as const, reason: e.data.reason } : undefined,
  30_000);
  if (!r.value.ok) throw new ConsoleRefusal({ code: "invalid_input", message: `the key was not activated: ${r.value.reason}` });
  await ctx.settle(r.seq);
  return {
    key_id: keyId,
    role: input.role,
    prefix: key.prefix,
    secret: key.secret,
    space_id: data.space_id,
    ...(service ? { service_key: { address: data.service_address!, secret_key: service.getSecretKey() } } : {}),
  };
}

export async function revokeKey(ctx: DirectoryContext, keyId: string): Promise<"revoked" | "already_revoked"> {
  if (!isUuid(keyId)) throw new ConsoleRefusal({ code: "invalid_input", message: "key id must be a UUID" });
  const last = await ctx.clog.lastEvent(AGG.key, keyId);
  if (!last) throw new ConsoleRefusal({ code: "key_not_found", keyId });
  if (last.type === EV.keyRevoked || last.type === EV.keyRejected) return "already_revoked";
  const r = await ctx.clog.dispatch(keyId, consoleCommand(CMD.keyRevoke, { requested_at: now(ctx) }), (e) => (e.type === EV.keyRevoked ? true : undefined), 30_000);
  await ctx.settle(r.seq);
  return "revoked";
}
