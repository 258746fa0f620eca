// Driver: MemWal's TypeScript SDK (packages/sdk), unmodified. Its sources are copied to the run's scratch directory
// (nothing of MemWal enters this repository), compiled with its own tsconfig by this repository's TypeScript against
// this repository's node_modules (its peers @mysten/sui and @mysten/seal; `ai` is absent, so its optional ai/ entry
// point has type errors that do not stop the emit), then its public API is called against the stack.
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { repoRoot } from "../../bench/lib/processes.ts";
import { oneLine, probe, type CompatContext, type CompatRow } from "./rows.ts";

const CLIENT = "TypeScript SDK (packages/sdk)";
const run = promisify(execFile);

/** The subset of the SDK's MemWal class this driver calls (the SDK's own types are not in this repository). */
interface MemWalClient {
  health(): Promise<{ status: string }>;
  compatibility(): Promise<{ apiVersion: string }>;
  rememberAsync(text: string, namespace?: string): Promise<{ job_id: string; status: string }>;
  waitForRememberJob(jobId: string, opts?: { pollIntervalMs?: number; timeoutMs?: number }): Promise<{ blob_id?: string; status?: string }>;
  getRememberStatus(jobId: string): Promise<{ status: string }>;
  rememberBulkAsync(items: { text: string; namespace?: string }[]): Promise<{ job_ids: string[] }>;
  getRememberBulkStatus(jobIds: string[]): Promise<{ results: { status: string }[] }>;
  recall(params: { query: string; limit?: number; namespace?: string }): Promise<{ results: { text: string }[] }>;
  embed(text: string): Promise<{ vector: number[] }>;
  analyze(text: string, namespace?: string): Promise<{ fact_count?: number; job_ids?: string[] }>;
  restore(namespace: string, limit?: number): Promise<{ total: number }>;
}

async function build(ctx: CompatContext): Promise<{ row: CompatRow; entry?: string }> {
  const src = join(ctx.memwalRepo, "packages", "sdk");
  const dir = join(ctx.workDir, "ts-sdk");
  mkdirSync(dir, { recursive: true });
  for (const f of ["src", "tsconfig.json", "package.json"]) cpSync(join(src, f), join(dir, f), { recursive: true });
  symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"), "dir");
  const diagnostics = await run(process.execPath, [join(repoRoot, "node_modules", "typescript", "bin", "tsc"), "-p", join(dir, "tsconfig.json")], { cwd: dir }).then(
    () => "",
    (err: { stdout?: string }) => err.stdout ?? "",
  );
  const entry = join(dir, "dist", "index.js");
  const errors = diagnostics.split("\n").filter((l) => l.includes("error TS"));
  if (!existsSync(entry)) return { row: { client: CLIENT, call: "build (tsc, its tsconfig)", ok: false, detail: oneLine(errors.slice(0, 3).join(" ")) } };
  const note = errors.length ? `emitted; ${errors.length} type errors, all about absent optional packages or Node types: ${oneLine(errors.map((e) => e.replace(/^.*error (TS\d+).*$/, "$1")).join(" "), 80)}` : "emitted, no type errors";
  return { row: { client: CLIENT, call: "build (tsc, its tsconfig)", ok: true, detail: note }, entry };
}

export async function memwalTypeScriptSdk(ctx: CompatContext): Promise<CompatRow[]> {
  const built = await build(ctx);
  if (!built.entry) return [built.row];
  const { MemWal } = (await import(pathToFileURL(built.entry).href)) as { MemWal: { create(c: { key: string; accountId: string; serverUrl: string; namespace?: string }): MemWalClient } };
  const sdk = MemWal.create({ key: ctx.delegatePrivateKeyHex, accountId: ctx.accountId, serverUrl: ctx.relayerUrl, namespace: "compat-ts" });
  const rows: CompatRow[] = [built.row];
  const p = (call: string, fn: () => Promise<string | void>) => probe(CLIENT, call, fn).then((r) => void rows.push(r));
  const expect = (cond: boolean, what: string) => {
    if (!cond) throw new Error(what);
  };
  await p("health", async () => {
    const h = await sdk.health();
    expect(h.status === "ok", `status ${h.status}`);
  });
  await p("compatibility (GET /version check)", async () => `apiVersion ${(await sdk.compatibility()).apiVersion}`);
  let blobId: string | undefined;
  await p("rememberAsync + waitForRememberJob", async () => {
    const accepted = await sdk.rememberAsync("The compat suite's TypeScript client prefers jasmine tea");
    const done = await sdk.waitForRememberJob(accepted.job_id, { pollIntervalMs: 200, timeoutMs: 60_000 });
    blobId = done.blob_id;
    expect(!!blobId, `no blob_id: ${JSON.stringify(done)}`);
  });
  await p("getRememberStatus (unknown job)", async () => `status ${(await sdk.getRememberStatus(crypto.randomUUID())).status}`);
  await p("recall (x-seal-session)", async () => {
    const r = await sdk.recall({ query: "what tea?", limit: 5 });
    expect(r.results[0]?.text === "The compat suite's TypeScript client prefers jasmine tea", `top result ${JSON.stringify(r.results[0])}`);
  });
  await p("rememberBulkAsync + getRememberBulkStatus", async () => {
    const { job_ids } = await sdk.rememberBulkAsync([{ text: "Bulk one: the office is in Lisbon" }, { text: "Bulk two: lunch at noon" }]);
    for (const id of job_ids) await sdk.waitForRememberJob(id, { pollIntervalMs: 200, timeoutMs: 60_000 });
    const s = await sdk.getRememberBulkStatus(job_ids);
    expect(s.results.every((x) => x.status === "done"), JSON.stringify(s.results));
  });
  await p("embed", async () => `${(await sdk.embed("hello")).vector.length} dims`);
  await p("analyze", async () => `${(await sdk.analyze("I moved to Porto last year. I like surfing.")).fact_count} facts`);
  await p("restore", async () => `total ${(await sdk.restore("compat-ts", 10)).total}`);
  return rows;
}
