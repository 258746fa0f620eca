// `npm run compat`: MemWal's own clients and server tests, unmodified, against a stack this script starts.
//
//   MEMWAL_REPO=/path/to/MemWal npm run compat [-- --out <file>]
//
// MEMWAL_REPO is a local checkout of MystenLabs/MemWal (nothing of it is committed here); MEMWAL_COMMIT names its
// commit when the checkout is not a git work tree. Prints a table client → call → pass/fail (the README's
// compatibility table quotes it with its date and MemWal commit); exits 1 when a call failed. Without MEMWAL_REPO it
// says so and exits 0. A driver is one entry of DRIVERS: a function from the started stack to rows.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { markdownTable, tally, type CompatDriver, type CompatRow } from "./rows.ts";
import { startCompatStack } from "./stack.ts";
import { memwalTypeScriptSdk } from "./memwal-ts-sdk.ts";
import { memwalPythonSdk, memwalServerTests } from "./memwal-python.ts";
import { memwalMcpPackage } from "./memwal-mcp.ts";

const DRIVERS: readonly [string, CompatDriver][] = [
  ["TypeScript SDK", memwalTypeScriptSdk],
  ["Python SDK", memwalPythonSdk],
  ["server tests", memwalServerTests],
  ["MCP package", memwalMcpPackage],
];

function memwalCommit(repo: string): string {
  if (process.env.MEMWAL_COMMIT) return process.env.MEMWAL_COMMIT;
  try {
    return execFileSync("git", ["-C", repo, "rev-parse", "--short=8", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "unknown (not a git work tree; set MEMWAL_COMMIT)";
  }
}

async function main(): Promise<number> {
  const repo = process.env.MEMWAL_REPO;
  if (!repo) {
    console.log("MEMWAL_REPO is not set: nothing to run. Point it at a local checkout of MystenLabs/MemWal, e.g. MEMWAL_REPO=../MemWal npm run compat");
    return 0;
  }
  const memwalRepo = resolve(repo);
  if (!existsSync(join(memwalRepo, "packages", "sdk", "src")) || !existsSync(join(memwalRepo, "services", "server", "tests"))) {
    console.error(`MEMWAL_REPO=${memwalRepo} does not look like a MemWal checkout (no packages/sdk/src or services/server/tests)`);
    return 2;
  }
  const outArg = process.argv.indexOf("--out");
  const workDir = mkdtempSync(join(tmpdir(), "memrelay-compat-"));
  const rows: CompatRow[] = [];
  const started = new Date();
  console.error(`starting memrelay (data, HOME and ports of its own under ${workDir}) ...`);
  const stack = await startCompatStack(workDir);
  try {
    const ctx = { memwalRepo, relayerUrl: stack.relayerUrl, delegatePrivateKeyHex: stack.delegatePrivateKeyHex, accountId: stack.accountId, credentials: stack.credentials, workDir, env: stack.env };
    for (const [name, driver] of DRIVERS) {
      console.error(`running ${name} ...`);
      rows.push(...(await driver(ctx).catch((err: unknown) => [{ client: name, call: "(driver)", ok: false, detail: err instanceof Error ? err.message : String(err) }])));
    }
  } finally {
    await stack.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
  const report = [
    `MemWal compatibility run of ${started.toISOString().slice(0, 16).replace("T", " ")} UTC against MemWal ${memwalCommit(memwalRepo)}: ${tally(rows)}`,
    "",
    markdownTable(rows),
    "",
  ].join("\n");
  console.log(report);
  if (outArg >= 0 && process.argv[outArg + 1]) writeFileSync(process.argv[outArg + 1]!, report);
  return rows.some((r) => !r.ok && !r.skipped) ? 1 : 0;
}

process.exitCode = await main();
