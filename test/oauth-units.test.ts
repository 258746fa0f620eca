// Pure parts of OAuth: the grant's decisions (given a state, when a code or refresh token is presented, then the next
// state or the RFC error), redirect URI rules, consent URL derivation, CIDR exemptions, and the delegate vault's
// sealing (another operator key opens nothing).
import { describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { GrantRevokedByReuse, accessValid, approveConsent, exchangeCode, refreshTokens, revokeGrant, s256 } from "../actors/relayer/oauth-decisions.ts";
import { OAuthError, consentUrlFor, parseOperatorKey, redirectAllowed, type GrantState } from "../schemas/relayer/oauth.ts";
import { ipInCidrs } from "../gateway/relayer/cidr.ts";
import { DelegateVault } from "../adapters/oauth/delegate-vault.ts";

const verifier = "v".repeat(43);
const pending: GrantState = {
  grant_id: "g1", client_id: "c1", redirect_uri: "http://127.0.0.1:9/cb", code_challenge: s256(verifier), scope: "memory", key_id: "k1",
  delegate_public_key: "ab".repeat(32), status: "pending", session_expires_at: 10_000, spent_refresh_hashes: [],
};
const tokens = (n: number) => ({ accessHash: `a${n}`, refreshHash: `r${n}`, now: 1_000, accessTtlSecs: 60, refreshTtlSecs: 600 });
const approved = approveConsent(pending, "0xacc", "code-hash", 1_000, 30);
const code = { codeHash: "code-hash", clientId: "c1", redirectUri: "http://127.0.0.1:9/cb", verifier };
const rfcError = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as OAuthError).code;
  }
  return "no error";
};

describe("grant decisions", () => {
  it("approves once, within the session", () => {
    expect(approved).toMatchObject({ status: "approved", account_id: "0xacc", code_expires_at: 31_000 });
    expect(rfcError(() => approveConsent(approved, "0xacc", "h", 1_000, 30))).toBe("invalid_request");
    expect(rfcError(() => approveConsent(pending, "0xacc", "h", 20_000, 30))).toBe("invalid_request");
  });

  it("exchanges a code for tokens only with its client, redirect URI, verifier and before it expires", () => {
    const active = exchangeCode(approved, code, tokens(1));
    expect(active).toMatchObject({ status: "active", access_hash: "a1", refresh_hash: "r1", code_hash: undefined, access_expires_at: 61_000 });
    expect(rfcError(() => exchangeCode(approved, { ...code, clientId: "c2" }, tokens(1)))).toBe("invalid_grant");
    expect(rfcError(() => exchangeCode(approved, { ...code, redirectUri: "http://127.0.0.1:9/other" }, tokens(1)))).toBe("invalid_grant");
    expect(rfcError(() => exchangeCode(approved, { ...code, verifier: "w".repeat(43) }, tokens(1)))).toBe("invalid_grant");
    expect(rfcError(() => exchangeCode(approved, code, { ...tokens(1), now: 40_000 }))).toBe("invalid_grant");
    // a second exchange revokes what the first issued
    const reuse = (() => { try { exchangeCode(active, code, tokens(2)); } catch (e) { return e; } })();
    expect(reuse).toBeInstanceOf(GrantRevokedByReuse);
    expect((reuse as GrantRevokedByReuse).revoked).toMatchObject({ status: "revoked", revoked_reason: "code reuse", access_hash: undefined });
  });

  it("rotates refresh tokens and detects reuse of a spent one", () => {
    const active = exchangeCode(approved, code, tokens(1));
    const rotated = refreshTokens(active, { refreshHash: "r1", clientId: "c1" }, tokens(2));
    expect(rotated).toMatchObject({ refresh_hash: "r2", spent_refresh_hashes: ["r1"] });
    expect(() => refreshTokens(rotated, { refreshHash: "r1", clientId: "c1" }, tokens(3))).toThrow(GrantRevokedByReuse);
    expect(rfcError(() => refreshTokens(rotated, { refreshHash: "r2", clientId: "c2" }, tokens(3)))).toBe("invalid_grant");
    expect(rfcError(() => refreshTokens(revokeGrant(rotated, "x")!, { refreshHash: "r2", clientId: "c1" }, tokens(3)))).toBe("invalid_grant");
  });

  it("an access token is valid only while active, unexpired and under the same operator key", () => {
    const active = exchangeCode(approved, code, tokens(1));
    expect(accessValid(active, "a1", "k1", 2_000)).toBe(true);
    expect(accessValid(active, "a1", "k2", 2_000)).toBe(false);
    expect(accessValid(active, "a1", "k1", 70_000)).toBe(false);
    expect(accessValid(revokeGrant(active, "x")!, "a1", "k1", 2_000)).toBe(false);
  });
});

describe("OAuth rules", () => {
  it("redirect URIs: loopback on any port, https on allowed hosts, nothing else", () => {
    expect(redirectAllowed("http://127.0.0.1:3000/cb", [])).toBe(true);
    expect(redirectAllowed("http://localhost/cb", [])).toBe(true);
    expect(redirectAllowed("https://claude.ai/api/mcp/auth_callback", ["claude.ai"])).toBe(true);
    expect(redirectAllowed("http://claude.ai/cb", ["claude.ai"])).toBe(false);
    expect(redirectAllowed("https://evil.example/cb", ["claude.ai"])).toBe(false);
    expect(redirectAllowed("https://claude.ai/cb#frag", ["claude.ai"])).toBe(false);
    expect(redirectAllowed("javascript:alert(1)", ["claude.ai"])).toBe(false);
  });
  it("consent URL drops the relayer label of the issuer", () => {
    expect(consentUrlFor("https://relayer.memrelay.dev")).toBe("https://memrelay.dev/connect/claude");
    expect(consentUrlFor("http://127.0.0.1:8000")).toBe("http://127.0.0.1:8000/connect/claude");
  });
  it("trusted CIDRs, IPv4 and IPv6", () => {
    expect(ipInCidrs("160.79.104.7", ["160.79.104.0/21"])).toBe(true);
    expect(ipInCidrs("160.79.112.1", ["160.79.104.0/21"])).toBe(false);
    expect(ipInCidrs("2001:db8::1", ["2001:db8::/32"])).toBe(true);
    expect(ipInCidrs("2001:db9::1", ["2001:db8::/32", "garbage"])).toBe(false);
  });
  it("the operator key is 32 bytes of base64url without padding", () => {
    expect(parseOperatorKey(randomBytes(32).toString("base64url"))).toHaveLength(32);
    expect(() => parseOperatorKey(randomBytes(32).toString("base64"))).toThrow(/base64url/);
    expect(() => parseOperatorKey("short")).toThrow();
  });
  it("the vault's ciphertext is v1.<nonce>.<ciphertext>, bound to its grant, and opens only under the same key", async () => {
    const kv = { put: async () => undefined, get: async () => null };
    const log = { kvm: { create: async () => kv } } as never;
    const a = await DelegateVault.open(log, randomBytes(32));
    const b = await DelegateVault.open(log, randomBytes(32));
    const secret = randomBytes(32);
    const sealed = a.seal("g1", secret);
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    expect(Buffer.from(a.open("g1", sealed)!)).toEqual(secret);
    expect(a.open("g2", sealed)).toBeUndefined();
    expect(b.open("g1", sealed)).toBeUndefined();
    expect(a.keyId).not.toBe(b.keyId);
  });
});
