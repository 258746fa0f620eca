// `memrelay start --network <name>` as an operator runs it: the relayer with its workers and MCP sidecar against a
// network reached by configuration only (its node's JSON-RPC, key servers, Walrus publisher and aggregator). The
// network here is the local stack's own, named "memnet"; the started process has no chain, key servers or blob store
// of its own. Agents sign in through its dashboard with a browser wallet (headless Chromium, a wallet-standard wallet
// injected), the relayer sponsoring the gas. And the refusal when the network's variables are missing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { freePort } from "./support/free-port.ts";
import { MemrelayClient } from "../client/memrelay-client.ts";
import { cachedSessionProvider } from "../client/session-cache.ts";
import { generateKeypair, mint } from "../adapters/chain/local/accounts.ts";
import { chromium } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { gaslessWalletWithAccount, injectSuiWallet, revokeWithWallet } from "./support/browser-wallet.ts";
import { TOOL } from "../schemas/mcp-tools.ts";

const bin = join(process.cwd(), "bin", "memrelay.mjs");
let t: TestStack;
let child: ChildProcess | undefined;
let dataDir: string;
/** The process `memrelay start --network memnet` started by the second test: its relayer and dashboard. */
let relayerUrl: string;
let dashboardUrl: string;
beforeAll(async () => {
  t = await startTestStack({ CHAIN_NETWORK: "memnet" }, { roles: { gateway: false, projections: true, actors: false } });
  dataDir = mkdtempSync(join(tmpdir(), "memrelay-network-"));
}, 120_000);
afterAll(async () => {
  child?.kill("SIGTERM");
  await t?.teardown();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("memrelay start --network", () => {
  const refusal = (network: string) => spawnSync(process.execPath, [bin, "start", "--network", network], { env: { PATH: process.env.PATH, HOME: dataDir, MEMRELAY_DATA_DIR: dataDir }, encoding: "utf8", timeout: 30_000 });

  it("refuses to start without the network's variables, naming them", () => {
    const r = refusal("memnet");
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/needs these variables.*: CHAIN_RPC_URL \(or CHAIN_GRPC_URL\), MEMORY_PACKAGE_ID, MEMORY_REGISTRY_ID, BLOBSTORE_PUBLISHER_URL, BLOBSTORE_AGGREGATOR_URL, ENCRYPTION_SERVER_CONFIGS \(or ENCRYPTION_KEY_SERVERS\), SERVER_CHAIN_PRIVATE_KEY\(S\), SPONSOR_PRIVATE_KEY$/m);
  });

  it("on testnet and mainnet names only what the presets cannot fill in: what a deployer publishes and funds", () => {
    const testnet = refusal("testnet");
    expect(testnet.status).toBe(2);
    expect(testnet.stderr).toMatch(/needs these variables.*: MEMORY_PACKAGE_ID, MEMORY_REGISTRY_ID, SERVER_CHAIN_PRIVATE_KEY\(S\), SPONSOR_PRIVATE_KEY$/m);
    const mainnet = refusal("mainnet");
    expect(mainnet.status).toBe(2);
    expect(mainnet.stderr).toMatch(/needs these variables.*: MEMORY_PACKAGE_ID, MEMORY_REGISTRY_ID, BLOBSTORE_PUBLISHER_URL, SERVER_CHAIN_PRIVATE_KEY\(S\), SPONSOR_PRIVATE_KEY$/m);
  });

  it("serves remember and recall with the network's chain, key servers and blob store", async () => {
    const port = await freePort();
    // the relayer's gas station, funded on the network as a deployer funds it
    const sponsor = generateKeypair();
    await mint(t.stack.chain, { operatorKey: t.stack.operatorSecretKey, to: sponsor.keypair.address, amount: 1_000_000_000_000n });
    const env = { ...process.env, ...t.stack.workerEnv, SPONSOR_PRIVATE_KEY: Buffer.from(sponsor.secretKey).toString("hex"), PORT: String(port), DASHBOARD_PORT: String(await freePort()), SIDECAR_URL: `http://127.0.0.1:${await freePort()}`, MEMRELAY_DATA_DIR: dataDir, HOME: dataDir, LOG_FORMAT: "json" };
    delete (env as Record<string, string | undefined>).CHAIN_NETWORK; // the flag alone selects the network
    child = spawn(process.execPath, [bin, "start", "--network", "memnet"], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not running: ${out}`)), 90_000);
      child!.stdout!.on("data", (d) => {
        out += d;
        if (out.includes("Ctrl-C stops everything")) {
          clearTimeout(timer);
          resolve();
        }
      });
      child!.stderr!.on("data", (d) => (out = (out + d).slice(-4000)));
      child!.once("exit", (code) => reject(new Error(`exited with ${code}: ${out}`)));
    });
    expect(out).toContain("memrelay is running on memnet");
    expect(out).toContain(`chain        ${t.stack.workerEnv.CHAIN_RPC_URL}`);
    relayerUrl = `http://127.0.0.1:${port}`;
    dashboardUrl = /^ {2}dashboard {4}(\S+)/m.exec(out)![1]!;

    const who = await t.stack.createIdentity();
    const session = cachedSessionProvider({ delegateSecretKey: who.delegateSecretKey, packageId: t.stack.encryptionStack.packageId, rpcUrl: t.stack.encryptionStack.rpcUrl });
    const client = new MemrelayClient({ baseUrl: `http://127.0.0.1:${port}`, delegatePrivateKey: who.delegateSecretKey, accountId: who.accountId, encryptionSession: session });
    const { job_id } = await client.remember("The ferry to the island leaves at seven", "travel");
    const job = await client.waitForJob(job_id);
    expect(job.status).toBe("done");
    expect(await t.stack.chain.getBlob(who.owner, job.blob_id!)).toMatchObject({ namespace: "travel" });
    expect((await client.recall("when does the ferry leave", { namespace: "travel" })).results[0]?.text).toContain("ferry");
  }, 120_000);

  it("signs an agent in on its dashboard with the user's browser wallet, the relayer paying the gas; recalls; revoke ends it", async () => {
    // the user's wallet has an account on the network and no gas left
    const { wallet, account } = await gaslessWalletWithAccount(t.stack);

    // no development wallet on a network: the dashboard's own approve route is refused
    const token = /name="dashboard-token" content="([0-9a-f]+)"/.exec(await (await fetch(`${dashboardUrl}/connect`)).text())![1]!;
    const own = await fetch(`${dashboardUrl}/api/approve`, { method: "POST", headers: { "x-dashboard-token": token, "content-type": "application/json" }, body: JSON.stringify({ publicKey: "a".repeat(64) }) });
    expect(own.status).toBe(404);

    const credentials = join(dataDir, "agent-credentials.json");
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ["bin/memrelay-mcp.mjs", "--relayer", relayerUrl, "--web-url", dashboardUrl, "--label", "Network agent"],
      env: { ...(process.env as Record<string, string>), HOME: dataDir, MEMORY_CREDENTIALS_FILE: credentials },
      stderr: "pipe",
    });
    const agent = new Client({ name: "host", version: "1.0.0" });
    await agent.connect(transport);
    const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", headless: true, args: ["--no-sandbox"] });
    const textOf = (r: unknown) => ((r as { content: { text: string }[] }).content ?? []).map((c) => c.text).join("\n");
    try {
      const page = await browser.newPage();
      const signed = await injectSuiWallet(page, wallet);
      const url = /https?:\/\/\S+/.exec(textOf(await agent.callTool({ name: TOOL.login, arguments: {} })))![0];
      expect(url.startsWith(`${dashboardUrl}/connect?`)).toBe(true);
      await page.goto(url);
      expect(await page.locator("#approve").count()).toBe(0);
      await page.click("button:has-text('Approve with Test Wallet')");
      await expect.poll(() => page.locator("#status").textContent(), { timeout: 20_000 }).toMatch(/^Connected/);
      expect(signed).toEqual(["memrelay sponsor request", "add_delegate_key"]);
      expect((await t.stack.chain.getAccount(account.id))!.delegate_keys.map((k) => k.label)).toEqual(["Network agent"]);
      expect((await t.stack.chain.balance(wallet.toSuiAddress())).balances.SUI).toBe(0n); // the relayer's sponsor paid

      const remembered = await agent.callTool({ name: TOOL.remember, arguments: { text: "The night train to Vienna leaves from platform nine" } });
      expect(remembered.isError, textOf(remembered)).toBeFalsy();
      const recalled = await agent.callTool({ name: TOOL.recall, arguments: { query: "which platform for the night train" } });
      expect(recalled.isError, textOf(recalled)).toBeFalsy();
      expect(textOf(recalled)).toContain("platform nine");

      // the keys page reads the wallet's account through the network's node; the wallet revokes the key
      await revokeWithWallet(page, dashboardUrl, account.id, "Network agent", 20_000);
      expect(signed.slice(2)).toEqual(["memrelay sponsor request", "remove_delegate_key"]);
      const refused = await agent.callTool({ name: TOOL.recall, arguments: { query: "which platform for the night train" } });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(/401/);
    } finally {
      await browser.close();
      await agent.close();
    }
  }, 120_000);
});
