// The console directory's decisions, pure: an aggregate's state and a command in, the events to append (with the
// result to answer) or a ConsoleError out; ids, the clock and the plan tiers come in with the command. Users, spaces
// and name claims carry their whole state in each event (schemas/console/events.ts), so each fold is "the last
// event says it". eventlog/aggregate-store.ts reads the state, appends, and decides again after a concurrent append.
import { accept, reject, type Decision, type Fold } from "../../eventlog/aggregate-store.ts";
import { EV, consoleEvent, type ConsoleMachineEvent, type SpaceMember, type SpaceRole, type SpaceState, type UserState } from "../../schemas/console/events.ts";
import type { PlanTier } from "../../schemas/console/http.ts";
import type { ClaimScope, ConsoleError } from "./errors.ts";

type Decided<R> = Decision<R, ConsoleError>;
/** A directory event as folded: `{type, data}` of the console catalogue. */
export type DirectoryEvent = ConsoleMachineEvent;

// ------------------------------------------------------------------ folds

/** Who holds a name claim, null when nobody does. */
export const CLAIM: Fold<string | null, DirectoryEvent> = { initial: null, evolve: (_, e) => (e.type === EV.claimHeld ? e.data.owner_id : null) };
export const SPACE: Fold<SpaceState | null, DirectoryEvent> = {
  initial: null,
  evolve: (s, e) => (e.type === EV.spaceCreated || e.type === EV.spaceMemberAdded || e.type === EV.spaceMemberRemoved ? e.data : s),
};
export const USER: Fold<UserState | null, DirectoryEvent> = { initial: null, evolve: (s, e) => (e.type === EV.userSignedUp ? e.data : s) };

// ------------------------------------------------------------------ name claims

export interface Claim {
  readonly scope: ClaimScope;
  readonly name: string;
  readonly ownerId: string;
}

/** Claiming a name one already holds changes nothing, so a retried request converges. */
export const claim =
  (c: Claim) =>
  (holder: string | null): Decided<null> => {
    if (holder === c.ownerId) return accept(null);
    if (holder) return reject({ code: "name_taken", scope: c.scope, name: c.name });
    return accept(null, [consoleEvent(EV.claimHeld, { owner_id: c.ownerId, name: c.name })]);
  };

/** Releasing is idempotent, and only the holder releases. */
export const release =
  (ownerId: string) =>
  (holder: string | null): Decided<null> =>
    accept(null, holder === ownerId ? [consoleEvent(EV.claimReleased, { owner_id: ownerId })] : []);

// ------------------------------------------------------------------ users and spaces

/** Creates the user or the space once; a retried create finds it there and changes nothing. */
export const createUser = (user: UserState) => (existing: UserState | null): Decided<null> => accept(null, existing ? [] : [consoleEvent(EV.userSignedUp, user)]);
export const createSpace = (space: SpaceState) => (existing: SpaceState | null): Decided<null> => accept(null, existing ? [] : [consoleEvent(EV.spaceCreated, space)]);

/** The plan tier of a name, or why there is none. */
export function tierOf(tiers: Readonly<Record<string, PlanTier>>, tier: string): { ok: true; result: PlanTier } | { ok: false; error: ConsoleError } {
  const t = tiers[tier];
  return t ? { ok: true, result: t } : { ok: false, error: { code: "unknown_tier", tier, known: Object.keys(tiers) } };
}

export interface AddMember {
  readonly spaceId: string;
  readonly userId: string;
  readonly role: SpaceRole;
  readonly tiers: Readonly<Record<string, PlanTier>>;
  readonly at: string;
}

export const addMember =
  (c: AddMember) =>
  (s: SpaceState | null): Decided<SpaceState> => {
    if (!s) return reject({ code: "space_not_found", spaceId: c.spaceId });
    if (s.type !== "team") return reject({ code: "not_a_team_space", spaceId: c.spaceId });
    const existing = s.members.find((m) => m.user_id === c.userId);
    if (existing && existing.role === c.role) return accept(s);
    if (!existing) {
      const tier = tierOf(c.tiers, s.tier);
      if (!tier.ok) return tier;
      if (s.members.length >= tier.result.users) return reject({ code: "plan_limit", limit: "users", tier: s.tier, allowed: tier.result.users });
    }
    const member: SpaceMember = { user_id: c.userId, role: c.role, added_at: existing?.added_at ?? c.at };
    const after: SpaceState = { ...s, members: [...s.members.filter((m) => m.user_id !== c.userId), member] };
    return accept(after, [consoleEvent(EV.spaceMemberAdded, after)]);
  };

export const removeMember =
  (c: { readonly spaceId: string; readonly userId: string }) =>
  (s: SpaceState | null): Decided<SpaceState> => {
    if (!s) return reject({ code: "space_not_found", spaceId: c.spaceId });
    if (!s.members.some((m) => m.user_id === c.userId)) return accept(s);
    const rest = s.members.filter((m) => m.user_id !== c.userId);
    if (!rest.some((m) => m.role === "owner")) return reject({ code: "last_owner", spaceId: c.spaceId });
    const after: SpaceState = { ...s, members: rest };
    return accept(after, [consoleEvent(EV.spaceMemberRemoved, after)]);
  };
