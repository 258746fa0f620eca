// The decisions of an OAuth grant's lifecycle (pure): authorization requested → consent approved (a single-use code)
// → tokens issued (code exchanged; then each refresh rotates both tokens) → revoked (by the client, by refresh-token
// reuse, by code reuse). Each returns the grant's next state or an RFC error; the store appends it.
import { createHash } from "node:crypto";
import { OAuthError, type GrantState } from "../../schemas/relayer/oauth.ts";

export const sha256Hex = (s: string) => createHash("sha256").update(s).digest("hex");
/** PKCE S256: BASE64URL(SHA256(verifier)) (RFC 7636 section 4.2). */
export const s256 = (verifier: string) => createHash("sha256").update(verifier).digest("base64url");
const SPENT_KEPT = 32;

export interface IssuedTokens {
  readonly accessHash: string;
  readonly refreshHash: string;
  readonly now: number;
  readonly accessTtlSecs: number;
  readonly refreshTtlSecs: number;
}

export function approveConsent(g: GrantState, accountId: string, codeHash: string, now: number, codeTtlSecs: number): GrantState {
  if (g.status !== "pending") throw new OAuthError("invalid_request", "this authorization was already answered");
  if (now > g.session_expires_at) throw new OAuthError("invalid_request", "this authorization expired: start again from the agent");
  return { ...g, status: "approved", account_id: accountId, code_hash: codeHash, code_expires_at: now + codeTtlSecs * 1000 };
}

/** A replayed code revokes what it issued (RFC 6749 section 4.1.2): the `revoked` state to append, then the error. */
export class GrantRevokedByReuse extends OAuthError {
  constructor(readonly revoked: GrantState, description: string) {
    super("invalid_grant", description);
  }
}

const revokeFor = (g: GrantState, reason: string): GrantState => ({ ...g, status: "revoked", revoked_reason: reason, access_hash: undefined, refresh_hash: undefined, code_hash: undefined });

export function exchangeCode(g: GrantState, p: { codeHash: string; clientId: string; redirectUri: string; verifier: string }, t: IssuedTokens): GrantState {
  if (g.client_id !== p.clientId) throw new OAuthError("invalid_grant", "the code was issued to another client");
  if (g.status === "active" || (g.status === "revoked" && g.revoked_reason === "code reuse")) {
    if (g.status === "active") throw new GrantRevokedByReuse(revokeFor(g, "code reuse"), "the code was already used; the tokens it issued are revoked");
    throw new OAuthError("invalid_grant", "the code was already used");
  }
  if (g.status !== "approved" || !g.code_hash || g.code_hash !== p.codeHash) throw new OAuthError("invalid_grant", "unknown or revoked code");
  if (t.now > (g.code_expires_at ?? 0)) throw new OAuthError("invalid_grant", "the code expired");
  if (g.redirect_uri !== p.redirectUri) throw new OAuthError("invalid_grant", "redirect_uri differs from the authorization request");
  if (s256(p.verifier) !== g.code_challenge) throw new OAuthError("invalid_grant", "code_verifier does not match the code_challenge");
  return issue({ ...g, code_hash: undefined }, t);
}

export function refreshTokens(g: GrantState, p: { refreshHash: string; clientId: string }, t: IssuedTokens): GrantState {
  if (g.client_id !== p.clientId) throw new OAuthError("invalid_grant", "the refresh token was issued to another client");
  if (g.status === "active" && g.spent_refresh_hashes.includes(p.refreshHash)) {
    throw new GrantRevokedByReuse(revokeFor(g, "refresh token reuse"), "the refresh token was already used; the whole grant is revoked");
  }
  if (g.status !== "active" || g.refresh_hash !== p.refreshHash) throw new OAuthError("invalid_grant", "unknown or revoked refresh token");
  if (t.now > (g.refresh_expires_at ?? 0)) throw new OAuthError("invalid_grant", "the refresh token expired");
  return issue({ ...g, spent_refresh_hashes: [...g.spent_refresh_hashes, p.refreshHash].slice(-SPENT_KEPT) }, t);
}

function issue(g: GrantState, t: IssuedTokens): GrantState {
  return {
    ...g,
    status: "active",
    access_hash: t.accessHash,
    access_expires_at: t.now + t.accessTtlSecs * 1000,
    refresh_hash: t.refreshHash,
    refresh_expires_at: t.now + t.refreshTtlSecs * 1000,
  };
}

/** RFC 7009: revoking either token ends the grant (its delegate key stays on the account until revoked there). */
export const revokeGrant = (g: GrantState, reason: string): GrantState | undefined => (g.status === "revoked" ? undefined : revokeFor(g, reason));

export function accessValid(g: GrantState, accessHash: string, keyId: string, now: number): boolean {
  return g.status === "active" && g.key_id === keyId && g.access_hash === accessHash && now <= (g.access_expires_at ?? 0) && !!g.account_id;
}
