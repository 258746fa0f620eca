// Black-box, as an agent host runs it: MemWal's own MCP package (`@mysten-incubation/memwal-mcp`, packages/mcp of the
// MemWal checkout at MEMWAL_REPO, built unmodified: test/support/memwal-mcp-package.ts) as a child process driven by
// the MCP SDK's stdio client, against the started stack. It keeps its credential in $HOME/.memwal/credentials.json,
// opens GET /api/mcp/sse with the bearer and posts its messages with no credential (the session id is the capability),
// expects memwal_* tools and injects --namespace into them. Then its sign-in from scratch: memwal_login's URL
// (`/connect/mcp?…`) opened in headless Chromium on the dashboard, approved, its loopback callback writes the file, and
// the package started again works, and so does memrelay-mcp pointed at the file it wrote. Needs a MemWal checkout:
// skipped when MEMWAL_REPO is unset.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { startDashboard, type Dashboard } from "../dashboard/server.ts";
import { localDevelopmentWallet } from "../dashboard/development-wallet.ts";
import { silentLogger } from "../config/logger.ts";
import type { DevIdentity } from "../runtime/local-stack.ts";
import type { Credentials } from "../cli/credentials.ts";
import { MEMWAL_TOOL, TOOL } from "../schemas/mcp-tools.ts";
import { buildMemwalMcp, memwalMcpChecks, startMemwalMcp, toolText, type MemwalMcpBuild } from "./support/memwal-mcp-package.ts";

const memwalRepo = process.env.MEMWAL_REPO;
if (!memwalRepo) console.warn("skipped: MEMWAL_REPO is unset. Point it at a MemWal checkout (MEMWAL_REPO=/path/to/MemWal) to run MemWal's MCP package unmodified.");

/** The credential file memrelay writes (cli/credentials.ts) for an identity of the test stack. */
const credentialsOf = (t: TestStack, who: DevIdentity, label: string): Credentials => ({
  delegatePrivateKey: Buffer.from(who.delegateSecretKey).toString("hex"),
  delegatePublicKeyHex: who.delegatePublicKeyHex,
  delegateAddress: who.delegateAddress,
  walletAddress: who.owner,
  accountId: who.accountId,
  packageId: t.stack.encryptionStack.packageId,
  relayerUrl: t.stack.relayerUrl,
  label,
  createdAt: new Date().toISOString(),
  version: 1,
});

describe.skipIf(!memwalRepo)("the unmodified MemWal MCP package (needs MEMWAL_REPO=<a MemWal checkout>; skipped when unset)", () => {
  let t: TestStack;
  let build: MemwalMcpBuild;
  let owner: DevIdentity;
  let dashboard: Dashboard;
  let browser: Browser;
  const homes: string[] = [];
  const home = () => {
    const dir = mkdtempSync(join(tmpdir(), "memwal-mcp-test-home-"));
    homes.push(dir);
    return dir;
  };

  beforeAll(async () => {
    [t, build] = await Promise.all([startTestStack(), buildMemwalMcp(memwalRepo!)]);
    owner = await t.stack.createIdentity("memrelay-dev");
    const c = await t.client(owner);
    expect((await c.rememberAndWait("I drink green tea every morning")).status).toBe("done");
    dashboard = await startDashboard({ chain: t.stack.chain, developmentWallet: localDevelopmentWallet(t.stack.chain, owner.ownerSecretKey, owner.accountId), packageId: t.stack.encryptionStack.packageId, host: "127.0.0.1", port: 0, logger: silentLogger, relayerUrl: t.stack.relayerUrl });
    browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", headless: true, args: ["--no-sandbox"] });
  }, 600_000);
  afterAll(async () => {
    await browser?.close();
    await dashboard?.close();
    await t?.teardown();
    for (const dir of homes) rmSync(dir, { recursive: true, force: true });
  });

  it("with memrelay's credential file in its place: initialize, tools/list, remember, recall, analyze, restore, logout", async () => {
    const who = await t.stack.createIdentity("compat");
    const rows = await memwalMcpChecks({ memwalRepo: memwalRepo!, credentials: credentialsOf(t, who, "compat"), namespace: "compat-check" });
    expect(rows.map((r) => r.call)).toEqual(["initialize", "tools/list", "memwal_remember", "memwal_recall", "memwal_analyze", "memwal_recall right after memwal_analyze", "memwal_restore (limit 500)", "memwal_logout"]);
    expect(rows.filter((r) => !r.ok), JSON.stringify(rows, null, 1)).toEqual([]);
    // --namespace reached the relayer: the memories are in that namespace and nowhere else
    const c = await t.client(who);
    expect((await c.call<{ memory_count: number }>("POST", "/api/stats", { namespace: "compat-check" })).memory_count).toBeGreaterThanOrEqual(3);
    expect((await c.call<{ memory_count: number }>("POST", "/api/stats", {})).memory_count).toBe(0);
  }, 300_000);

  it("signs in from memwal_login through /connect/mcp in the browser; its callback writes ~/.memwal/credentials.json and the package works", async () => {
    const dir = home();
    const web = dashboard.url.replace("127.0.0.1", "localhost"); // as the package's --local preset has it
    let host: Client = await startMemwalMcp(build, dir, ["--relayer", t.stack.relayerUrl, "--web-url", web, "--label", "MemWal agent"]);
    try {
      const names = (await host.listTools()).tools.map((x) => x.name);
      expect(names).toEqual(expect.arrayContaining([MEMWAL_TOOL.remember, MEMWAL_TOOL.recall, MEMWAL_TOOL.login]));
      const signedOut = await host.callTool({ name: MEMWAL_TOOL.recall, arguments: { query: "what do I drink?" } });
      expect(signedOut.isError).toBe(true);

      const login = toolText(await host.callTool({ name: MEMWAL_TOOL.login, arguments: {} }));
      const url = /https?:\/\/\S+/.exec(login)?.[0];
      expect(url).toMatch(new RegExp(`^${web}/connect/mcp\\?port=\\d+&publicKey=[0-9a-f]{64}&delegateAddress=0x[0-9a-f]{64}&label=MemWal%20agent&relayer=[^&]+&state=[0-9a-f]{64}$`));
      const page = await browser.newPage();
      try {
        await page.goto(url!);
        await expect.poll(() => page.locator("#label").textContent()).toBe("MemWal agent");
        await page.click("#approve");
        await expect.poll(() => page.locator("#status").textContent(), { timeout: 20_000 }).toMatch(/^Connected/);
      } finally {
        await page.close();
      }
      const file = join(dir, ".memwal", "credentials.json");
      expect(existsSync(file)).toBe(true);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(JSON.parse(readFileSync(file, "utf8"))).toMatchObject({ accountId: owner.accountId, walletAddress: owner.owner, relayerUrl: t.stack.relayerUrl, label: "MemWal agent", version: 1 });
      const keys = (await t.stack.chain.getAccount(owner.accountId))!.delegate_keys;
      expect(keys.map((k) => k.label)).toContain("MemWal agent");
    } finally {
      await host.close();
    }
    // MemWal's package reads its credential at start (REFERENCE.md: it never reloads): the next start uses it
    host = await startMemwalMcp(build, dir);
    try {
      const recalled = await host.callTool({ name: MEMWAL_TOOL.recall, arguments: { query: "what do I drink?" } });
      expect(recalled.isError, toolText(recalled)).toBeFalsy();
      expect(toolText(recalled)).toContain("green tea");
    } finally {
      await host.close();
    }
    // the same file serves memrelay's own package, pointed at it
    const memrelay = new Client({ name: "host", version: "1.0.0" });
    await memrelay.connect(new StdioClientTransport({
      command: process.execPath,
      args: ["bin/memrelay-mcp.mjs"],
      env: { ...(process.env as Record<string, string>), HOME: dir, MEMORY_CREDENTIALS_FILE: join(dir, ".memwal", "credentials.json") },
      stderr: "pipe",
    }));
    try {
      expect(toolText(await memrelay.callTool({ name: TOOL.recall, arguments: { query: "what do I drink?" } }))).toContain("green tea");
    } finally {
      await memrelay.close();
    }
  }, 180_000);
});
