// The README's first screen, run as written (issue 33), so it cannot rot: its first command (`npm start`) starts the
// stack, then every block of the tour runs in order as a newcomer pastes it in a second terminal, in a view of the
// checkout with its own HOME: shell blocks in bash (their output must match the `text tour-output` block after them,
// `…` standing for any text), the TypeScript snippet saved as the file the next shell block runs, and the agent
// host's MCP config block started as a host would start it. Every block above the end-of-first-screen marker must be
// one of these, so a new snippet there cannot escape the test.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { adminUrl } from "./support/postgres.ts";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
const END_OF_FIRST_SCREEN = "<!-- end of the first screen";
/** Where a config block names the checkout. */
const CHECKOUT_PLACEHOLDER = "/path/to/memrelay";

interface Block {
  readonly lang: string;
  readonly tag: string;
  readonly body: string;
}

/** Fenced blocks with their info string split as ```lang tag. */
function fencedBlocks(markdown: string): Block[] {
  return [...markdown.matchAll(/^```(\S*)[ \t]*(\S*)[ \t]*\n([\s\S]*?)^```[ \t]*$/gm)].map((m) => ({ lang: m[1], tag: m[2], body: m[3] }));
}

function firstScreen(readme: string): string {
  const end = readme.indexOf(END_OF_FIRST_SCREEN);
  if (end < 0) throw new Error(`README.md has no "${END_OF_FIRST_SCREEN}" marker`);
  return readme.slice(0, end);
}

/** Whether the output has the expected lines, `…` in one standing for any text. */
function outputMatches(expected: string, actual: string): boolean {
  const lines = (s: string) => s.replace(/\s+$/, "").split("\n");
  const want = lines(expected);
  const got = lines(actual);
  const pattern = (line: string) => new RegExp("^" + line.split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*") + "$");
  return want.length === got.length && want.every((line, i) => pattern(line).test(got[i]));
}

const readme = readFileSync(join(root, "README.md"), "utf8");
const screen = firstScreen(readme);
const blocks = fencedBlocks(screen);

const home = mkdtempSync(join(tmpdir(), "memrelay-readme-home-"));
const dataDir = join(home, "data");
/** What the second terminal has: a PATH, the newcomer's HOME, and the data directory `npm start` was given. */
const terminalEnv = { PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`, HOME: home, MEMRELAY_DATA_DIR: dataDir, npm_config_update_notifier: "false" };
// The checkout as the newcomer has it, where the tour's files can be saved without touching the repository.
const checkout = mkdtempSync(join(tmpdir(), "memrelay-readme-checkout-"));
for (const entry of readdirSync(root)) if (entry !== ".git") symlinkSync(join(root, entry), join(checkout, entry));

let stack: { child: ChildProcess; output: () => string; exited: Promise<number | null> } | undefined;

beforeAll(async () => {
  const first = blocks.find((b) => b.tag === "first-commands");
  const command = first?.body.split("\n")[0].replace(/#.*/, "").trim();
  if (command !== "npm start") throw new Error(`the first command of the README is "${command}", the test starts the stack with npm start`);
  // Free ports and the hashing embedder (fast) for a test; the rest is npm start's own defaults.
  const env = { ...terminalEnv, PORT: "0", BLOBSTORE_PORT: "0", CONSOLE_PORT: "0", SIDECAR_URL: "http://127.0.0.1:0", DASHBOARD_PORT: "0", MEMRELAY_EMBEDDER: "hashing", MEMRELAY_NATIVE_PG: adminUrl() };
  const child = spawn("npm", ["start"], { cwd: checkout, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  stack = { child, output: () => out, exited };
  await new Promise<void>((res, rej) => {
    child.stdout!.on("data", () => out.includes("memrelay is running") && res());
    void exited.then((code) => rej(new Error(`npm start exited ${code}:\n${out}`)));
  });
}, 180_000);

afterAll(async () => {
  if (stack && stack.child.exitCode === null) {
    stack.child.kill("SIGKILL");
    await stack.exited;
  }
  // A native database npm start made for this data directory (embedded PGlite leaves nothing behind).
  const url = /^ {2}DATABASE_URL=(\S+)/m.exec(stack?.output() ?? "")?.[1];
  const admin = new URL(adminUrl());
  if (url && new URL(url).host === admin.host && /^\/memrelay_[0-9a-f]+$/.test(new URL(url).pathname)) {
    const c = new pg.Client({ connectionString: adminUrl() });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${new URL(url).pathname.slice(1)} WITH (FORCE)`).finally(() => c.end());
  }
  rmSync(checkout, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
});

describe("the README's first screen", () => {
  it("holds only blocks this test runs: the two commands, the tour and its output", () => {
    expect(blocks.length).toBeGreaterThan(0);
    expect(blocks.map((b) => b.tag).filter((t) => !["first-commands", "tour", "tour-output"].includes(t))).toEqual([]);
    const commands = blocks.find((b) => b.tag === "first-commands")!.body.split("\n").map((l) => l.replace(/#.*/, "").trim()).filter(Boolean);
    // the second is .ci/run itself, which CI runs
    expect(commands).toEqual(["npm start", "bash .ci/run"]);
  });

  it("the output check fails on output other than the README's", () => {
    expect(outputMatches('{"job_id":"…","status":"done"}\n…  I prefer green tea', '{"job_id":"4f2","status":"done"}\n0.412  I prefer green tea\n')).toBe(true);
    expect(outputMatches('{"job_id":"…","status":"done"}', '{"job_id":"4f2","status":"failed"}')).toBe(false);
    expect(outputMatches("done", "done\nMy cat is called Miso")).toBe(false);
  });

  it("the tour runs as written in a second terminal and prints what the README says", async () => {
    const tour = blocks.filter((b) => b.tag !== "first-commands");
    expect(tour.filter((b) => b.tag === "tour").map((b) => b.lang)).toEqual(expect.arrayContaining(["sh", "ts", "json"]));
    for (const [i, block] of tour.entries()) {
      if (block.tag !== "tour") continue;
      const next = tour[i + 1];
      if (block.lang === "sh") {
        const r = spawnSync("bash", ["-eo", "pipefail", "-c", block.body], { cwd: checkout, env: terminalEnv, encoding: "utf8", timeout: 120_000 });
        expect(r.status, `${block.body}\n${r.stdout}${r.stderr}`).toBe(0);
        if (next?.tag === "tour-output") expect(outputMatches(next.body, r.stdout), `${block.body}\nprinted:\n${r.stdout}\nthe README says:\n${next.body}`).toBe(true);
      } else if (block.lang === "ts") {
        // saved where the README says, the file the shell block after it runs
        const name = /save it as `([^`]+\.ts)`/.exec(screen)?.[1];
        expect(name, "the README names the file the snippet is saved as").toBeDefined();
        writeFileSync(join(checkout, name!), block.body);
      } else if (block.lang === "json") {
        await runMcpConfig(block.body);
      } else {
        throw new Error(`a tour block in ${block.lang}: the test cannot run it`);
      }
    }
  }, 300_000);

  it("npm start stops cleanly on SIGTERM", async () => {
    stack!.child.kill("SIGTERM");
    const code = await Promise.race([stack!.exited, new Promise<string>((r) => setTimeout(() => r("still running after 20 s"), 20_000))]);
    expect(code, stack!.output()).toBe(0);
    expect(stack!.output()).toContain("stopping…");
  }, 30_000);
});

/** Starts each server of the config block as an agent host would, lists its tools and recalls what the shell stored. */
async function runMcpConfig(body: string): Promise<void> {
  const config = JSON.parse(body.replaceAll(CHECKOUT_PLACEHOLDER, checkout)) as { mcpServers: Record<string, { command: string; args?: string[] }> };
  const servers = Object.values(config.mcpServers);
  expect(servers.length).toBeGreaterThan(0);
  for (const server of servers) {
    const transport = new StdioClientTransport({ command: server.command, args: server.args ?? [], env: terminalEnv, stderr: "pipe" });
    const agent = new Client({ name: "readme-host", version: "1.0.0" });
    await agent.connect(transport);
    try {
      const tools = (await agent.listTools()).tools.map((t) => t.name);
      // every tool the first screen names is offered
      const named = [...new Set([...screen.matchAll(/`(memory_\w+)`/g)].map((m) => m[1]))];
      expect(named.length).toBeGreaterThan(0);
      expect(tools).toEqual(expect.arrayContaining(named));
      const recalled = (await agent.callTool({ name: "memory_recall", arguments: { query: "what do I drink?" } })) as { isError?: boolean; content: { text: string }[] };
      const text = recalled.content.map((c) => c.text).join("\n");
      expect(recalled.isError, text).toBeFalsy();
      expect(text).toContain("I prefer green tea");
    } finally {
      await agent.close();
    }
  }
}
