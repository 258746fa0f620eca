// Black-box, as a new user runs it (issue 11): `memrelay start` in one process, operator commands in another with no
// NATS_URL or DATABASE_URL — they find the stack through <data dir>/stack.json (0600). Each data directory gets its
// own database. A start step that fails stops what was started and exits non-zero.
import { afterAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { databaseNameFor } from "../cli/services.ts";
import { adminUrl } from "./support/postgres.ts";
import { cleanEnv as cleanEnvOf, memrelay as memrelayWith, memrelayBin, natsServersOf, startStack as startStackWith } from "./support/start-process.ts";

const home = mkdtempSync(join(tmpdir(), "memrelay-home-"));
const dataDirs: string[] = [];
const bin = memrelayBin;
const cleanEnv = (dataDir: string, extra: Record<string, string> = {}) => cleanEnvOf(home, dataDir, extra);
const startStack = (dataDir: string, extra: Record<string, string> = {}) => startStackWith(cleanEnv(dataDir, extra));
const memrelay = (dataDir: string, ...args: string[]) => memrelayWith(cleanEnv(dataDir), ...args);

afterAll(async () => {
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  for (const d of dataDirs) await admin.query(`DROP DATABASE IF EXISTS ${databaseNameFor(d)} WITH (FORCE)`).catch(() => undefined);
  await admin.end();
  for (const d of [...dataDirs, home]) rmSync(d, { recursive: true, force: true });
});

describe("memrelay start and the operator commands in a second terminal", () => {
  it("prints copyable URLs, writes a 0600 stack file the commands use without variables, and removes it on stop", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "memrelay-op-"));
    dataDirs.push(dataDir);
    const s = startStack(dataDir);
    try {
      await s.running;
      const out = s.output();
      expect(out).toMatch(/^\s+NATS_URL=nats:\/\/127\.0\.0\.1:\d+$/m);
      expect(out).toMatch(new RegExp(`^\\s+DATABASE_URL=postgres://\\S+/${databaseNameFor(dataDir)}$`, "m"));
      const file = join(dataDir, "stack.json");
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const info = JSON.parse(readFileSync(file, "utf8"));
      expect(out).toContain(`NATS_URL=${info.nats_url}`);

      const lag = memrelay(dataDir, "lag");
      expect(lag.out).toMatch(/memory_index\s+checkpoint/);
      expect(lag.status).toBe(0);
      // A reader that leaves early is not an error (it was an unhandled EPIPE with a stack trace).
      const piped = spawnSync("bash", ["-c", `"${process.execPath}" "${bin}" lag | head -1; exit \${PIPESTATUS[0]}`], { env: cleanEnv(dataDir), encoding: "utf8", timeout: 60_000 });
      expect(piped.stderr).not.toMatch(/EPIPE|Error/);
      expect(piped.status).toBe(0);
      expect(piped.stdout.trim().split("\n")).toHaveLength(1);
      const user = memrelay(dataDir, "console", "signup", "--email", "new@example.com", "--json");
      expect(user.status, user.out).toBe(0);
      expect(JSON.parse(user.out).user_id).toMatch(/^[0-9a-f-]{36}$/);
      const key = memrelay(dataDir, "blobstore", "admin-key", "issue", "--app", "first-app", "--json");
      expect(key.status, key.out).toBe(0);
      expect(JSON.parse(key.out).secret).toMatch(/^[0-9a-f]{64}$/);
    } finally {
      s.child.kill("SIGTERM");
    }
    expect(await s.exited).toBe(0);
    expect(existsSync(join(dataDir, "stack.json"))).toBe(false);
    expect(natsServersOf(dataDir)).toEqual([]);
    // With no stack running, the commands say where they looked and what to do.
    const none = memrelay(dataDir, "lag");
    expect(none.status).not.toBe(0);
    expect(none.out).toMatch(/no running `memrelay start` was found/);
  }, 180_000);

  it("rebuilds the index after an embedder change and re-embeds the dev account's memories, with progress", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "memrelay-embedder-"));
    dataDirs.push(dataDir);
    const first = startStack(dataDir, { MEMRELAY_EMBEDDING_DIMS: "256" });
    try {
      await first.running;
      const r = spawnSync(process.execPath, [bin, "remember", "The spare key is under the blue flowerpot", "--wait"], { env: cleanEnv(dataDir), encoding: "utf8", timeout: 60_000 });
      expect(r.status, r.stdout + r.stderr).toBe(0);
    } finally {
      first.child.kill("SIGTERM");
    }
    expect(await first.exited).toBe(0);
    // Another embedder (other dimensions): no refusal, a rebuild and a re-embed.
    const second = startStack(dataDir, { MEMRELAY_EMBEDDING_DIMS: "384" });
    try {
      await second.running;
      const end = Date.now() + 60_000;
      while (!/re-embedded \d+ memories/.test(second.output()) && Date.now() < end) await new Promise((res) => setTimeout(res, 200));
      expect(second.output()).toMatch(/re-embedding \(hashing-v1-d256\S* → hashing-v1-d384\S*\)/);
      expect(second.output()).toMatch(/re-embedded 1 memories of the dev account in 1 namespace\(s\) \(0 could not be opened\)/);
      const recall = spawnSync(process.execPath, [bin, "recall", "where is the spare key?"], { env: cleanEnv(dataDir), encoding: "utf8", timeout: 60_000 });
      expect(recall.stdout, recall.stderr).toContain("The spare key is under the blue flowerpot");
    } finally {
      second.child.kill("SIGTERM");
    }
    expect(await second.exited).toBe(0);
  }, 240_000);

  it("gives every data directory its own database, the default one of each HOME included", () => {
    const a = databaseNameFor("/srv/one");
    const b = databaseNameFor("/srv/two");
    expect(a).not.toBe(b);
    expect(a).toMatch(/^memrelay_[0-9a-f]{12}$/);
    // Two users' (or two HOMEs') default ~/.memrelay: no shared name such as `memrelay`.
    expect(databaseNameFor("/home/alice/.memrelay")).not.toBe(databaseNameFor("/home/bob/.memrelay"));
    expect(databaseNameFor(join(homedir(), ".memrelay"))).toMatch(/^memrelay_[0-9a-f]{12}$/);
  });

  it("stops everything it started and exits non-zero when a later step fails", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "memrelay-fail-"));
    dataDirs.push(dataDir);
    // The blob store's port is taken: NATS, Postgres, the chain and the key servers are up by then.
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", () => r()));
    const port = (blocker.address() as { port: number }).port;
    try {
      const s = startStack(dataDir, { BLOBSTORE_PORT: String(port) });
      const code = await Promise.race([s.exited, new Promise<string>((r) => setTimeout(() => r("still running"), 60_000))]);
      if (code === "still running") s.child.kill("SIGKILL");
      expect(code).not.toBe("still running");
      expect(code).not.toBe(0);
      expect(s.output()).toMatch(/memrelay start failed/);
      expect(existsSync(join(dataDir, "stack.json"))).toBe(false);
      expect(natsServersOf(dataDir)).toEqual([]);
    } finally {
      blocker.close();
    }
  }, 120_000);
});
