// Given/when/then specs of the console API key's decisions (actors/console/key.decider.ts): mint and revoke, and the
// registration the `register` effect records from the directory's facts. Through the aggregate store over an
// in-memory log, like the directory's deciders; no NATS, no Postgres.
import { describe, it } from "vitest";
import { CMD, EV, consoleEvent, type KeyMinted, type SpaceState, type UserState } from "../schemas/console/events.ts";
import type { ConsoleCommand } from "../schemas/console/commands.ts";
import { KEY, decideKey, register } from "../actors/console/key.decider.ts";
import { deciderSpec } from "./support/decider-spec.ts";

const T0 = "2026-11-27T10:00:00.000Z";
const T1 = "2026-11-27T11:00:00.000Z";
const key: KeyMinted = { key_id: "k1", user_id: "u1", role: "read_write", hash: "ab".repeat(32), prefix: "mrc_abcdefgh", label: null, space_id: null, service_address: "0x1", created_at: T0 };
const spaceKey: KeyMinted = { ...key, space_id: "s1" };
const user: UserState = { user_id: "u1", email: "a@b.c", name: "a", personal_space_id: "s0", created_at: T0 };
const space = (members: string[]): SpaceState => ({ space_id: "s1", type: "team", name: "t", tier: "free", storage_cap: 1, members: members.map((user_id) => ({ user_id, role: "member", added_at: T0 })), created_at: T0 });

const envelope = { version: 1, id: "c1", aggregate: "console.key.k1", issued_at: T1, correlation_id: "c" } as const;
const mint = (data: KeyMinted): ConsoleCommand => ({ ...envelope, type: CMD.keyMint, data });
const revoke: ConsoleCommand = { ...envelope, type: CMD.keyRevoke, data: { requested_at: T1 } };

const minted = consoleEvent(EV.keyMinted, key);
const activated = consoleEvent(EV.keyActivated, { activated_at: T0 });
const revokeRequested = consoleEvent(EV.keyRevokeRequested, { requested_at: T1 });
const spec = deciderSpec(KEY, { history: "one commit" });

describe("API key: mint and revoke", () => {
  it("a new key is minted (registering)", () => spec.given().when(decideKey(mint(key))).then([minted]));
  it("a repeated mint changes nothing", () => spec.given(minted).when(decideKey(mint(key))).then([]));
  it("an active key's revocation is requested", () => spec.given(minted, activated).when(decideKey(revoke)).then([revokeRequested]));
  it("a key still registering can be revoked", () => spec.given(minted).when(decideKey(revoke)).then([revokeRequested]));
  it("a revocation under way or done changes nothing", async () => {
    await spec.given(minted, activated, revokeRequested).when(decideKey(revoke)).then([]);
    await spec.given(minted, activated, revokeRequested, consoleEvent(EV.keyRevoked, { revoked_at: T1 })).when(decideKey(revoke)).then([]);
  });
  it("a key that does not exist, or was rejected, is not revoked", async () => {
    await spec.given().when(decideKey(revoke)).then([]);
    await spec.given(minted, consoleEvent(EV.keyRejected, { reason: "unknown user" })).when(decideKey(revoke)).then([]);
  });
  it("a revoke command does not mint, a mint command does not revoke", () => spec.given(minted, activated).when(decideKey(mint(key))).then([]));
});

describe("API key: registration from the directory's facts", () => {
  it("an existing owner activates the key at the mint command's time", () =>
    spec.given(minted).when(register({ user, space: null, at: T1 })).then([consoleEvent(EV.keyActivated, { activated_at: T1 })]));
  it("an unknown owner rejects it", () => spec.given(minted).when(register({ user: null, space: null, at: T1 })).then([consoleEvent(EV.keyRejected, { reason: "unknown user" })]));
  it("a key limited to a space needs its owner among the members", async () => {
    const limited = consoleEvent(EV.keyMinted, spaceKey);
    await spec.given(limited).when(register({ user, space: space(["u1"]), at: T1 })).then([consoleEvent(EV.keyActivated, { activated_at: T1 })]);
    await spec.given(limited).when(register({ user, space: space(["u2"]), at: T1 })).then([consoleEvent(EV.keyRejected, { reason: "the user is not a member of the key's space" })]);
    await spec.given(limited).when(register({ user, space: null, at: T1 })).then([consoleEvent(EV.keyRejected, { reason: "the user is not a member of the key's space" })]);
  });
  it("a key no longer registering is not registered again", () => spec.given(minted, activated).when(register({ user, space: null, at: T1 })).then([]));
});
