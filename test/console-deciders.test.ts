// Given/when/then specs of the console directory's deciders (actors/console/deciders.ts) through the aggregate store
// over an in-memory log, and how each refusal reads in the console's contract. No NATS, no Postgres.
import { describe, expect, it } from "vitest";
import { EV, consoleEvent, type SpaceState, type UserState } from "../schemas/console/events.ts";
import { PLAN_TIERS } from "../schemas/console/http.ts";
import * as decide from "../actors/console/deciders.ts";
import { CLAIM, SPACE, USER } from "../actors/console/deciders.ts";
import type { ConsoleError } from "../actors/console/errors.ts";
import { contractError } from "../gateway/console/domain-errors.ts";
import { deciderSpec } from "./support/decider-spec.ts";

const T0 = "2026-11-27T10:00:00.000Z";
const T1 = "2026-11-27T11:00:00.000Z";
const tiers = { ...PLAN_TIERS, tiny: { buckets: 1, users: 2, storage: 1 } };

const team: SpaceState = { space_id: "s1", type: "team", name: "team", tier: "tiny", storage_cap: 1, members: [{ user_id: "alice", role: "owner", added_at: T0 }], created_at: T0 };

describe("name claims", () => {
  const spec = deciderSpec(CLAIM);
  const claim = (ownerId: string) => decide.claim({ scope: "bucket", name: "Photos", ownerId });

  it("a free name is held by the claimant", () => spec.given().when(claim("b1")).then([consoleEvent(EV.claimHeld, { owner_id: "b1", name: "Photos" })]));
  it("a released name can be claimed by another", () =>
    spec
      .given(consoleEvent(EV.claimHeld, { owner_id: "b0", name: "photos" }), consoleEvent(EV.claimReleased, { owner_id: "b0" }))
      .when(claim("b1"))
      .then([consoleEvent(EV.claimHeld, { owner_id: "b1", name: "Photos" })]));
  it("claiming a name one holds changes nothing (a retried request converges)", () => spec.given(consoleEvent(EV.claimHeld, { owner_id: "b1", name: "Photos" })).when(claim("b1")).then([]));
  it("a name another owner holds is taken", () =>
    spec.given(consoleEvent(EV.claimHeld, { owner_id: "b0", name: "photos" })).when(claim("b1")).thenRejects({ code: "name_taken", scope: "bucket", name: "Photos" }));
  it("the holder releases", () => spec.given(consoleEvent(EV.claimHeld, { owner_id: "b1", name: "Photos" })).when(decide.release("b1")).then([consoleEvent(EV.claimReleased, { owner_id: "b1" })]));
  it("anyone else's release changes nothing", () => spec.given(consoleEvent(EV.claimHeld, { owner_id: "b1", name: "Photos" })).when(decide.release("b2")).then([]));
  it("releasing a free name changes nothing", () => spec.given().when(decide.release("b1")).then([]));
});

describe("users and spaces", () => {
  const user: UserState = { user_id: "u1", email: "a@b.c", name: "a", personal_space_id: "s0", created_at: T0 };
  it("a user is created once", () => deciderSpec(USER).given().when(decide.createUser(user)).then([consoleEvent(EV.userSignedUp, user)]));
  it("a retried user create changes nothing", () => deciderSpec(USER).given(consoleEvent(EV.userSignedUp, user)).when(decide.createUser(user)).then([]));
  it("a space is created once", () => deciderSpec(SPACE).given().when(decide.createSpace(team)).then([consoleEvent(EV.spaceCreated, team)]));
  it("a retried space create changes nothing", () => deciderSpec(SPACE).given(consoleEvent(EV.spaceCreated, team)).when(decide.createSpace(team)).then([]));
});

describe("members", () => {
  const spec = deciderSpec(SPACE);
  const add = (userId: string, role: "owner" | "admin" | "member" = "member", tierTable: typeof tiers = tiers) => decide.addMember({ spaceId: "s1", userId, role, tiers: tierTable, at: T1 });
  const withBob: SpaceState = { ...team, members: [...team.members, { user_id: "bob", role: "member", added_at: T1 }] };

  it("a member joins a team space with the command's time", () => spec.given(consoleEvent(EV.spaceCreated, team)).when(add("bob")).then([consoleEvent(EV.spaceMemberAdded, withBob)], withBob));
  it("a member already in that role changes nothing", () => spec.given(consoleEvent(EV.spaceCreated, withBob)).when(add("bob")).then([], withBob));
  it("a role change keeps the member's join time", () => {
    const admin: SpaceState = { ...team, members: [...team.members, { user_id: "bob", role: "admin", added_at: T1 }] };
    return spec
      .given(consoleEvent(EV.spaceCreated, withBob))
      .when(decide.addMember({ spaceId: "s1", userId: "bob", role: "admin", tiers, at: "2026-11-28T00:00:00.000Z" }))
      .then([consoleEvent(EV.spaceMemberAdded, admin)]);
  });
  it("a space at its plan's user limit refuses another member", () =>
    spec.given(consoleEvent(EV.spaceCreated, withBob)).when(add("carol")).thenRejects({ code: "plan_limit", limit: "users", tier: "tiny", allowed: 2 }));
  it("a space on a tier the table does not know refuses a new member", () =>
    spec.given(consoleEvent(EV.spaceCreated, team)).when(add("bob", "member", PLAN_TIERS as typeof tiers)).thenRejects({ code: "unknown_tier", tier: "tiny", known: Object.keys(PLAN_TIERS) }));
  it("a missing space is not found", () => spec.given().when(add("bob")).thenRejects({ code: "space_not_found", spaceId: "s1" }));
  it("a personal space takes no members", () => spec.given(consoleEvent(EV.spaceCreated, { ...team, type: "personal" })).when(add("bob")).thenRejects({ code: "not_a_team_space", spaceId: "s1" }));

  it("a member leaves", () => spec.given(consoleEvent(EV.spaceMemberAdded, withBob)).when(decide.removeMember({ spaceId: "s1", userId: "bob" })).then([consoleEvent(EV.spaceMemberRemoved, team)], team));
  it("removing a non-member changes nothing", () => spec.given(consoleEvent(EV.spaceCreated, team)).when(decide.removeMember({ spaceId: "s1", userId: "bob" })).then([], team));
  it("the last owner stays", () => spec.given(consoleEvent(EV.spaceCreated, withBob)).when(decide.removeMember({ spaceId: "s1", userId: "alice" })).thenRejects({ code: "last_owner", spaceId: "s1" }));
  it("removing from a missing space is not found", () => spec.given().when(decide.removeMember({ spaceId: "s1", userId: "bob" })).thenRejects({ code: "space_not_found", spaceId: "s1" }));
});

describe("the console's contract for each refusal", () => {
  const cases: [ConsoleError, number, string, Record<string, unknown>][] = [
    [{ code: "name_taken", scope: "bucket", name: "x" }, 409, 'a bucket named "x" already exists in this space', { code: "conflict" }],
    [{ code: "name_taken", scope: "file", name: "x" }, 409, 'a file named "x" already exists in this bucket', { code: "conflict" }],
    [{ code: "name_taken", scope: "email", name: "a@b.c" }, 409, "a@b.c has already signed up", { code: "conflict" }],
    [{ code: "space_not_found", spaceId: "s1" }, 404, "space s1 not found", { code: "not_found" }],
    [{ code: "not_a_team_space", spaceId: "s1" }, 400, "members are added to team spaces only", { code: "bad_request" }],
    [{ code: "plan_limit", limit: "users", tier: "tiny", allowed: 2 }, 422, "the tiny plan allows 2 users per space", { code: "PLAN_LIMIT_EXCEEDED", limit: "users", currentTier: "tiny" }],
    [{ code: "last_owner", spaceId: "s1" }, 400, "a space keeps at least one owner", { code: "bad_request" }],
    [{ code: "unknown_tier", tier: "gold", known: ["free", "pro"] }, 400, "unknown plan tier gold (known: free, pro)", { code: "bad_request" }],
  ];
  it.each(cases)("%o answers %i", (error, status, message, body) => {
    const e = contractError(error);
    expect(e.status).toBe(status);
    expect(e.body()).toEqual({ error: message, ...body });
  });
});
