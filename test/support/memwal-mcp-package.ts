// The unmodified MemWal MCP package (`@mysten-incubation/memwal-mcp`, packages/mcp of a MemWal checkout) as an agent
// host runs it: built once into a cache directory outside the repository (keyed by a digest of the package's sources,
// so a new MemWal commit that changes it builds anew and repeated runs reuse the build), started as a child process
// with HOME in a directory of the caller's (it keeps its credential in $HOME/.memwal/credentials.json), and driven by
// the MCP SDK's stdio client. `memwalMcpChecks` runs the calls an agent makes and returns one row per call, for the
// compatibility table (`npm run compat`) and for test/memwal-mcp-package.test.ts.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { writeCredentials, type Credentials } from "../../cli/credentials.ts";
import { MEMWAL_TOOL } from "../../schemas/mcp-tools.ts";
import type { CompatRow } from "../compat/rows.ts";

const run = promisify(execFile);


export interface MemwalMcpBuild {
  /** The package's command: `node <bin>`. */
  readonly bin: string;
  /** "@mysten-incubation/memwal-mcp 0.0.2" */
  readonly name: string;
}

/** Digest of what the build reads (package.json, tsconfig.json, src/**), in a stable order. */
function sourcesDigest(dir: string): string {
  const h = createHash("sha256");
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(dir, rel), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(rel, entry.name);
      if (entry.isDirectory()) walk(path);
      else h.update(path).update("\0").update(readFileSync(join(dir, path))).update("\0");
    }
  };
  for (const f of ["package.json", "tsconfig.json"]) h.update(f).update(readFileSync(join(dir, f)));
  walk("src");
  return h.digest("hex").slice(0, 16);
}

/**
 * Builds packages/mcp of the MemWal checkout at `memwalRepo` as its README says (npm install from the registry, then
 * tsc), untouched, under `cacheRoot` (default: the OS temp directory); a finished build is reused. The build happens
 * in a directory of its own and is renamed into place, so two runs at once never see half a build.
 */
export async function buildMemwalMcp(memwalRepo: string, cacheRoot = tmpdir()): Promise<MemwalMcpBuild> {
  const source = join(memwalRepo, "packages", "mcp");
  if (!existsSync(join(source, "package.json"))) throw new Error(`${source} is not MemWal's MCP package (MEMWAL_REPO must be a MemWal checkout)`);
  const pkg = JSON.parse(readFileSync(join(source, "package.json"), "utf8")) as { name: string; version: string; bin: Record<string, string> };
  const target = join(cacheRoot, `memwal-mcp-${pkg.version}-${sourcesDigest(source)}`);
  const build = { bin: join(target, Object.values(pkg.bin)[0]!), name: `${pkg.name} ${pkg.version}` };
  if (existsSync(build.bin)) return build;
  mkdirSync(cacheRoot, { recursive: true });
  const work = mkdtempSync(`${target}.building-`);
  try {
    cpSync(source, work, { recursive: true, filter: (p) => !/[/\\](node_modules|dist)$/.test(p) });
    await run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: work, timeout: 300_000 }).catch((err) => {
      throw new Error(`npm install of ${build.name}'s dependencies failed: ${String(err.stderr ?? err.message).trim().split("\n").slice(-3).join(" ")}`);
    });
    await run(process.execPath, [join(work, "node_modules", "typescript", "bin", "tsc")], { cwd: work, timeout: 300_000 }).catch((err) => {
      throw new Error(`tsc build of ${build.name} failed: ${String(err.stdout ?? err.message).trim().split("\n").slice(0, 3).join(" ")}`);
    });
    if (!existsSync(build.bin)) renameSync(work, target);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return build;
}

/** Writes a credential where MemWal's package reads it: $HOME/.memwal/credentials.json (memrelay's format is the same). */
export function writeMemwalCredentials(home: string, credentials: Credentials): string {
  const path = join(home, ".memwal", "credentials.json");
  writeCredentials(credentials, path);
  return path;
}

/** The package started as an agent host starts it, with HOME at `home`, connected with the MCP SDK's stdio client. */
export async function startMemwalMcp(build: MemwalMcpBuild, home: string, args: readonly string[] = [], env: Record<string, string> = {}): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [build.bin, ...args],
    env: { ...(process.env as Record<string, string>), HOME: home, ...env },
    stderr: "pipe",
  });
  const client = new Client({ name: "memwal-compat-host", version: "1.0.0" });
  await client.connect(transport, { timeout: 30_000 });
  return client;
}

export const toolText = (r: unknown) => ((r as { content?: { text?: string }[] }).content ?? []).map((c) => c.text ?? "").join("\n");

export interface MemwalMcpCheckOptions {
  readonly memwalRepo: string;
  /** A credential for an account on the relayer under test (its relayerUrl is where the package connects). */
  readonly credentials: Credentials;
  /** The default namespace given to the package (`--namespace`); each run should use a fresh one. */
  readonly namespace: string;
  readonly cacheRoot?: string;
}

/**
 * Runs the calls an agent makes through the package (initialize, tools/list, memwal_remember, memwal_recall,
 * memwal_analyze then memwal_recall, memwal_restore with limit 500, memwal_logout) against the relayer the credential
 * names, with the package's default namespace set, and returns one row per call. Never throws for a failed call: a
 * build or start failure is a row too.
 */
export async function memwalMcpChecks(o: MemwalMcpCheckOptions): Promise<CompatRow[]> {
  const rows: CompatRow[] = [];
  let client = "@mysten-incubation/memwal-mcp";
  const row = (call: string, ok: boolean, detail: string) => rows.push({ client, call, ok, detail: detail.replace(/\s+/g, " ").slice(0, 200) });
  const home = mkdtempSync(join(tmpdir(), "memwal-mcp-home-"));
  let host: Client | undefined;
  let step = "build";
  try {
    const build = await buildMemwalMcp(o.memwalRepo, o.cacheRoot);
    client = build.name;
    step = "initialize";
    writeMemwalCredentials(home, o.credentials);
    host = await startMemwalMcp(build, home, ["--namespace", o.namespace]);
    const server = host.getServerVersion();
    row("initialize", !!server, `server ${server?.name} ${server?.version}`);

    step = "tools/list";
    const names = (await host.listTools()).tools.map((t) => t.name);
    const expected = [MEMWAL_TOOL.remember, MEMWAL_TOOL.recall, MEMWAL_TOOL.analyze, MEMWAL_TOOL.restore, MEMWAL_TOOL.login, "memwal_logout"];
    row("tools/list", expected.every((n) => names.includes(n)), names.join(", "));

    const call = async (name: string, args: Record<string, unknown>, check: (text: string) => boolean, label = name) => {
      const r = await host!.callTool({ name, arguments: args }, undefined, { timeout: 120_000 }).catch((err: Error) => ({ isError: true, content: [{ text: err.message }] }));
      const text = toolText(r);
      row(label, !r.isError && check(text), text);
    };
    const fact = `My compatibility check fact ${Date.now()}: the lighthouse keeper feeds three cats`;
    // no namespace in the calls: the package injects --namespace, and the answer names where the memory went
    await call(MEMWAL_TOOL.remember, { text: fact }, (t) => t.includes(`namespace "${o.namespace}"`));
    await call(MEMWAL_TOOL.recall, { query: "who feeds the cats?", limit: 3 }, (t) => t.includes(fact));
    await call(MEMWAL_TOOL.analyze, { text: "I moved to Lisbon last year. My sister works as a pilot." }, (t) => t.includes(`stored in namespace "${o.namespace}"`));
    // analyze waited for its facts: a recall right after finds them
    await call(MEMWAL_TOOL.recall, { query: "where did I move?", limit: 5 }, (t) => t.includes("Lisbon"), `${MEMWAL_TOOL.recall} right after ${MEMWAL_TOOL.analyze}`);
    await call(MEMWAL_TOOL.restore, { namespace: o.namespace, limit: 500 }, (t) => /restored \d+, skipped \d+, failed 0/.test(t), `${MEMWAL_TOOL.restore} (limit 500)`);
    await call("memwal_logout", {}, () => !existsSync(join(home, ".memwal", "credentials.json")));
  } catch (err) {
    row(step, false, err instanceof Error ? err.message : String(err));
  } finally {
    await host?.close().catch(() => undefined);
    rmSync(home, { recursive: true, force: true });
  }
  return rows;
}
