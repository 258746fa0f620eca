// Issue 28 §2 and §3, black-box as users run `memrelay start`: two stacks from two HOMEs side by side never share
// state (each its own database and event log; each remembers and recalls only its own; no read model rebuilt); a
// listener whose address is taken names the variable that moves it; and SIGTERM stops a stack within 10 s while a
// job is wedged in an effect (its blob store never answers), the job ending after a restart.
import { afterAll, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { databaseNameFor, startNats } from "../cli/services.ts";
import { freePort } from "./support/nats-server.ts";
import { adminUrl } from "./support/postgres.ts";
import { cleanEnv, memrelay, natsServersOf, startStack, type StartedStack } from "./support/start-process.ts";
import { startSilentServer } from "./support/tcp-proxy.ts";
import { startStackWithoutActorHost } from "./support/stack.ts";
import { startWorkerProcess, type WorkerProcess } from "./support/worker-process.ts";

const dirs: string[] = [];
const dataDirs: string[] = [];

/** A user of their own: a HOME and its default data directory (~/.memrelay). */
function newUser(tag: string): { home: string; dataDir: string; env: (extra?: Record<string, string>) => Record<string, string> } {
  const home = mkdtempSync(join(tmpdir(), `memrelay-${tag}-`));
  const dataDir = join(home, ".memrelay");
  dirs.push(home);
  dataDirs.push(dataDir);
  return { home, dataDir, env: (extra = {}) => cleanEnv(home, dataDir, extra) };
}

/** Signals the process and waits (30 s at most, then SIGKILL) for it to exit: its exit code and how long it took. */
async function stopped(s: StartedStack | WorkerProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<{ code: number | null; ms: number }> {
  const child = "child" in s ? s.child : s;
  const exited = child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const t0 = Date.now();
  child.kill(signal);
  const code = await Promise.race([exited, new Promise<"late">((r) => setTimeout(() => r("late"), 30_000))]);
  if (code === "late") child.kill("SIGKILL");
  return { code: code === "late" ? null : code, ms: Date.now() - t0 };
}

/** A port something else listens on. */
async function takenPort(): Promise<{ port: number; release: () => void }> {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", () => r()));
  return { port: (blocker.address() as { port: number }).port, release: () => blocker.close() };
}

afterAll(async () => {
  // A stack that had to be killed leaves its nats-server behind.
  for (const d of dataDirs) for (const pid of natsServersOf(d)) process.kill(pid, "SIGKILL");
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  for (const d of dataDirs) await admin.query(`DROP DATABASE IF EXISTS ${databaseNameFor(d)} WITH (FORCE)`).catch(() => undefined);
  await admin.end();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("two stacks on one machine", () => {
  it("from two HOMEs, side by side: each remembers and recalls only its own, and no read model is rebuilt", async () => {
    const alice = newUser("alice");
    const bob = newUser("bob");
    // One after the other: both would take nats-server's 4222 when it is free (the second then takes another port).
    const a = startStack(alice.env());
    let b: StartedStack | undefined;
    try {
      await a.running;
      b = startStack(bob.env());
      await b.running;
      const dbOf = (s: StartedStack) => /^\s+DATABASE_URL=(\S+)$/m.exec(s.output())?.[1];
      expect(dbOf(a)).toMatch(new RegExp(`/${databaseNameFor(alice.dataDir)}$`));
      expect(dbOf(b)).toMatch(new RegExp(`/${databaseNameFor(bob.dataDir)}$`));
      expect(dbOf(a)).not.toBe(dbOf(b));

      for (const [user, stack, text] of [
        [alice, a, "Alice keeps the spare key under the blue flowerpot"],
        [bob, b, "Bob parks the red bicycle behind the bakery"],
      ] as const) {
        const r = memrelay(user.env(), "remember", text, "--wait");
        expect(r.status, `${r.out}\n--- its stack:\n${stack.output().slice(-4000)}`).toBe(0);
        expect(r.stdout).toMatch(/"status":"done"/);
      }
      // Right after the done remember (the read model each stack answers from is its own).
      for (const [user, own, other] of [
        [alice, "Alice keeps the spare key under the blue flowerpot", "Bob parks the red bicycle behind the bakery"],
        [bob, "Bob parks the red bicycle behind the bakery", "Alice keeps the spare key under the blue flowerpot"],
      ] as const) {
        const recall = memrelay(user.env(), "recall", "spare key flowerpot red bicycle bakery", "--limit", "10");
        expect(recall.status, recall.out).toBe(0);
        expect(recall.stdout).toContain(own);
        expect(recall.stdout).not.toContain(other);
      }
      for (const s of [a, b]) expect(s.output()).not.toMatch(/rebuilding|event log differs/);
    } finally {
      await Promise.all([stopped(a), b && stopped(b)]);
    }
  }, 300_000);

  it("names the variable to change when the MCP sidecar's or the dashboard's address is taken", async () => {
    for (const variable of ["SIDECAR_URL", "DASHBOARD_PORT"]) {
      const user = newUser(variable.toLowerCase());
      const taken = await takenPort();
      try {
        const s = startStack(user.env(variable === "SIDECAR_URL" ? { SIDECAR_URL: `http://127.0.0.1:${taken.port}` } : { DASHBOARD_PORT: String(taken.port) }));
        const code = await Promise.race([s.exited, new Promise<"running">((r) => setTimeout(() => r("running"), 90_000))]);
        if (code === "running") s.child.kill("SIGKILL");
        expect(code, s.output()).not.toBe("running");
        expect(code).not.toBe(0);
        expect(s.output()).toMatch(new RegExp(`memrelay start failed: .*EADDRINUSE.*127\\.0\\.0\\.1:${taken.port}.*set ${variable} to a free port`));
        expect(existsSync(join(user.dataDir, "stack.json"))).toBe(false);
        expect(natsServersOf(user.dataDir)).toEqual([]);
      } finally {
        taken.release();
      }
    }
  }, 240_000);
});

describe("the services a start brings up", () => {
  it("gives two data directories starting at once a nats-server each, though both find the preferred port free", async () => {
    const [one, two] = [newUser("nats-one"), newUser("nats-two")];
    for (const u of [one, two]) mkdirSync(u.dataDir, { recursive: true });
    // The second start checks the port at various moments of the first one's start-up: before its server binds
    // the port, the second finds it free too (its own server then cannot bind it).
    for (const delayMs of [0, 10, 20, 40, 80, 160]) {
      const preferred = await freePort();
      const first = startNats(one.dataDir, preferred);
      await new Promise((r) => setTimeout(r, delayMs));
      const started = await Promise.allSettled([first, startNats(two.dataDir, preferred)]);
      try {
        const urls = started.map((r) => (r.status === "fulfilled" ? r.value.url : String(r.reason)));
        // Which start binds the preferred port first is a race (at 0 ms the second may win it); what must hold is
        // that one of them has it and the other a port of its own.
        expect(urls, `second start ${delayMs} ms after the first`).toContain(`nats://127.0.0.1:${preferred}`);
        expect(urls[1], `second start ${delayMs} ms after the first`).not.toBe(urls[0]);
        for (const url of urls) expect(url).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
        expect(natsServersOf(one.dataDir)).toHaveLength(1);
        expect(natsServersOf(two.dataDir)).toHaveLength(1);
      } finally {
        for (const r of started) if (r.status === "fulfilled") await r.value.stop();
      }
    }
  }, 60_000);
});

describe("stop means stop", () => {
  it("SIGTERM ends every role within 10 s while a job is wedged in an effect; after a restart the job ends", async () => {
    const user = newUser("wedged");
    // The relayer's blob store accepts the upload's connection and never answers.
    const silent = await startSilentServer();
    const wedged = startStack(user.env({ BLOBSTORE_PUBLISHER_URL: `http://127.0.0.1:${silent.port}` }));
    let jobId: string;
    try {
      await wedged.running;
      const r = memrelay(user.env(), "remember", "The boat keys hang on the third hook");
      expect(r.status, r.out).toBe(0);
      jobId = JSON.parse(r.stdout).job_id;
      const deadline = Date.now() + 30_000;
      while (silent.accepted() === 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100));
      expect(silent.accepted(), "the upload reached the silent blob store").toBeGreaterThan(0);
      const job = JSON.parse(memrelay(user.env(), "status", jobId).stdout);
      expect(job.status).not.toBe("done");
    } catch (err) {
      wedged.child.kill("SIGKILL");
      await silent.close();
      throw err;
    }
    const stop = await stopped(wedged);
    await silent.close();
    expect(stop.code, wedged.output()).toBe(0);
    expect(stop.ms).toBeLessThan(10_000);
    expect(natsServersOf(user.dataDir)).toEqual([]);
    expect(existsSync(join(user.dataDir, "stack.json"))).toBe(false);

    // The job was not acknowledged: the next start (with its own blob store) takes it up again and finishes it.
    const again = startStack(user.env());
    try {
      await again.running;
      const deadline = Date.now() + 90_000;
      let status = "";
      while (status !== "done" && Date.now() < deadline) {
        status = JSON.parse(memrelay(user.env(), "status", jobId).stdout || "{}").status ?? "";
        if (status !== "done") await new Promise((res) => setTimeout(res, 500));
      }
      expect(status).toBe("done");
      const recall = memrelay(user.env(), "recall", "where are the boat keys?");
      expect(recall.stdout).toContain("The boat keys hang on the third hook");
    } finally {
      const end = await stopped(again, "SIGINT");
      expect(end.code).toBe(0);
      expect(end.ms).toBeLessThan(10_000);
    }
  }, 300_000);

  it("SIGINT ends a memrelay worker within 10 s while its job is wedged; the next worker ends the job", async () => {
    const { t, client } = await startStackWithoutActorHost();
    const silent = await startSilentServer();
    try {
      const wedged = await startWorkerProcess(t.stack.workerEnv, "actors", { BLOBSTORE_PUBLISHER_URL: `http://127.0.0.1:${silent.port}` });
      const { job_id } = await client.remember("The canoe paddles lean against the shed");
      const deadline = Date.now() + 30_000;
      while (silent.accepted() === 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100));
      expect(silent.accepted(), "the upload reached the silent blob store").toBeGreaterThan(0);
      const stop = await stopped(wedged, "SIGINT");
      expect(stop.code).toBe(0);
      expect(stop.ms).toBeLessThan(10_000);
      const next = await startWorkerProcess(t.stack.workerEnv, "actors");
      try {
        expect((await client.waitForJob(job_id, 60_000)).status).toBe("done");
      } finally {
        await stopped(next);
      }
    } finally {
      await silent.close();
      await t.teardown();
    }
  }, 180_000);
});
