// OAuth 2.1 for the agent transports (spec/relayer.md, OAuth routes): clients (RFC 7591), authorization grants with
// PKCE S256 (RFC 7636), tokens with refresh rotation and reuse detection, revocation (RFC 7009). Grants and clients
// are aggregates whose every event carries the whole state (hashes of codes and tokens, never the values). The
// delegate key's ciphertext is a secret: it lives in its own store, never in an event. Pure.
import { eventsOf, isEventOf, type EventOf, type NewEventOf } from "../envelope.ts";

/** One subject family (`evt.oauth.>`) for clients and grants, so one projection follows both. */
export const OAUTH = "oauth";
export const clientAggregate = (clientId: string) => `${OAUTH}.client-${clientId}`;
export const grantAggregate = (grantId: string) => `${OAUTH}.grant-${grantId}`;

export const OAUTH_EVENTS = {
  clientRegistered: "oauth.client_registered",
  authorizationRequested: "oauth.authorization_requested",
  consentApproved: "oauth.consent_approved",
  tokensIssued: "oauth.tokens_issued",
  grantRevoked: "oauth.grant_revoked",
} as const;

/** Tokens name their grant, so a lookup needs no index: `<prefix>.<grant id>.<secret>`. */
export const TOKEN_PREFIX = { code: "mrc", access: "mra", refresh: "mrr" } as const;

export interface OAuthClientState {
  readonly client_id: string;
  readonly client_name: string;
  readonly redirect_uris: readonly string[];
  readonly created_at: string;
}

export type GrantStatus = "pending" | "approved" | "active" | "revoked";

export interface GrantState {
  readonly grant_id: string;
  readonly client_id: string;
  readonly redirect_uri: string;
  readonly code_challenge: string;
  readonly scope: string;
  /** The client's `state` parameter, returned with the code (not a secret: it travels in the redirect). */
  readonly client_state?: string;
  /** Which operator key encrypted the delegate: another key (a rotation) invalidates the grant. */
  readonly key_id: string;
  readonly delegate_public_key: string;
  readonly status: GrantStatus;
  /** The consent must happen before this (MCP_OAUTH_SESSION_TTL_SECS). */
  readonly session_expires_at: number;
  readonly account_id?: string;
  readonly code_hash?: string;
  readonly code_expires_at?: number;
  readonly access_hash?: string;
  readonly access_expires_at?: number;
  readonly refresh_hash?: string;
  readonly refresh_expires_at?: number;
  /** Refresh tokens already rotated away: presenting one again revokes the grant (reuse detection). */
  readonly spent_refresh_hashes: readonly string[];
  readonly revoked_reason?: string;
}

export interface GrantEvent {
  readonly state: GrantState;
}

/** The OAuth catalogue: a client's registration carries the client, every grant event the grant's whole state. */
export interface OAuthEventData {
  [OAUTH_EVENTS.clientRegistered]: OAuthClientState;
  [OAUTH_EVENTS.authorizationRequested]: GrantEvent;
  [OAUTH_EVENTS.consentApproved]: GrantEvent;
  [OAUTH_EVENTS.tokensIssued]: GrantEvent;
  [OAUTH_EVENTS.grantRevoked]: GrantEvent;
}
export type OAuthEvent = EventOf<OAuthEventData>;
export type NewOAuthEvent = NewEventOf<OAuthEventData>;
export type GrantEventType = Exclude<keyof OAuthEventData, typeof OAUTH_EVENTS.clientRegistered>;

const OAUTH_EVENT_VERSIONS = {
  [OAUTH_EVENTS.clientRegistered]: 1,
  [OAUTH_EVENTS.authorizationRequested]: 1,
  [OAUTH_EVENTS.consentApproved]: 1,
  [OAUTH_EVENTS.tokensIssued]: 1,
  [OAUTH_EVENTS.grantRevoked]: 1,
};
/** An OAuth event at its type's current version. */
export const oauthEvent = eventsOf<OAuthEventData>(OAUTH_EVENT_VERSIONS);
export const isOAuthEvent = isEventOf<OAuthEventData>(OAUTH_EVENT_VERSIONS);

/** RFC 6749 / 7591 / 7009 error codes used here. */
export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "invalid_scope"
  | "access_denied"
  | "invalid_redirect_uri"
  | "invalid_client_metadata"
  | "temporarily_unavailable"
  | "invalid_token";

export class OAuthError extends Error {
  constructor(readonly code: OAuthErrorCode, readonly description: string, readonly status = 400) {
    super(`${code}: ${description}`);
  }
}

export const SCOPES = ["memory", "offline_access"] as const;
export const DEFAULT_SCOPE = "memory offline_access";

export interface OAuthSettings {
  /** MCP_OAUTH_DELEGATE_ENCRYPTION_KEY: 32 bytes. */
  readonly key: Uint8Array;
  readonly accessTtlSecs: number;
  readonly refreshTtlSecs: number;
  readonly codeTtlSecs: number;
  readonly sessionTtlSecs: number;
  /** Hosts a registered redirect URI may use beside loopback (RFC 8252). */
  readonly allowedRegistrationHosts: readonly string[];
  readonly registrationPerHourPerIp: number;
  readonly registrationTrustedCidrs: readonly string[];
  /** Where the consent page is; default derived from the issuer (spec). */
  readonly consentUrl?: string;
  /** The relayer's public URL (MEMORY_RELAYER_URL); default the address it listens on. */
  readonly issuer?: string;
}

/** Parses MCP_OAUTH_DELEGATE_ENCRYPTION_KEY: 32 bytes, base64url without padding; anything else is an error. */
export function parseOperatorKey(raw: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]{43}$/.test(raw)) throw new Error("MCP_OAUTH_DELEGATE_ENCRYPTION_KEY must be 32 bytes, base64url without padding (43 characters)");
  return new Uint8Array(Buffer.from(raw, "base64url"));
}

/** Consent URL per the spec: the issuer with its first host label dropped when that is `relayer`, + /connect/claude. */
export function consentUrlFor(issuer: string): string {
  const u = new URL(issuer);
  const labels = u.hostname.split(".");
  if (labels.length > 2 && labels[0] === "relayer") u.hostname = labels.slice(1).join(".");
  return new URL("/connect/claude", u.origin).toString();
}

const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"]);

/** RFC 8252 and the allowlist: loopback http on any port, or https on an allowed host; no fragments. */
export function redirectAllowed(uri: string, allowedHosts: readonly string[]): boolean {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return false;
  }
  if (u.hash || u.username || u.password) return false;
  if (LOOPBACK.has(u.hostname)) return u.protocol === "http:" || u.protocol === "https:";
  return u.protocol === "https:" && allowedHosts.includes(u.hostname.toLowerCase());
}
