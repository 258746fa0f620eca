// Black-box: operator alerts on the ALERTS stream. A consumer is set up the way the README tells operators to (a
// durable JetStream consumer on ALERTS, with @nats-io/jetstream, and `memrelay alerts tail`), a webhook is a local
// node:http server, and the stack runs with wallets that have no gas (jobs fail after 5 wallet attempts) or with a
// webhook that never answers.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { generateKeypair } from "../adapters/chain/local/accounts.ts";
import { parseWalletKey } from "../adapters/chain/wallet-pool.ts";
import { resetProjection, readCheckpoint } from "../projections/runtime.ts";
import { ALERTS_PROJECTION } from "../projections/relayer/alerts.ts";
import { BalanceMonitor, monitoredWallets } from "../actors/relayer/balance-monitor.ts";
import { silentLogger } from "../config/logger.ts";
import { alertsCommand } from "../cli/alerts.ts";
import { ALERT_SUBJECTS, type Alert, type UploadFailedAlert, type WalletLowBalanceAlert } from "../schemas/alerts.ts";
import { storedBlobId } from "./support/blob-ids.ts";

const bin = fileURLToPath(new URL("../bin/memrelay.mjs", import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(probe: () => Promise<T | undefined | false>, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(150);
  }
}

/** A webhook receiver: records every request; `answer` decides the status (or null: never answer). */
async function startWebhook(answer: (n: number) => number | null) {
  const requests: { n: number; status: number | null; headers: IncomingHttpHeaders; body: Alert }[] = [];
  let n = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const status = answer(++n);
      requests.push({ n, status, headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) });
      if (status !== null) res.writeHead(status, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/hooks/memrelay`,
    requests,
    /** Bodies the webhook accepted (answered 2xx). */
    accepted: () => requests.filter((r) => r.status !== null && r.status < 300),
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** What the README tells operators: a durable pull consumer on ALERTS, acknowledging each alert once handled. */
class ReadmeConsumer {
  readonly received: { alert: Alert; msgId: string | undefined; at: number }[] = [];
  private stopFn?: () => void;
  constructor(private readonly js: JetStreamClient, private readonly jsm: JetStreamManager, readonly name: string, private readonly subject: string) {}
  async start() {
    await this.jsm.consumers.add("ALERTS", { durable_name: this.name, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, filter_subject: this.subject });
    const consumer = await this.js.consumers.get("ALERTS", this.name);
    const messages = await consumer.consume();
    this.stopFn = () => messages.stop();
    void (async () => {
      for await (const m of messages) this.handle(m);
    })();
  }
  private handle(m: JsMsg) {
    this.received.push({ alert: m.json<Alert>(), msgId: m.headers?.get("Nats-Msg-Id"), at: Date.now() });
    m.ack();
  }
  stop() {
    this.stopFn?.();
  }
}

async function tail(env: Record<string, string>, args: string[]): Promise<{ code: number | null; lines: Alert[]; stderr: string }> {
  const child = spawn(process.execPath, [bin, "alerts", "tail", ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const code = await new Promise<number | null>((resolve) => {
    // Generous: a loaded CI machine can take a while just to start tsx.
    const timer = setTimeout(() => child.kill("SIGTERM"), 90_000);
    child.once("exit", (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  return { code, lines: out.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Alert), stderr: err };
}

async function streamCount(jsm: JetStreamManager, subject: string): Promise<number> {
  const info = await jsm.streams.info("ALERTS", { subjects_filter: subject });
  return Number((info.state.subjects as Record<string, number> | undefined)?.[subject] ?? 0);
}

const WINDOW_SECS = 5;

describe("alerts from a stack whose upload wallets have no gas", () => {
  let t: TestStack;
  let nc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  let webhook: Awaited<ReturnType<typeof startWebhook>>;
  let failures: ReadmeConsumer;
  let lowBalance: ReadmeConsumer;
  let uploaders: string[];
  const sponsor = generateKeypair().keypair.address;

  beforeAll(async () => {
    // The webhook refuses the first two posts: delivery must retry, not drop.
    webhook = await startWebhook((n) => (n <= 2 ? 503 : 200));
    t = await startTestStack(
      {
        ALERT_WEBHOOK_URL: webhook.url,
        ALERT_WEBHOOK_RETRY_BASE_MS: "100",
        BALANCE_MONITOR_INTERVAL_SECS: "1",
        WALLET_BALANCE_LOW_ALERT_DEDUP_SECS: String(WINDOW_SECS),
        SPONSOR_WALLET_ADDRESS: sponsor,
      },
      { walletFunding: 0n },
    );
    uploaders = t.stack.config.serverChainPrivateKeys.map((k) => parseWalletKey(k).address);
    nc = await connect({ servers: t.nats.url });
    js = jetstream(nc);
    jsm = await jetstreamManager(nc);
    failures = new ReadmeConsumer(js, jsm, "ops-upload-failures", ALERT_SUBJECTS.uploadFailed);
    lowBalance = new ReadmeConsumer(js, jsm, "ops-low-balance", ALERT_SUBJECTS.walletLowBalance);
    await failures.start();
    await lowBalance.start();
  }, 120_000);
  afterAll(async () => {
    failures?.stop();
    lowBalance?.stop();
    await nc?.close();
    await t?.teardown();
    await webhook?.close();
  });

  it("a job that exhausts its 5 wallet attempts yields exactly one upload-failure alert per job, with no plaintext", async () => {
    const client = await t.client();
    const texts = ["my bank PIN is 8841 and nobody may know", "the spare key is under the blue flowerpot"];
    const { job_ids } = await client.rememberBulk(texts.map((text) => ({ text, namespace: "diary" })));
    for (const id of job_ids) {
      const job = await client.waitForJob(id);
      expect(job.status).toBe("failed");
      expect(job.error).toMatch(/5 wallet attempts/);
    }
    await until(async () => failures.received.length >= 2, 20_000, "two upload-failure alerts");
    await sleep(1_500); // nothing more arrives
    expect(failures.received).toHaveLength(2);
    expect(new Set(failures.received.map((r) => (r.alert as UploadFailedAlert).data.job_id))).toEqual(new Set(job_ids));
    for (const { alert, msgId } of failures.received) {
      const a = alert as UploadFailedAlert;
      expect(a).toMatchObject({ type: "alerts.upload.failed", version: 1, source: "memrelay", network: t.stack.chain.network, severity: "critical" });
      expect(msgId).toBe(a.id);
      expect(a.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(Date.parse(a.occurred_at)).toBeGreaterThan(0);
      expect(a.text).toContain(a.data.job_id);
      const d = a.data;
      expect(d.owner).toMatch(/^0x[0-9a-f]{64}$/);
      expect(d.namespace).toBe("diary");
      // The blob uploaded; recording the blob object on chain needs gas, which no wallet has.
      expect(d.stage).toBe("record");
      expect(storedBlobId(d.blob_id!), d.blob_id).toBe(true);
      expect(d.attempts).toBe(5);
      expect(d.max_attempts).toBe(5);
      expect(d.wallet_attempts).toHaveLength(5);
      // Round-robin over the pool, shared by concurrent jobs: every attempt used an uploader wallet.
      for (const w of d.wallet_attempts) expect(uploaders).toContain(w.wallet);
      expect(d.wallet_attempts.map((w) => w.attempt)).toEqual([1, 2, 3, 4, 5]);
      expect(d.error).toMatch(/insufficient|gas/i);
      expect(d.event_seq).toBeGreaterThan(0);
      const json = JSON.stringify(a);
      for (const text of texts) for (const word of text.split(" ").filter((w) => w.length > 4)) expect(json).not.toContain(word);
    }
  });

  it("replaying the alerts projection from sequence 1 does not alert history again", async () => {
    const before = await streamCount(jsm, ALERT_SUBJECTS.uploadFailed);
    expect(before).toBe(2);
    const head = (await jsm.streams.info("EVT")).state.last_seq;
    const projection = t.stack.relayer.projections.find((r) => r.projection.name === ALERTS_PROJECTION)!.projection;
    await resetProjection(t.stack.db, projection);
    // The running projection notices the rewind and walks the log again up to its end.
    await until(async () => (await readCheckpoint(t.stack.db, ALERTS_PROJECTION)) >= head, 20_000, "the replay to reach the head");
    await sleep(500);
    expect(await streamCount(jsm, ALERT_SUBJECTS.uploadFailed)).toBe(2);
    expect(failures.received).toHaveLength(2);
  });

  it("low balances alert once per (network, wallet type, token, address) per window, across replicas, and again after it", async () => {
    // A second monitor on its own connection, as another relayer replica would run it.
    const replicaNc = await connect({ servers: t.nats.url });
    const replica = new BalanceMonitor({
      chain: t.stack.chain,
      js: jetstream(replicaNc),
      dedup: await new Kvm(replicaNc).open("alert_dedup"),
      logger: silentLogger,
      wallets: monitoredWallets({ uploaders, sponsor, uploaderWal: 50_000_000_000n, uploaderSui: 5_000_000_000n, sponsorSui: 5_000_000_000n }),
      intervalSecs: 1,
      dedupWindowSecs: WINDOW_SECS,
    });
    replica.start();
    try {
      const keyOf = (a: WalletLowBalanceAlert) => `${a.network}/${a.data.wallet_type}/${a.data.token}/${a.data.address}`;
      const expected = new Set([...uploaders.flatMap((u) => [`uploader/WAL/${u}`, `uploader/SUI/${u}`]), `sponsor/SUI/${sponsor}`].map((k) => `${t.stack.chain.network}/${k}`));
      const byKey = () => {
        const m = new Map<string, WalletLowBalanceAlert[]>();
        for (const { alert } of lowBalance.received) {
          const a = alert as WalletLowBalanceAlert;
          m.set(keyOf(a), [...(m.get(keyOf(a)) ?? []), a]);
        }
        return m;
      };
      await until(async () => expected.size === byKey().size && [...byKey().values()].every((l) => l.length >= 2), (WINDOW_SECS * 2 + 15) * 1000, "a second alert per key after the window");
      const groups = byKey();
      expect(new Set(groups.keys())).toEqual(expected);
      for (const [key, list] of groups) {
        const [first, second] = list;
        const gap = Date.parse(second.occurred_at) - Date.parse(first.occurred_at);
        expect(gap, key).toBeGreaterThanOrEqual(WINDOW_SECS * 1000);
        // Polled every second: the next alert comes within about a round of the window's end.
        expect(gap, key).toBeLessThan((WINDOW_SECS + 4) * 1000);
        expect(first.id).not.toBe(second.id);
        expect(first).toMatchObject({ type: "alerts.wallet.low_balance", version: 1, severity: "warning", source: "memrelay" });
        expect(first.data).toMatchObject({ balance: "0", dedup_window_secs: WINDOW_SECS });
        if (first.data.wallet_type === "uploader") {
          expect(first.data.wallet_index).toBe(uploaders.indexOf(first.data.address));
          expect(first.data.threshold).toBe(first.data.token === "WAL" ? "50000000000" : "5000000000");
        } else {
          expect(first.data.wallet_index).toBeUndefined();
          expect(first.data.threshold).toBe("5000000000");
        }
      }
      // Within any one window, one alert per key (two monitors, each polling every second).
      for (const [key, list] of groups) {
        for (let i = 1; i < list.length; i++) expect(Date.parse(list[i].occurred_at) - Date.parse(list[i - 1].occurred_at), key).toBeGreaterThanOrEqual(WINDOW_SECS * 1000);
      }
    } finally {
      await replica.stop();
      await replicaNc.close();
    }
  }, 60_000);

  it("posts every alert to ALERT_WEBHOOK_URL, retrying a failing webhook", async () => {
    const ids = [...failures.received, ...lowBalance.received].map((r) => r.alert.id);
    await until(async () => ids.every((id) => webhook.accepted().some((r) => r.body.id === id)), 30_000, "the webhook to receive every alert");
    expect(webhook.requests.slice(0, 2).every((r) => r.status === 503)).toBe(true);
    const accepted = webhook.accepted();
    // At-least-once, and here exactly once per alert: each accepted post is a distinct alert.
    expect(new Set(accepted.map((r) => r.body.id)).size).toBe(accepted.length);
    for (const r of accepted) {
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.headers["idempotency-key"]).toBe(r.body.id);
      expect(r.headers["x-memrelay-alert-type"]).toBe(r.body.type);
      expect(r.headers["x-memrelay-alert-version"]).toBe("1");
    }
    const posted = accepted.find((r) => r.body.type === ALERT_SUBJECTS.uploadFailed)!.body;
    expect(posted).toEqual(failures.received.find((x) => x.alert.id === posted.id)!.alert);
  });

  it("memrelay alerts tail prints alerts as JSON lines; with --durable it resumes after the last one printed", async () => {
    const env = { NATS_URL: t.nats.url };
    const [all, first] = await Promise.all([
      tail(env, ["--all", "--subject", ALERT_SUBJECTS.uploadFailed, "--count", "2"]),
      tail(env, ["--durable", "ops-cli", "--all", "--subject", ALERT_SUBJECTS.uploadFailed, "--count", "1"]),
    ]);
    expect(all.code, all.stderr).toBe(0);
    expect(all.lines.map((a) => a.id).sort()).toEqual(failures.received.map((r) => r.alert.id).sort());
    const second = await tail(env, ["--durable", "ops-cli", "--subject", ALERT_SUBJECTS.uploadFailed, "--count", "1"]);
    expect(first.code, first.stderr).toBe(0);
    expect(second.code, second.stderr).toBe(0);
    expect(first.lines).toHaveLength(1);
    expect(second.lines).toHaveLength(1);
    expect(new Set([first.lines[0].id, second.lines[0].id])).toEqual(new Set(failures.received.map((r) => r.alert.id)));
    expect(await alertsCommand(["tail", "--since", "yesterday-ish"], env)).toBe(2);
    expect(await alertsCommand(["tail", "--subject", "evt.job.>"], env)).toBe(2);
  }, 240_000);
});

describe("a dead webhook", () => {
  let t: TestStack;
  let webhook: Awaited<ReturnType<typeof startWebhook>>;
  const sponsor = generateKeypair().keypair.address;

  beforeAll(async () => {
    // Accepts connections and reads requests, never answers.
    webhook = await startWebhook(() => null);
    t = await startTestStack({
      ALERT_WEBHOOK_URL: webhook.url,
      ALERT_WEBHOOK_TIMEOUT_MS: "300",
      ALERT_WEBHOOK_RETRY_BASE_MS: "50",
      BALANCE_MONITOR_INTERVAL_SECS: "1",
      SPONSOR_WALLET_ADDRESS: sponsor,
    });
  }, 120_000);
  afterAll(async () => {
    await t?.teardown();
    await webhook?.close();
  });

  it("stalls nothing: jobs complete, recall answers, alerts reach the stream while posts keep timing out", async () => {
    const client = await t.client();
    const t0 = Date.now();
    const { job_ids } = await client.rememberBulk(Array.from({ length: 20 }, (_, i) => ({ text: `note ${i}: the ferry to the island leaves at ${7 + (i % 10)} am` })));
    const jobs = await Promise.all(job_ids.map((id) => client.waitForJob(id, 30_000)));
    expect(jobs.every((j) => j.status === "done")).toBe(true);
    expect(Date.now() - t0).toBeLessThan(20_000);
    const r = await client.recall("when does the ferry leave?", { limit: 3 });
    expect(r.total).toBe(3);

    const nc = await connect({ servers: t.nats.url });
    try {
      const jsm = await jetstreamManager(nc);
      // Funded uploaders are above their thresholds; only the empty sponsor wallet is alerted, once.
      await until(async () => (await streamCount(jsm, ALERT_SUBJECTS.walletLowBalance)) >= 1, 10_000, "the sponsor alert");
      await until(async () => webhook.requests.length >= 3, 15_000, "the webhook to be retried");
      expect(await streamCount(jsm, ALERT_SUBJECTS.walletLowBalance)).toBe(1);
      const stored = await jsm.streams.getMessage("ALERTS", { last_by_subj: ALERT_SUBJECTS.walletLowBalance });
      const alert = stored!.json<WalletLowBalanceAlert>();
      expect(alert.data).toMatchObject({ wallet_type: "sponsor", token: "SUI", address: sponsor, balance: "0" });
      // Every post so far was that one alert, retried.
      expect(new Set(webhook.requests.map((q) => q.body.id))).toEqual(new Set([alert.id]));
      // The pipeline is still fast with the webhook hanging.
      const more = await client.remember("the ferry back leaves at 6 pm");
      expect((await client.waitForJob(more.job_id, 10_000)).status).toBe("done");
    } finally {
      await nc.close();
    }
  }, 60_000);
});
