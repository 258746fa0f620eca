// OAuth 2.1 for the agent transports (spec/relayer.md, OAuth routes; present only with
// MCP_OAUTH_DELEGATE_ENCRYPTION_KEY): metadata (RFC 9728, RFC 8414), dynamic registration (RFC 7591), authorization
// code with PKCE S256 and a consent page, tokens with refresh rotation and reuse detection, revocation (RFC 7009).
// On authorize a delegate key is made here and sealed in the vault; the user's wallet adds its public key to the
// account on the consent page; an access token on /api/mcp then stands for that key (resolveAccessToken).
import { randomBytes, randomUUID } from "node:crypto";
import type { Logger } from "../../config/logger.ts";
import type { ChainPort } from "../../adapters/ports.ts";
import { delegateKeypair } from "../../adapters/encryption/session.ts";
import type { DelegateVault } from "../../adapters/oauth/delegate-vault.ts";
import { OAuthStore } from "../../actors/relayer/oauth-store.ts";
import { GrantRevokedByReuse, accessValid, approveConsent, exchangeCode, refreshTokens, revokeGrant, sha256Hex } from "../../actors/relayer/oauth-decisions.ts";
import { DEFAULT_SCOPE, OAUTH_EVENTS, OAuthError, SCOPES, TOKEN_PREFIX, consentUrlFor, redirectAllowed, type GrantState, type OAuthSettings } from "../../schemas/relayer/oauth.ts";
import { decodePathParam, json, type Handler, type HttpServer, type Reply, type Request } from "../http.ts";
import { clientIp, ipBucket, type PgRateLimiter } from "../rate-limit.ts";
import { findUnsafeQuery, findUnsafeText } from "../../schemas/text.ts";
import { ipInCidrs } from "./cidr.ts";

export interface OAuthDeps {
  readonly settings: OAuthSettings;
  readonly store: OAuthStore;
  readonly vault: DelegateVault;
  readonly chain: ChainPort;
  readonly limiter: PgRateLimiter;
  readonly logger: Logger;
  /** The relayer's public URL (MEMORY_RELAYER_URL, else where it listens). */
  readonly issuer: () => string;
  readonly trustedProxyHops: number;
  readonly wrap: (name: string, h: Handler) => Handler;
}

const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" };
const oauthError = (e: OAuthError): Reply => json(e.status, { error: e.code, error_description: e.description }, NO_STORE);
const redirect = (to: string): Reply => ({ status: 302, headers: { location: to, ...NO_STORE }, body: "" });

/** A token of the given kind: `<prefix>.<grant id>.<secret>` → its grant and the hash of the whole token. */
function parseToken(token: string, prefix: string): { grantId: string; hash: string } | undefined {
  const m = /^([a-z]{3})\.([0-9a-f-]{36})\.([A-Za-z0-9_-]{43})$/.exec(token);
  return m && m[1] === prefix ? { grantId: m[2], hash: sha256Hex(token) } : undefined;
}
const mint = (prefix: string, grantId: string) => `${prefix}.${grantId}.${randomBytes(32).toString("base64url")}`;

/**
 * application/x-www-form-urlencoded or JSON (the spec accepts both on /oauth/token): every parameter a string that can
 * be stored, else invalid_request naming it.
 */
function formOf(req: Request): Record<string, string> {
  const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
  const raw = req.body.toString("utf8");
  let entries: [string, unknown][];
  if (type === "application/json") {
    let v: unknown;
    try {
      v = JSON.parse(raw);
    } catch {
      throw new OAuthError("invalid_request", "malformed JSON body");
    }
    if (!v || typeof v !== "object" || Array.isArray(v)) throw new OAuthError("invalid_request", "the body must be a JSON object");
    entries = Object.entries(v);
  } else if (type === "application/x-www-form-urlencoded" || type === "") {
    entries = [...new URLSearchParams(raw)];
  } else {
    throw new OAuthError("invalid_request", "send application/x-www-form-urlencoded or application/json");
  }
  const out: Record<string, string> = {};
  for (const [k, value] of entries) {
    const unsafe = findUnsafeText(k, "parameter name") ?? findUnsafeText(value, k);
    if (unsafe) throw new OAuthError("invalid_request", unsafe);
    if (typeof value !== "string") throw new OAuthError("invalid_request", `${k} must be a string`);
    out[k] = value;
  }
  return out;
}

const CLIENT_NAME_MAX = 100;
const REDIRECT_URI_MAX = 2_000;

/** RFC 6750's token syntax: anything else is a malformed request, not merely an invalid token. */
const TOKEN_SYNTAX = /^[A-Za-z0-9\-._~+/]+=*$/;

export function registerOAuthRoutes(server: HttpServer, d: OAuthDeps): { resolveAccessToken: (token: string) => Promise<{ delegateKeyHex: string; accountId: string } | undefined>; resourceMetadataUrl: () => string } {
  const s = d.settings;
  const consentUrl = () => s.consentUrl ?? consentUrlFor(d.issuer());
  const resource = () => `${d.issuer()}/api/mcp`;
  const resourceMetadataUrl = () => `${d.issuer()}/.well-known/oauth-protected-resource/api/mcp`;
  const guarded = (name: string, h: (req: Request) => Promise<Reply>) =>
    d.wrap(name, async (req) => {
      try {
        return await h(req);
      } catch (err) {
        if (err instanceof OAuthError) return oauthError(err);
        throw err;
      }
    });
  const tokens = async (g: GrantState, type: "exchange" | "refresh", decide: (t: { accessHash: string; refreshHash: string; now: number; accessTtlSecs: number; refreshTtlSecs: number }) => GrantState) => {
    const access = mint(TOKEN_PREFIX.access, g.grant_id);
    const refresh = mint(TOKEN_PREFIX.refresh, g.grant_id);
    const t = { accessHash: sha256Hex(access), refreshHash: sha256Hex(refresh), now: Date.now(), accessTtlSecs: s.accessTtlSecs, refreshTtlSecs: s.refreshTtlSecs };
    try {
      await d.store.decide(g.grant_id, OAUTH_EVENTS.tokensIssued, () => decide(t));
    } catch (err) {
      if (err instanceof GrantRevokedByReuse) {
        await d.store.decide(g.grant_id, OAUTH_EVENTS.grantRevoked, () => err.revoked).catch(() => undefined);
        d.logger.warn("oauth grant revoked after token reuse", { grant: g.grant_id, kind: type });
      }
      throw err;
    }
    return json(200, { access_token: access, token_type: "Bearer", expires_in: s.accessTtlSecs, refresh_token: refresh, scope: g.scope }, NO_STORE);
  };

  const metadataResource = () => json(200, { resource: resource(), authorization_servers: [d.issuer()], scopes_supported: SCOPES, bearer_methods_supported: ["header"], resource_name: "memrelay agent tools" });
  server
    .route("get", "/.well-known/oauth-protected-resource", d.wrap("oauth_resource_metadata", async () => metadataResource()))
    .route("get", "/.well-known/oauth-protected-resource/api/mcp", d.wrap("oauth_resource_metadata", async () => metadataResource()))
    .route("get", "/.well-known/oauth-authorization-server", d.wrap("oauth_server_metadata", async () => {
      const i = d.issuer();
      return json(200, {
        issuer: i,
        authorization_endpoint: `${i}/oauth/authorize`,
        token_endpoint: `${i}/oauth/token`,
        registration_endpoint: `${i}/oauth/register`,
        revocation_endpoint: `${i}/oauth/revoke`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
        revocation_endpoint_auth_methods_supported: ["none"],
        scopes_supported: SCOPES,
      });
    }))
    // ---------------------------------------------------------------- RFC 7591
    .route("post", "/oauth/register", guarded("oauth_register", async (req) => {
      const ip = clientIp(req, d.trustedProxyHops);
      if (s.registrationPerHourPerIp > 0 && !ipInCidrs(ip, s.registrationTrustedCidrs)) {
        await d.limiter.enforce([{ layer: "oauth_register_ip_hour", key: `oauth:register:${ipBucket(ip)}`, limit: s.registrationPerHourPerIp, windowMs: 3_600_000 }]);
      }
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(req.body.toString("utf8")) as Record<string, unknown>;
      } catch {
        throw new OAuthError("invalid_client_metadata", "the body must be a JSON object");
      }
      if (!body || typeof body !== "object" || Array.isArray(body)) throw new OAuthError("invalid_client_metadata", "the body must be a JSON object");
      const unsafe = findUnsafeText(body);
      if (unsafe) throw new OAuthError("invalid_client_metadata", unsafe);
      if (body.client_name !== undefined && (typeof body.client_name !== "string" || !body.client_name.trim() || body.client_name.length > CLIENT_NAME_MAX)) {
        throw new OAuthError("invalid_client_metadata", `client_name must be a non-empty string of at most ${CLIENT_NAME_MAX} characters`);
      }
      const uris = body.redirect_uris;
      if (!Array.isArray(uris) || !uris.length || uris.length > 10 || !uris.every((u) => typeof u === "string" && u.length <= REDIRECT_URI_MAX)) {
        throw new OAuthError("invalid_redirect_uri", `redirect_uris must be 1 to 10 URIs of at most ${REDIRECT_URI_MAX} characters`);
      }
      const refused = (uris as string[]).find((u) => !redirectAllowed(u, s.allowedRegistrationHosts));
      if (refused) throw new OAuthError("invalid_redirect_uri", `redirect URI not allowed: ${refused.slice(0, 200)} (loopback, or https on ${s.allowedRegistrationHosts.join(", ") || "no other host"})`);
      const method = body.token_endpoint_auth_method ?? "none";
      if (method !== "none") throw new OAuthError("invalid_client_metadata", "token_endpoint_auth_method must be none (public clients with PKCE)");
      const name = typeof body.client_name === "string" ? body.client_name : "MCP client";
      const client = { client_id: randomUUID(), client_name: name, redirect_uris: uris as string[], created_at: new Date().toISOString() };
      await d.store.registerClient(client);
      return json(201, {
        client_id: client.client_id,
        client_id_issued_at: Math.floor(Date.now() / 1000),
        client_name: name,
        redirect_uris: client.redirect_uris,
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
      }, NO_STORE);
    }))
    // ---------------------------------------------------------------- authorization
    .route("get", "/oauth/authorize", guarded("oauth_authorize", async (req) => {
      const q = new URLSearchParams(req.query);
      const unsafe = findUnsafeQuery(q);
      if (unsafe) throw new OAuthError("invalid_request", unsafe);
      const clientId = q.get("client_id") ?? "";
      const redirectUri = q.get("redirect_uri") ?? "";
      // Until client and redirect URI are known good, errors are answered here, never redirected (no open redirect).
      const client = /^[0-9a-f-]{36}$/.test(clientId) ? await d.store.client(clientId) : undefined;
      if (!client) throw new OAuthError("invalid_request", "unknown client_id");
      if (!client.redirect_uris.includes(redirectUri)) throw new OAuthError("invalid_request", "redirect_uri is not one the client registered");
      const back = (params: Record<string, string>) => {
        const u = new URL(redirectUri);
        for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
        if (q.get("state")) u.searchParams.set("state", q.get("state")!);
        return redirect(u.toString());
      };
      if (q.get("response_type") !== "code") return back({ error: "unsupported_response_type", error_description: "response_type must be code" });
      const challenge = q.get("code_challenge") ?? "";
      if (!challenge) return back({ error: "invalid_request", error_description: "PKCE is required: send code_challenge with code_challenge_method S256" });
      if (q.get("code_challenge_method") !== "S256") return back({ error: "invalid_request", error_description: "code_challenge_method must be S256 (plain is not accepted)" });
      if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) return back({ error: "invalid_request", error_description: "code_challenge must be a base64url SHA-256 (43 characters)" });
      const scope = q.get("scope") ?? DEFAULT_SCOPE;
      if (!scope.split(" ").every((x) => (SCOPES as readonly string[]).includes(x))) return back({ error: "invalid_scope", error_description: `scopes: ${SCOPES.join(", ")}` });
      const resourceParam = q.get("resource");
      if (resourceParam && resourceParam.replace(/\/+$/, "") !== resource()) return back({ error: "invalid_target", error_description: `resource must be ${resource()}` });
      const grantId = randomUUID();
      const secret = new Uint8Array(randomBytes(32));
      await d.vault.put(grantId, secret);
      const state: GrantState = {
        grant_id: grantId,
        client_id: clientId,
        redirect_uri: redirectUri,
        code_challenge: challenge,
        scope,
        ...(q.get("state") ? { client_state: q.get("state")! } : {}),
        key_id: d.vault.keyId,
        delegate_public_key: Buffer.from(delegateKeypair(secret).getPublicKey().toRawBytes()).toString("hex"),
        status: "pending",
        session_expires_at: Date.now() + s.sessionTtlSecs * 1000,
        spent_refresh_hashes: [],
      };
      await d.store.save(OAUTH_EVENTS.authorizationRequested, state, 0);
      const consent = new URL(consentUrl());
      consent.searchParams.set("grant", grantId);
      return redirect(consent.toString());
    }))
    // ---------------------------------------------------------------- consent (called by the dashboard's page)
    .route("get", "/oauth/consent/:grant", guarded("oauth_consent_info", async (req) => {
      const id = decodePathParam(req.params[0]) ?? "";
      const g = /^[0-9a-f-]{36}$/.test(id) ? await d.store.grant(id) : undefined;
      if (!g || g.state.status !== "pending" || Date.now() > g.state.session_expires_at) throw new OAuthError("invalid_request", "unknown or expired authorization", 404);
      const client = await d.store.client(g.state.client_id);
      return json(200, { grant_id: g.state.grant_id, client_name: client?.client_name ?? "MCP client", redirect_host: new URL(g.state.redirect_uri).host, delegate_public_key: g.state.delegate_public_key, scope: g.state.scope, expires_at: new Date(g.state.session_expires_at).toISOString() }, NO_STORE);
    }))
    .route("post", "/oauth/consent", guarded("oauth_consent", async (req) => {
      const f = formOf(req);
      const g = /^[0-9a-f-]{36}$/.test(f.grant_id ?? "") ? await d.store.grant(f.grant_id) : undefined;
      if (!g) throw new OAuthError("invalid_request", "unknown authorization", 404);
      const back = new URL(g.state.redirect_uri);
      if (g.state.client_state) back.searchParams.set("state", g.state.client_state);
      if (f.decision === "deny") {
        await d.store.decide(g.state.grant_id, OAUTH_EVENTS.grantRevoked, (x) => revokeGrant(x, "denied by the user"));
        back.searchParams.set("error", "access_denied");
        return json(200, { redirect: back.toString() }, NO_STORE);
      }
      // Approval means the account's wallet has put this grant's key on the account: nothing else can make that true.
      const accountId = f.account_id ?? "";
      const onAccount = /^0x[0-9a-fA-F]{64}$/.test(accountId) ? await d.chain.resolveDelegate(g.state.delegate_public_key, accountId.toLowerCase()) : null;
      if (!onAccount) throw new OAuthError("access_denied", "the key of this authorization is not on that account: approve it with the account's wallet first", 403);
      const code = mint(TOKEN_PREFIX.code, g.state.grant_id);
      await d.store.decide(g.state.grant_id, OAUTH_EVENTS.consentApproved, (x) => approveConsent(x, accountId.toLowerCase(), sha256Hex(code), Date.now(), s.codeTtlSecs));
      back.searchParams.set("code", code);
      return json(200, { redirect: back.toString() }, NO_STORE);
    }))
    // ---------------------------------------------------------------- tokens
    .route("post", "/oauth/token", guarded("oauth_token", async (req) => {
      const f = formOf(req);
      const client = /^[0-9a-f-]{36}$/.test(f.client_id ?? "") ? await d.store.client(f.client_id) : undefined;
      if (!client) throw new OAuthError("invalid_client", "unknown client_id", 401);
      if (f.grant_type === "authorization_code") {
        const code = parseToken(f.code ?? "", TOKEN_PREFIX.code);
        const g = code && (await d.store.grant(code.grantId));
        if (!code || !g) throw new OAuthError("invalid_grant", "unknown code");
        if (!f.code_verifier) throw new OAuthError("invalid_request", "code_verifier is required (PKCE)");
        return tokens(g.state, "exchange", (t) => exchangeCode(g.state, { codeHash: code.hash, clientId: client.client_id, redirectUri: f.redirect_uri ?? "", verifier: f.code_verifier }, t));
      }
      if (f.grant_type === "refresh_token") {
        const rt = parseToken(f.refresh_token ?? "", TOKEN_PREFIX.refresh);
        const g = rt && (await d.store.grant(rt.grantId));
        if (!rt || !g) throw new OAuthError("invalid_grant", "unknown refresh token");
        if (g.state.key_id !== d.vault.keyId) throw new OAuthError("invalid_grant", "the grant was made under another operator key");
        return tokens(g.state, "refresh", (t) => refreshTokens(g.state, { refreshHash: rt.hash, clientId: client.client_id }, t));
      }
      throw new OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token");
    }))
    .route("post", "/oauth/revoke", guarded("oauth_revoke", async (req) => {
      const f = formOf(req);
      if (!f.token || !TOKEN_SYNTAX.test(f.token)) throw new OAuthError("invalid_request", "token is required");
      const t = parseToken(f.token, TOKEN_PREFIX.access) ?? parseToken(f.token, TOKEN_PREFIX.refresh);
      const g = t && (await d.store.grant(t.grantId));
      // RFC 7009: an unknown or already revoked token answers 200 as well.
      if (t && g && (g.state.access_hash === t.hash || g.state.refresh_hash === t.hash)) {
        await d.store.decide(g.state.grant_id, OAUTH_EVENTS.grantRevoked, (x) => revokeGrant(x, "revoked by the client"));
      }
      return json(200, {}, NO_STORE);
    }));

  return {
    resourceMetadataUrl,
    resolveAccessToken: async (token) => {
      const t = parseToken(token, TOKEN_PREFIX.access);
      const g = t && (await d.store.grant(t.grantId));
      if (!t || !g || !accessValid(g.state, t.hash, d.vault.keyId, Date.now())) return undefined;
      const secret = await d.vault.get(g.state.grant_id);
      return secret ? { delegateKeyHex: Buffer.from(secret).toString("hex"), accountId: g.state.account_id! } : undefined;
    },
  };
}
