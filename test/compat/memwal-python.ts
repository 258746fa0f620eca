// Drivers: MemWal's Python SDK (packages/python-sdk-memwal) and its server's own test suite (services/server/tests),
// both unmodified, run by a Python that has Debian's python3-nacl and python3-httpx (the only dependencies they need;
// `apt-get install -y python3-nacl python3-httpx`). The SDK is imported from the checkout (PYTHONPATH); the calls are
// made by a short script of ours; the server tests run as MemWal's CI runs them, pointed at the stack by their
// variables (TEST_BASE_URL, TEST_DELEGATE_KEY, TEST_ACCOUNT_ID).
import { execFile } from "node:child_process";
import { createServer, connect, type Server } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { MemrelayClient } from "../../client/memrelay-client.ts";
import { oneLine, type CompatContext, type CompatRow } from "./rows.ts";

const run = promisify(execFile);
const SDK = "Python SDK (python-sdk-memwal)";
const TESTS = "server tests (services/server/tests)";
const APT = "apt-get install -y python3-nacl python3-httpx";

/** The first Python that imports nacl and httpx: Debian's own first, since that is where apt installs them. */
async function findPython(): Promise<string | undefined> {
  for (const py of ["/usr/bin/python3", "python3"]) {
    const ok = await run(py, ["-c", "import nacl, httpx"]).then(() => true, () => false);
    if (ok) return py;
  }
  return undefined;
}

/** Runs a Python file or `-c` program; resolves with its output and exit code whatever they are. */
async function python(py: string, args: string[], env: Record<string, string>, timeoutMs = 300_000): Promise<{ code: number; out: string }> {
  return run(py, args, { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: typeof err.code === "number" ? err.code : 1, out: (err.stdout ?? "") + (err.stderr ?? "") }),
  );
}

// Our calls of the SDK's public API; one JSON line per call: {call, ok, detail}.
const SDK_CALLS = String.raw`
import asyncio, json, os, sys, traceback, uuid
from memwal import MemWal
from memwal.types import RememberBulkItem

def row(call, ok, detail=""):
    print(json.dumps({"call": call, "ok": ok, "detail": detail}), flush=True)

async def probe(call, fn):
    try:
        row(call, True, str(await fn() or ""))
    except Exception as e:
        row(call, False, f"{type(e).__name__}: {e}")

async def main():
    async with MemWal.create(key=os.environ["TEST_DELEGATE_KEY"], account_id=os.environ["TEST_ACCOUNT_ID"], server_url=os.environ["TEST_BASE_URL"], namespace="compat-py") as m:
        async def health():
            h = await m.health()
            assert h.status == "ok", h
        await probe("health", health)
        async def remember():
            a = await m.remember("The compat suite's Python client drinks rooibos")
            done = await m.wait_for_remember_job(a.job_id, poll_interval_ms=200, timeout_ms=60000)
            assert done.blob_id, done
        await probe("remember + wait_for_remember_job", remember)
        async def recall():
            r = await m.recall("what does the python client drink?", limit=5)
            assert r.results and r.results[0].text == "The compat suite's Python client drinks rooibos", r
        await probe("recall (x-seal-session)", recall)
        async def bulk():
            a = await m.remember_bulk_async([RememberBulkItem(text="Python bulk one"), RememberBulkItem(text="Python bulk two")])
            for jid in a.job_ids:
                await m.wait_for_remember_job(jid, poll_interval_ms=200, timeout_ms=60000)
            return f"{len(a.job_ids)} jobs done"
        await probe("remember_bulk_async", bulk)
        async def embed():
            return f"{len((await m.embed('hello')).vector)} dims"
        await probe("embed", embed)
        async def analyze():
            r = await m.analyze("I moved to Porto last year. I like surfing.")
            return f"{len(r.facts)} facts"
        await probe("analyze", analyze)
        async def restore():
            return f"total {(await m.restore('compat-py', 10)).total}"
        await probe("restore", restore)

asyncio.run(main())
`;

function clientEnv(ctx: CompatContext, extra: Record<string, string> = {}): Record<string, string> {
  return { ...ctx.env, TEST_BASE_URL: ctx.relayerUrl, TEST_DELEGATE_KEY: ctx.delegatePrivateKeyHex, TEST_ACCOUNT_ID: ctx.accountId, PYTHONDONTWRITEBYTECODE: "1", ...extra };
}

export async function memwalPythonSdk(ctx: CompatContext): Promise<CompatRow[]> {
  const py = await findPython();
  if (!py) return [{ client: SDK, call: "(all)", ok: false, skipped: true, detail: `no Python with nacl and httpx: ${APT}` }];
  const env = clientEnv(ctx, { PYTHONPATH: join(ctx.memwalRepo, "packages", "python-sdk-memwal") });
  const { code, out } = await python(py, ["-c", SDK_CALLS], env);
  const rows: CompatRow[] = [];
  for (const line of out.split("\n")) {
    if (!line.startsWith("{")) continue;
    const r = JSON.parse(line) as { call: string; ok: boolean; detail: string };
    rows.push({ client: SDK, call: r.call, ok: r.ok, ...(r.detail ? { detail: oneLine(r.detail) } : {}) });
  }
  if (!rows.length || (code !== 0 && rows.every((r) => r.ok))) rows.push({ client: SDK, call: "(run)", ok: false, detail: oneLine(out.slice(-400)) });
  return rows;
}

/**
 * The jobs e2e_test.py's size checks accepted (64 KiB and 512 KiB remembers): the test only looks at the 202's body
 * (for an `id`), so whether those texts are ever indexed shows only in their job status. Parsed from its failure
 * lines, which print the body: "large-size remember failed: {'job_id': '…', 'status': 'running'}" (once as it fails,
 * once more in the summary at the end: one entry per job).
 */
export function sizeCheckJobs(out: string): { size: string; jobId: string }[] {
  const jobs = new Map<string, string>();
  for (const m of out.matchAll(/(64 KiB|large-size) remember failed: \{'job_id': '([0-9a-f-]{36})'/g)) jobs.set(m[2]!, m[1] === "64 KiB" ? "64 KiB" : "512 KiB");
  return [...jobs].map(([jobId, size]) => ({ size, jobId }));
}

/** Follows the size checks' jobs to a terminal state (long polls of their status, up to 5 minutes each). */
async function followSizeJobs(ctx: CompatContext, e2eOut: string): Promise<CompatRow[]> {
  const client = new MemrelayClient({ baseUrl: ctx.relayerUrl, delegatePrivateKey: Buffer.from(ctx.delegatePrivateKeyHex, "hex"), accountId: ctx.accountId });
  const t0 = performance.now();
  return Promise.all(sizeCheckJobs(e2eOut).map(async ({ size, jobId }) => {
    const call = `${size} remember (its job, followed by this script) reaches done`;
    try {
      const job = await client.waitForJob(jobId, 300_000);
      const after = `${((performance.now() - t0) / 1000).toFixed(1)} s after the test ended`;
      return { client: `${TESTS}: e2e_test.py`, call, ok: job.status === "done", detail: job.status === "done" ? `done ${after}` : oneLine(`${job.status} ${after}${job.error ? `: ${job.error}` : ""}`) };
    } catch (err) {
      return { client: `${TESTS}: e2e_test.py`, call, ok: false, detail: oneLine(err instanceof Error ? err.message : String(err)) };
    }
  }));
}

/** Rows from a test script's `[pass] …` / `[FAIL] …` / `[SKIP] …` lines (its colour codes removed). */
function resultLines(file: string, out: string): CompatRow[] {
  const rows: CompatRow[] = [];
  for (const raw of out.split("\n")) {
    const line = raw.replace(/\x1b\[[0-9;]*m/g, "").trim();
    const m = /^\[(pass|PASS|FAIL|SKIP|skip)\]\s+(.*)$/.exec(line);
    if (!m) continue;
    const verdict = m[1]!.toLowerCase();
    const text = m[2]!;
    // "[pass] GET /health → {…}", "[PASS] no sender → 400", "[FAIL] version: HTTP Error 404"
    const [call, detail] = verdict === "fail" ? splitOnce(text, ": ") : splitOnce(text, " → ");
    rows.push({ client: `${TESTS}: ${file}`, call: oneLine(call, 120), ok: verdict === "pass", ...(verdict === "skip" ? { skipped: true } : {}), ...(detail ? { detail: oneLine(detail, verdict === "fail" ? 240 : 100) } : {}) });
  }
  return rows;
}

function splitOnce(s: string, sep: string): [string, string] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, ""] : [s.slice(0, i), s.slice(i + sep.length)];
}

/** A TCP relay from a fixed local port to the relayer, for a test that hard-codes its server address; undefined when the port is taken. */
async function relayFrom(port: number, target: URL): Promise<Server | undefined> {
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", close);
    upstream.on("error", close);
  });
  return new Promise((resolve) => {
    server.once("error", () => resolve(undefined));
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

export async function memwalServerTests(ctx: CompatContext): Promise<CompatRow[]> {
  const py = await findPython();
  if (!py) return [{ client: TESTS, call: "(all)", ok: false, skipped: true, detail: `no Python with nacl and httpx: ${APT}` }];
  const dir = join(ctx.memwalRepo, "services", "server", "tests");
  const env = clientEnv(ctx, { PYTHONPATH: join(ctx.memwalRepo, "packages", "python-sdk-memwal") });
  const rows: CompatRow[] = [];

  const e2e = await python(py, [join(dir, "e2e_test.py")], env);
  rows.push(...resultLines("e2e_test.py", e2e.out));
  rows.push(...(await followSizeJobs(ctx, e2e.out)));

  const sponsor = await python(py, [join(dir, "test_sponsor_rate_limit.py")], env);
  rows.push(...resultLines("test_sponsor_rate_limit.py", sponsor.out));

  const live = await python(py, [join(dir, "live_remember_terminal_state_check.py")], env);
  rows.push({ client: `${TESTS}: live_remember_terminal_state_check.py`, call: "remember + poll to a terminal state (Python SDK)", ok: live.code === 0, detail: oneLine(live.out.split("\n").find((l) => l.startsWith("RESULT") || l.startsWith("TERMINAL")) ?? live.out.slice(-200)) });

  // It hard-codes http://localhost:3001 and signs the old four-field message; MemWal answers it 426.
  const relay = await relayFrom(3001, new URL(ctx.relayerUrl));
  if (!relay) {
    rows.push({ client: `${TESTS}: test_rate_limit_redis.py`, call: "old four-field signature (no x-nonce)", ok: false, skipped: true, detail: "port 3001 (hard-coded in the test) is taken" });
  } else {
    try {
      const old = await python(py, [join(dir, "test_rate_limit_redis.py")], env);
      const status = /→ HTTP (\d+): (.*)/.exec(old.out);
      rows.push({ client: `${TESTS}: test_rate_limit_redis.py`, call: "old four-field signature (no x-nonce) → 426 Upgrade Required", ok: status?.[1] === "426", detail: oneLine(status ? `HTTP ${status[1]}: ${status[2]}` : old.out.slice(-200)) });
    } finally {
      relay.close();
    }
  }
  rows.push({ client: `${TESTS}: test_analyze_rate_limit.py`, call: "(all)", ok: false, skipped: true, detail: "flushes MemWal's Redis rate-limit keys on localhost:6379; the relayer keeps its limits in Postgres" });
  return rows;
}
