// Black-box: OAuth 2.1 on the agent transports. The MCP SDK client's own OAuth flow (its auth provider: discovery,
// dynamic registration, PKCE, the authorization redirect, token exchange) against the relayer, with the consent page
// driven in headless Chromium; then every RFC error case on raw HTTP, each answering the RFC's error code.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { createHash, randomBytes } from "node:crypto";
import { chromium, type Browser } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { UnauthorizedError, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { freePort } from "./support/free-port.ts";
import { startDashboard, type Dashboard } from "../dashboard/server.ts";
import { localDevelopmentWallet } from "../dashboard/development-wallet.ts";
import { silentLogger } from "../config/logger.ts";
import { addDelegateKey, removeDelegateKey } from "../adapters/chain/local/accounts.ts";
import type { DevIdentity } from "../runtime/local-stack.ts";
import { TOOL } from "../schemas/mcp-tools.ts";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { createAccount, mint } from "../adapters/chain/local/accounts.ts";
import { GAS_FEE_MIST } from "../adapters/chain/sui/transaction-envelope.ts";
import { injectSuiWallet } from "./support/browser-wallet.ts";


let t: TestStack;
let dashboard: Dashboard;
let browser: Browser;
let owner: DevIdentity;
let callback: Server;
let callbackUrl: string;
const CODE_TTL = 3;
const REGISTRATIONS_PER_HOUR = 3;

beforeAll(async () => {
  const dashPort = await freePort();
  t = await startTestStack({
    MCP_OAUTH_DELEGATE_ENCRYPTION_KEY: randomBytes(32).toString("base64url"),
    MCP_OAUTH_CONSENT_URL: `http://127.0.0.1:${dashPort}/connect/claude`,
    MCP_OAUTH_CODE_TTL_SECS: String(CODE_TTL),
    MCP_OAUTH_ALLOWED_REGISTRATION_HOSTS: "agents.example",
    MCP_OAUTH_REGISTRATION_PER_HOUR_PER_IP: String(REGISTRATIONS_PER_HOUR),
    MCP_OAUTH_REGISTRATION_TRUSTED_CIDRS: "127.0.0.0/8,198.51.100.0/24",
    TRUSTED_PROXY_HOPS: "1",
  });
  owner = await t.stack.createIdentity("memrelay-dev");
  const c = await t.client(owner);
  const { job_id } = await c.remember("My favourite colour is teal");
  expect((await c.waitForJob(job_id)).status).toBe("done");
  dashboard = await startDashboard({ chain: t.stack.chain, developmentWallet: localDevelopmentWallet(t.stack.chain, owner.ownerSecretKey, owner.accountId), packageId: t.stack.encryptionStack.packageId, host: "127.0.0.1", port: dashPort, relayerUrl: t.stack.relayerUrl, logger: silentLogger });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", headless: true, args: ["--no-sandbox"] });
  callback = createServer((_req, res) => res.end("you can close this tab")).listen(0, "127.0.0.1");
  await new Promise((r) => callback.once("listening", r));
  callbackUrl = `http://127.0.0.1:${(callback.address() as { port: number }).port}/callback`;
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await dashboard?.close();
  callback?.close();
  await t?.teardown();
});

class HostProvider implements OAuthClientProvider {
  authorizationUrl?: URL;
  private info?: OAuthClientInformationMixed;
  private saved?: OAuthTokens;
  private verifier = "";
  get redirectUrl() {
    return callbackUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: "Test platform", redirect_uris: [callbackUrl], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none", scope: "memory offline_access" };
  }
  clientInformation() { return this.info; }
  saveClientInformation(i: OAuthClientInformationMixed) { this.info = i; }
  tokens() { return this.saved; }
  saveTokens(tk: OAuthTokens) { this.saved = tk; }
  redirectToAuthorization(url: URL) { this.authorizationUrl = url; }
  saveCodeVerifier(v: string) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
}

const textOf = (r: unknown) => ((r as { content: { text: string }[] }).content ?? []).map((c) => c.text).join("\n");
const mcpUrl = () => new URL("/api/mcp", t.stack.relayerUrl);

async function form(path: string, body: Record<string, string>, json = false) {
  const res = await fetch(new URL(path, t.stack.relayerUrl), {
    method: "POST",
    headers: { "content-type": json ? "application/json" : "application/x-www-form-urlencoded" },
    body: json ? JSON.stringify(body) : new URLSearchParams(body).toString(),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, any> };
}

async function register(redirect = callbackUrl, from?: string) {
  const res = await fetch(new URL("/oauth/register", t.stack.relayerUrl), {
    method: "POST",
    headers: { "content-type": "application/json", ...(from ? { "x-forwarded-for": from } : {}) },
    body: JSON.stringify({ client_name: "raw", redirect_uris: [redirect], token_endpoint_auth_method: "none" }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json().catch(() => ({}))) as Record<string, any> };
}

/** Authorize → (the wallet adds the key, as the consent page does) → consent → the code, without a browser. */
async function codeFor(clientId: string, verifier: string) {
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const q = new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: callbackUrl, code_challenge: challenge, code_challenge_method: "S256", state: "s1" });
  const res = await fetch(new URL(`/oauth/authorize?${q}`, t.stack.relayerUrl), { redirect: "manual" });
  expect(res.status).toBe(302);
  const grant = new URL(res.headers.get("location")!).searchParams.get("grant")!;
  const info = (await (await fetch(new URL(`/oauth/consent/${grant}`, t.stack.relayerUrl))).json()) as { delegate_public_key: string };
  await addDelegateKey(t.stack.chain, { ownerKey: owner.ownerSecretKey, publicKey: info.delegate_public_key, label: "raw", accountId: owner.accountId });
  const done = await form("/oauth/consent", { grant_id: grant, account_id: owner.accountId, decision: "approve" }, true);
  expect(done.status).toBe(200);
  const back = new URL(done.body.redirect);
  expect(back.searchParams.get("state")).toBe("s1");
  return { code: back.searchParams.get("code")!, grant, publicKey: info.delegate_public_key };
}

describe("OAuth 2.1 on the agent transports", () => {
  it("a browser wallet (Sui wallet standard) approves the consent for its own account, the gas sponsored; the platform's token acts for it", async () => {
    const wallet = Ed25519Keypair.generate();
    await mint(t.stack.chain, { operatorKey: t.stack.operatorSecretKey, to: wallet.toSuiAddress(), amount: GAS_FEE_MIST });
    const account = await createAccount(t.stack.chain, { ownerKey: wallet.getSecretKey() });
    const client = (await register()).body;
    const verifier = randomBytes(32).toString("base64url");
    const q = new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: callbackUrl, code_challenge: createHash("sha256").update(verifier).digest("base64url"), code_challenge_method: "S256", state: "w1" });
    const page = await browser.newPage();
    try {
      const signed = await injectSuiWallet(page, wallet);
      await page.goto(new URL(`/oauth/authorize?${q}`, t.stack.relayerUrl).toString());
      await expect.poll(() => page.locator("#client").textContent()).toBe("raw");
      await page.click("button:has-text('Approve with Test Wallet')");
      await page.waitForURL((u) => u.toString().startsWith(callbackUrl), { timeout: 15_000 });
      expect(signed).toEqual(["memrelay sponsor request", "add_delegate_key"]);
      const back = new URL(page.url());
      expect(back.searchParams.get("state")).toBe("w1");
      const tokens = await form("/oauth/token", { grant_type: "authorization_code", code: back.searchParams.get("code")!, redirect_uri: callbackUrl, client_id: client.client_id, code_verifier: verifier });
      expect(tokens.status).toBe(200);
      expect((await t.stack.chain.getAccount(account.id))!.delegate_keys.map((k) => k.label)).toEqual(["OAuth · raw"]);
      expect((await t.stack.chain.balance(wallet.toSuiAddress())).balances.SUI).toBe(0n);
      const mcp = new Client({ name: "platform", version: "1" });
      await mcp.connect(new StreamableHTTPClientTransport(mcpUrl(), { requestInit: { headers: { authorization: `Bearer ${tokens.body.access_token}` } } }));
      try {
        const health = await mcp.callTool({ name: TOOL.health, arguments: {} });
        expect(health.isError, textOf(health)).toBeFalsy();
      } finally {
        await mcp.close();
      }
    } finally {
      await page.close();
    }
  }, 60_000);

  it("the MCP SDK client signs in through discovery, registration, PKCE and the consent page, then calls tools", async () => {
    const provider = new HostProvider();
    const first = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider });
    await expect(new Client({ name: "platform", version: "1" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.authorizationUrl?.pathname).toBe("/oauth/authorize");
    expect(provider.authorizationUrl?.searchParams.get("code_challenge_method")).toBe("S256");

    const page = await browser.newPage();
    await page.goto(provider.authorizationUrl!.toString());
    await expect.poll(() => page.locator("#client").textContent()).toBe("Test platform");
    await page.click("#approve");
    await page.waitForURL((u) => u.toString().startsWith(callbackUrl), { timeout: 15_000 });
    const code = new URL(page.url()).searchParams.get("code")!;
    expect(code).toMatch(/^mrc\./);
    await first.finishAuth(code);
    expect(provider.tokens()?.access_token).toMatch(/^mra\./);

    const client = new Client({ name: "platform", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }));
    try {
      expect(textOf(await client.callTool({ name: TOOL.recall, arguments: { query: "which colour do I like?" } }))).toContain("teal");
    } finally {
      await client.close();
    }

    // Revoking the delegate on the dashboard ends the platform's access.
    await page.goto(`${dashboard.url}/keys`);
    await page.locator("tr", { hasText: "OAuth · Test platform" }).locator("button").click();
    await expect.poll(() => page.locator("#status").textContent()).toMatch(/^Revoked/);
    const after = new Client({ name: "platform", version: "1" });
    await expect(after.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }))).rejects.toThrow(/401|refused|Unauthorized/i);
  }, 90_000);

  it("serves the metadata: protected resource (both paths) and authorization server with S256 only and offline_access", async () => {
    for (const path of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/api/mcp"]) {
      const r = await (await fetch(new URL(path, t.stack.relayerUrl))).json();
      expect(r).toMatchObject({ resource: `${t.stack.relayerUrl}/api/mcp`, authorization_servers: [t.stack.relayerUrl] });
    }
    const as = (await (await fetch(new URL("/.well-known/oauth-authorization-server", t.stack.relayerUrl))).json()) as Record<string, string[]>;
    expect(as).toMatchObject({ issuer: t.stack.relayerUrl, code_challenge_methods_supported: ["S256"], token_endpoint: `${t.stack.relayerUrl}/oauth/token` });
    expect(as.scopes_supported).toContain("offline_access");
    const unauth = await fetch(mcpUrl(), { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(unauth.status).toBe(401);
    expect(unauth.headers.get("www-authenticate")).toContain(`resource_metadata="${t.stack.relayerUrl}/.well-known/oauth-protected-resource/api/mcp"`);
  });

  it("every 401 on /api/mcp carries resource_metadata, so a client can start discovery again (invalid bearers included)", async () => {
    const metadata = `resource_metadata="${t.stack.relayerUrl}/.well-known/oauth-protected-resource/api/mcp"`;
    const initialize = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
    const bearers = [
      "mra.not-a-token", // an access token the relayer never issued
      "f".repeat(64), // a delegate key of no account
      "not-even-hex",
    ];
    for (const bearer of bearers) {
      const r = await fetch(mcpUrl(), { method: "POST", headers: { authorization: `Bearer ${bearer}`, "x-memory-account-id": owner.accountId, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: initialize });
      await r.text();
      expect(r.status, bearer).toBe(401);
      expect(r.headers.get("www-authenticate"), bearer).toContain('error="invalid_token"');
      expect(r.headers.get("www-authenticate"), bearer).toContain(metadata);
    }
  });

  it("refuses redirect URIs off the allowlist at registration and unregistered ones at authorize, without redirecting", async () => {
    expect((await register("https://evil.example/cb")).body.error).toBe("invalid_redirect_uri");
    expect((await register("http://evil.example/cb")).body.error).toBe("invalid_redirect_uri");
    expect((await register("https://agents.example/cb")).status).toBe(201);
    const { body } = await register();
    const q = new URLSearchParams({ response_type: "code", client_id: body.client_id, redirect_uri: "https://agents.example/other", code_challenge: "x".repeat(43), code_challenge_method: "S256" });
    const res = await fetch(new URL(`/oauth/authorize?${q}`, t.stack.relayerUrl), { redirect: "manual" });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(((await res.json()) as { error: string }).error).toBe("invalid_request");
  });

  it("limits registrations per client address per hour, except from trusted networks", async () => {
    for (let i = 0; i < REGISTRATIONS_PER_HOUR; i++) expect((await register(callbackUrl, "203.0.113.5")).status).toBe(201);
    const refused = await register(callbackUrl, "203.0.113.5");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBeTruthy();
    expect((await register(callbackUrl, "203.0.113.6")).status).toBe(201);
    for (let i = 0; i <= REGISTRATIONS_PER_HOUR; i++) expect((await register(callbackUrl, "198.51.100.7")).status).toBe(201);
  });

  it("refuses what cannot be stored or is malformed before it reaches an event (found by the edge fuzzer)", async () => {
    const reg = (body: unknown) => fetch(new URL("/oauth/register", t.stack.relayerUrl), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    for (const client_name of ["a\u0000b", 12345, { a: 1 }, "x".repeat(101)]) {
      const r = await reg({ client_name, redirect_uris: [callbackUrl] });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: string }).error).toBe("invalid_client_metadata");
    }
    for (const body of [{}, { token: 12345 }, { token: "   " }, { token: "a\u0000" }]) {
      const r = await form("/oauth/revoke", body as never, true);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe("invalid_request");
    }
    const { body: client } = await register();
    const q = new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: callbackUrl, code_challenge: "x".repeat(43), code_challenge_method: "S256", state: "s\u0000" });
    const res = await fetch(new URL(`/oauth/authorize?${q}`, t.stack.relayerUrl), { redirect: "manual" });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
  });

  it("requires PKCE S256: a missing or plain challenge is sent back as invalid_request", async () => {
    const { body } = await register();
    for (const extra of [{}, { code_challenge: "abc", code_challenge_method: "plain" }] as Record<string, string>[]) {
      const q = new URLSearchParams({ response_type: "code", client_id: body.client_id, redirect_uri: callbackUrl, state: "st", ...extra });
      const res = await fetch(new URL(`/oauth/authorize?${q}`, t.stack.relayerUrl), { redirect: "manual" });
      expect(res.status).toBe(302);
      const back = new URL(res.headers.get("location")!);
      expect(back.searchParams.get("error")).toBe("invalid_request");
      expect(back.searchParams.get("state")).toBe("st");
    }
  });

  it("codes are single-use (reuse revokes what they issued), expire, belong to one client and need the verifier", async () => {
    const { body: a } = await register();
    const { body: b } = await register();
    const verifier = randomBytes(32).toString("base64url");
    const { code } = await codeFor(a.client_id, verifier);
    const exchange = (clientId: string, v = verifier) => form("/oauth/token", { grant_type: "authorization_code", code, redirect_uri: callbackUrl, client_id: clientId, code_verifier: v });
    expect((await exchange(b.client_id)).body.error).toBe("invalid_grant"); // wrong client
    expect((await exchange(a.client_id, "w".repeat(43))).body.error).toBe("invalid_grant"); // wrong verifier
    const ok = await exchange(a.client_id);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ token_type: "Bearer", expires_in: 3600 });
    const reuse = await exchange(a.client_id);
    expect(reuse.body.error).toBe("invalid_grant");
    // the tokens the code issued are revoked
    const refused = await fetch(mcpUrl(), { method: "POST", headers: { authorization: `Bearer ${ok.body.access_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: "{}" });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');

    const late = await codeFor(a.client_id, verifier);
    await new Promise((r) => setTimeout(r, CODE_TTL * 1000 + 500));
    const expired = await form("/oauth/token", { grant_type: "authorization_code", code: late.code, redirect_uri: callbackUrl, client_id: a.client_id, code_verifier: verifier }, true);
    expect(expired.body).toMatchObject({ error: "invalid_grant", error_description: expect.stringMatching(/expired/) });
  }, 30_000);

  it("a legacy SSE session opened with an access token takes its messages without a credential, as the MCP SSE transport sends them", async () => {
    const { body: client } = await register();
    const verifier = randomBytes(32).toString("base64url");
    const { code, publicKey } = await codeFor(client.client_id, verifier);
    const tokens = (await form("/oauth/token", { grant_type: "authorization_code", code, redirect_uri: callbackUrl, client_id: client.client_id, code_verifier: verifier })).body;
    const headers = { authorization: `Bearer ${tokens.access_token}` };
    const mcp = new Client({ name: "platform", version: "1" });
    await mcp.connect(new SSEClientTransport(new URL("/api/mcp/sse", t.stack.relayerUrl), {
      eventSourceInit: { fetch: (u, init) => fetch(u, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }) },
    }));
    try {
      const health = await mcp.callTool({ name: TOOL.health, arguments: {} });
      expect(health.isError, textOf(health)).toBeFalsy();
    } finally {
      await mcp.close();
      await removeDelegateKey(t.stack.chain, { ownerKey: owner.ownerSecretKey, publicKey, accountId: owner.accountId });
    }
    // a message naming no session is not a way around the challenge: there is nothing to use
    const stray = await fetch(new URL("/api/mcp/messages?sessionId=00000000-0000-4000-8000-000000000000", t.stack.relayerUrl), { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(stray.status).toBe(404);
  }, 30_000);

  it("rotates refresh tokens; a reused one revokes the whole grant; revoke (RFC 7009) ends a token on /api/mcp", async () => {
    const { body: client } = await register();
    const verifier = randomBytes(32).toString("base64url");
    const { code } = await codeFor(client.client_id, verifier);
    const first = (await form("/oauth/token", { grant_type: "authorization_code", code, redirect_uri: callbackUrl, client_id: client.client_id, code_verifier: verifier })).body;
    const second = await form("/oauth/token", { grant_type: "refresh_token", refresh_token: first.refresh_token, client_id: client.client_id }, true);
    expect(second.status).toBe(200);
    expect(second.body.refresh_token).not.toBe(first.refresh_token);
    expect((await form("/oauth/token", { grant_type: "refresh_token", refresh_token: first.refresh_token, client_id: client.client_id })).body.error).toBe("invalid_grant");
    // the family is revoked: the newest refresh token is refused too
    expect((await form("/oauth/token", { grant_type: "refresh_token", refresh_token: second.body.refresh_token, client_id: client.client_id })).body.error).toBe("invalid_grant");

    const again = await codeFor(client.client_id, verifier);
    const tokens = (await form("/oauth/token", { grant_type: "authorization_code", code: again.code, redirect_uri: callbackUrl, client_id: client.client_id, code_verifier: verifier })).body;
    const call = (token: string) => fetch(mcpUrl(), { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }) });
    expect((await call(tokens.access_token)).status).toBe(200);
    expect((await form("/oauth/revoke", { token: tokens.access_token })).status).toBe(200);
    expect((await call(tokens.access_token)).status).toBe(401);
    expect((await form("/oauth/revoke", { token: "mra.unknown" })).status).toBe(200);
    expect((await form("/oauth/token", { grant_type: "password", client_id: client.client_id })).body.error).toBe("unsupported_grant_type");
    expect((await form("/oauth/token", { grant_type: "authorization_code", client_id: "00000000-0000-4000-8000-000000000000" })).status).toBe(401);
    await removeDelegateKey(t.stack.chain, { ownerKey: owner.ownerSecretKey, publicKey: again.publicKey, accountId: owner.accountId });
  }, 30_000);
});
