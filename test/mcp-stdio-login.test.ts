// Black-box, as an agent host runs it: `memrelay-mcp` as a child process over stdio (the MCP SDK's stdio client),
// signed out at first; memory_login's URL opened in headless Chromium (Debian's package) on the dashboard, the key
// approved with the development wallet; then memory_recall works without restarting the package; the key revoked
// on the dashboard's keys page, and the next call is refused with 401 while the credential file stays. And the same
// sign-in with a browser wallet (Sui wallet standard) for its own account, the gas sponsored by the relayer. And the
// dashboard's /connect/mcp, the path MemWal's package opens (its whole flow: test/memwal-mcp-package.test.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, existsSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { request } from "undici";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { startDashboard, type Dashboard } from "../dashboard/server.ts";
import { localDevelopmentWallet } from "../dashboard/development-wallet.ts";
import { silentLogger } from "../config/logger.ts";
import type { DevIdentity } from "../runtime/local-stack.ts";
import { TOOL } from "../schemas/mcp-tools.ts";
import { gaslessWalletWithAccount, injectSuiWallet, revokeWithWallet } from "./support/browser-wallet.ts";

let t: TestStack;
let dashboard: Dashboard;
let browser: Browser;
let owner: DevIdentity;
let home: string;

beforeAll(async () => {
  t = await startTestStack();
  owner = await t.stack.createIdentity("memrelay-dev");
  const c = await t.client(owner);
  const { job_id } = await c.remember("I drink green tea every morning");
  expect((await c.waitForJob(job_id)).status).toBe("done");
  dashboard = await startDashboard({ chain: t.stack.chain, developmentWallet: localDevelopmentWallet(t.stack.chain, owner.ownerSecretKey, owner.accountId), packageId: t.stack.encryptionStack.packageId, host: "127.0.0.1", port: 0, logger: silentLogger, relayerUrl: t.stack.relayerUrl });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", headless: true, args: ["--no-sandbox"] });
  home = mkdtempSync(join(tmpdir(), "memrelay-mcp-home-"));
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await dashboard?.close();
  await t?.teardown();
  if (home) rmSync(home, { recursive: true, force: true });
});

const textOf = (r: unknown) => ((r as { content: { text: string }[] }).content ?? []).map((c) => c.text).join("\n");

describe("memrelay-mcp over stdio with sign-in through the dashboard", () => {
  it("signs in from memory_login through the connect page, recalls without a restart, and is refused after revoke", async () => {
    const credentials = join(home, ".memory", "credentials.json");
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["bin/memrelay-mcp.mjs", "--relayer", t.stack.relayerUrl, "--web-url", dashboard.url, "--label", "Test agent", "--namespace", "default"],
      env: { ...(process.env as Record<string, string>), HOME: home, MEMORY_CREDENTIALS_FILE: credentials },
      stderr: "pipe",
    });
    const client = new Client({ name: "host", version: "1.0.0" });
    await client.connect(transport);
    try {
      const tools = (await client.listTools()).tools.map((x) => x.name).sort();
      expect(tools).toEqual(Object.values(TOOL).sort());

      const signedOut = await client.callTool({ name: TOOL.recall, arguments: { query: "what do I drink?" } });
      expect(signedOut.isError).toBe(true);
      expect(textOf(signedOut)).toMatch(/Not signed in.*memory_login/s);

      const login = textOf(await client.callTool({ name: TOOL.login, arguments: {} }));
      const url = /https?:\/\/\S+/.exec(login)?.[0];
      expect(url).toMatch(new RegExp(`^${dashboard.url}/connect\\?port=\\d+&publicKey=[0-9a-f]{64}&state=[0-9a-f]{64}`));

      const page = await browser.newPage();
      await page.goto(url!);
      await expect.poll(() => page.locator("#label").textContent()).toBe("Test agent");
      await page.click("#approve");
      await expect.poll(() => page.locator("#status").textContent(), { timeout: 15_000 }).toMatch(/^Connected/);
      expect(statSync(credentials).mode & 0o777).toBe(0o600);

      // the same process, no restart: the new credential is used
      const recalled = await client.callTool({ name: TOOL.recall, arguments: { query: "what do I drink?" } });
      expect(recalled.isError).toBeFalsy();
      expect(textOf(recalled)).toContain("green tea");

      await page.goto(`${dashboard.url}/keys`);
      const row = page.locator("tr", { hasText: "Test agent" });
      await expect.poll(() => row.count()).toBe(1);
      await row.locator("button", { hasText: "Revoke" }).click();
      await expect.poll(() => page.locator("#status").textContent()).toMatch(/^Revoked Test agent/);
      await expect.poll(() => page.locator("tr", { hasText: "Test agent" }).count()).toBe(0);

      const refused = await client.callTool({ name: TOOL.recall, arguments: { query: "what do I drink?" } });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(/401/);
      expect(existsSync(credentials)).toBe(true); // a 401 never deletes the credential file
    } finally {
      await client.close();
    }
  }, 90_000);

  it("refuses a callback from another origin or with the wrong state, and a dashboard API call without the page's token", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["bin/memrelay-mcp.mjs", "--relayer", t.stack.relayerUrl, "--web-url", dashboard.url],
      env: { ...(process.env as Record<string, string>), HOME: home, MEMORY_CREDENTIALS_FILE: join(home, "other.json") },
      stderr: "pipe",
    });
    const client = new Client({ name: "host", version: "1.0.0" });
    await client.connect(transport);
    try {
      const url = new URL(/https?:\/\/\S+/.exec(textOf(await client.callTool({ name: TOOL.login, arguments: {} })))![0]);
      const callback = `http://127.0.0.1:${url.searchParams.get("port")}/callback`;
      const body = { state: url.searchParams.get("state"), accountId: owner.accountId, walletAddress: owner.owner, packageId: t.stack.encryptionStack.packageId };
      const foreign = await fetch(callback, { method: "POST", headers: { origin: "https://evil.example", "content-type": "application/json" }, body: JSON.stringify(body) });
      expect(foreign.status).toBe(403);
      const wrongState = await fetch(callback, { method: "POST", headers: { origin: dashboard.url, "content-type": "application/json" }, body: JSON.stringify({ ...body, state: "0".repeat(64) }) });
      expect(wrongState.status).toBe(403);
      // the key was never approved: a right state is refused until the account has it
      const unapproved = await fetch(callback, { method: "POST", headers: { origin: dashboard.url, "content-type": "application/json" }, body: JSON.stringify(body) });
      expect(unapproved.status).toBe(409);
      expect(existsSync(join(home, "other.json"))).toBe(false);
      const noToken = await fetch(`${dashboard.url}/api/approve`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ publicKey: "a".repeat(64) }) });
      expect(noToken.status).toBe(403);
    } finally {
      await client.close();
    }
  }, 60_000);

  it("serves /connect/mcp (what MemWal's memwal_login opens), and answers its API from its loopback origin's localhost spelling, not from other origins", async () => {
    const page = await fetch(`${dashboard.url}/connect/mcp?port=1&publicKey=${"a".repeat(64)}&delegateAddress=0x${"b".repeat(64)}&label=x&relayer=${encodeURIComponent(t.stack.relayerUrl)}&state=${"c".repeat(64)}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("memwal_login");
    const token = /name="dashboard-token" content="([0-9a-f]+)"/.exec(html)![1];
    const keys = (origin: string) => request(`${dashboard.url}/api/keys`, { headers: { "x-dashboard-token": token, origin } }).then(async (r) => (await r.body.dump(), r.statusCode));
    expect(await keys(dashboard.url)).toBe(200);
    expect(await keys(dashboard.url.replace("127.0.0.1", "localhost"))).toBe(200);
    expect(await keys("http://localhost:1")).toBe(403);
    expect(await keys("https://evil.example")).toBe(403);
  });

  it("signs in with a browser wallet (Sui wallet standard) for its own account, the relayer sponsoring the gas, and revokes with it", async () => {
    // the wallet's owner has an account and no gas left
    const { wallet, account } = await gaslessWalletWithAccount(t.stack);

    const credentials = join(home, "wallet.json");
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["bin/memrelay-mcp.mjs", "--relayer", t.stack.relayerUrl, "--web-url", dashboard.url, "--label", "Wallet agent"],
      env: { ...(process.env as Record<string, string>), HOME: home, MEMORY_CREDENTIALS_FILE: credentials },
      stderr: "pipe",
    });
    const client = new Client({ name: "host", version: "1.0.0" });
    await client.connect(transport);
    const page = await browser.newPage();
    try {
      const signed = await injectSuiWallet(page, wallet);

      const url = /https?:\/\/\S+/.exec(textOf(await client.callTool({ name: TOOL.login, arguments: {} })))![0];
      await page.goto(url);
      await page.click("button:has-text('Approve with Test Wallet')");
      await expect.poll(() => page.locator("#status").textContent(), { timeout: 15_000 }).toMatch(/^Connected/);
      expect(signed).toEqual(["memrelay sponsor request", "add_delegate_key"]);
      const keys = (await t.stack.chain.getAccount(account.id))!.delegate_keys;
      expect(keys.map((k) => k.label)).toEqual(["Wallet agent"]);
      expect((await t.stack.chain.balance(wallet.toSuiAddress())).balances.SUI).toBe(0n); // the sponsor paid

      // the package now acts for the wallet's account, without a restart
      const remembered = await client.callTool({ name: TOOL.remember, arguments: { text: "My wallet's favourite colour is teal" } });
      expect(remembered.isError, textOf(remembered)).toBeFalsy();
      const recalled = await client.callTool({ name: TOOL.recall, arguments: { query: "favourite colour" } });
      expect(textOf(recalled)).toContain("teal");

      // the keys page shows the wallet's own account once the wallet is used there, and the wallet revokes the key
      await revokeWithWallet(page, dashboard.url, account.id, "Wallet agent", 15_000);
      expect(signed.slice(2)).toEqual(["memrelay sponsor request", "remove_delegate_key"]);
      const refused = await client.callTool({ name: TOOL.recall, arguments: { query: "favourite colour" } });
      expect(textOf(refused)).toMatch(/401/);
    } finally {
      await page.close();
      await client.close();
    }
  }, 90_000);
});
