// The README's first command on CI's fresh clone, before anything else is installed: `npm start` must set itself up,
// answer /health, and exit 0 on SIGTERM having stopped what it started. Its own data directory, credential file and
// free ports, so the machine's ~/.memrelay, ~/.memory and default ports are left alone; HOME stays, since npm reads
// the machine's configuration there (here its nodedir: a native dependency's build cannot download Node's headers).
// Plain JavaScript: node_modules may not exist yet.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
// Set-up included: npm ci on a fresh clone, nats-server from apt when missing.
const HEALTH_WITHIN_MS = 15 * 60_000;
const STOP_WITHIN_MS = 30_000;

const freePort = () =>
  new Promise((res, rej) => {
    const srv = createServer().once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });

const work = mkdtempSync(join(tmpdir(), "memrelay-npm-start-"));
const dataDir = join(work, "data");
const port = await freePort();
const env = { ...process.env, MEMRELAY_DATA_DIR: dataDir, MEMORY_CREDENTIALS_FILE: join(work, "credentials.json"), PORT: String(port), BLOBSTORE_PORT: "0", CONSOLE_PORT: "0", SIDECAR_URL: "http://127.0.0.1:0", DASHBOARD_PORT: "0", npm_config_update_notifier: "false" };
// npm start must find (or start) its own NATS and Postgres, as on a newcomer's machine.
delete env.NATS_URL;
delete env.DATABASE_URL;

const started = Date.now();
const seconds = (from) => ((Date.now() - from) / 1000).toFixed(1);
// Its own process group, so a failed check can end everything it started; the SIGTERM of the check goes to npm only.
const child = spawn("npm", ["start"], { cwd: root, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
let output = "";
// Shown as whole lines, each marked as npm start's (its two streams interleave by chunk).
const partial = { stdout: "", stderr: "" };
for (const [name, stream] of [["stdout", child.stdout], ["stderr", child.stderr]]) {
  stream.on("data", (d) => {
    output += d;
    const lines = (partial[name] + d).split("\n");
    partial[name] = lines.pop();
    for (const line of lines) process.stdout.write(`npm start | ${line}\n`);
  });
}
const exited = new Promise((res) => child.once("exit", (code, signal) => res({ code, signal })));
let exit;
void exited.then((e) => (exit = e));

function fail(why) {
  console.error(`\n.ci: npm start check FAILED: ${why}\n(its output is above, prefixed "npm start | ")`);
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
  cleanUp();
  process.exit(1);
}

/** The native database npm start made for this data directory (embedded PGlite leaves nothing behind). */
function cleanUp() {
  const url = /^ {2}DATABASE_URL=(\S+)/m.exec(output)?.[1];
  const admin = process.env.MEMRELAY_NATIVE_PG ?? "postgres://postgres@127.0.0.1:5432/postgres";
  if (url && new URL(url).host === new URL(admin).host && /^\/memrelay_[0-9a-f]+$/.test(new URL(url).pathname)) {
    spawnSync("psql", [admin, "-q", "-c", `DROP DATABASE IF EXISTS ${new URL(url).pathname.slice(1)} WITH (FORCE)`], { stdio: "inherit" });
  }
  rmSync(work, { recursive: true, force: true });
}

const health = `http://127.0.0.1:${port}/health`;
for (;;) {
  if (exit) fail(`it exited (${exit.signal ?? `status ${exit.code}`}) before ${health} answered`);
  if (Date.now() - started > HEALTH_WITHIN_MS) fail(`${health} did not answer within ${HEALTH_WITHIN_MS / 60_000} minutes`);
  const ok = await fetch(health, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false);
  if (ok) break;
  await new Promise((r) => setTimeout(r, 250));
}
const up = seconds(started);

const stopping = Date.now();
child.kill("SIGTERM");
const stopped = await Promise.race([exited, new Promise((r) => setTimeout(() => r(undefined), STOP_WITHIN_MS))]);
if (!stopped) fail(`still running ${STOP_WITHIN_MS / 1000} s after SIGTERM`);
if (stopped.code !== 0) fail(`SIGTERM ended it with ${stopped.signal ?? `exit status ${stopped.code}`}, not 0`);
if (existsSync(join(dataDir, "stack.json"))) fail("it exited without removing its stack file (it did not stop what it started)");
console.log(`.ci: npm start answered /health ${up} s after it was run (set-up included) and exited 0 ${seconds(stopping)} s after SIGTERM`);
cleanUp();
