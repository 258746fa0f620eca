// Black-box (issue 11, defence in depth): a message that an actor or a projection cannot apply never stalls the
// pipeline. Poison is injected straight into the event log and the command queue, bypassing the gateway's
// validation; later jobs of other owners still complete and are recallable, the poison is set aside on the DLQ stream
// with an alert, `memrelay lag` shows it, and the job that carried it reads `failed` with the reason.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { runProjectionsCommand } from "./support/projections-cli.ts";
import { EventStore } from "../eventlog/event-store.ts";
import { STREAMS } from "../eventlog/subjects.ts";
import { JOB_EVENTS } from "../schemas/relayer/remember-job.ts";
import { parseAlert, type DeadLetterV1 } from "../schemas/alerts.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";

let t: TestStack;
let alice: MemrelayClient;
let aliceOwner: string;
let bob: MemrelayClient;

beforeAll(async () => {
  t = await startTestStack();
  const who = await t.stack.createIdentity("alice");
  aliceOwner = who.owner;
  [alice, bob] = await Promise.all([t.client(who), t.client()]);
}, 120_000);
afterAll(async () => t?.teardown());

/** Messages of a stream under a subject filter, decoded. */
async function streamMessages(stream: string, filter: string): Promise<{ subject: string; data: any }[]> {
  const info = await t.stack.log.jsm.streams.info(stream);
  const out: { subject: string; data: any }[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await t.stack.log.jsm.streams.getMessage(stream, { seq }).catch(() => null);
    if (m && (filter === ">" || m.subject.startsWith(filter))) out.push({ subject: m.subject, data: m.json() });
  }
  return out;
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function bobRemembersAndRecalls(text: string, query: string) {
  const accepted = await bob.remember(text, "after-poison");
  expect((await bob.waitForJob(accepted.job_id, 30_000)).status).toBe("done");
  const r = await bob.recall(query, { namespace: "after-poison", limit: 1 });
  expect(r.results[0]?.text).toBe(text);
}

describe("a poison event in the log", () => {
  it("is set aside by the projections that cannot apply it; later jobs of other owners complete", async () => {
    const jobId = randomUUID();
    const dims = t.stack.embedder.dims;
    const vector = Array.from({ length: dims }, (_, i) => (i === 0 ? 1 : 0));
    const namespace = "poison\u0000namespace";
    const store = new EventStore(t.stack.log.js, t.stack.log.jsm);
    const ctx = { causationId: jobId, correlationId: jobId };
    const accepted = await store.append(`job.${jobId}`, [{ type: JOB_EVENTS.accepted, version: 1, data: { owner: aliceOwner, namespace, accepted_at: new Date().toISOString(), text_bytes: 5 } }], 0, ctx);
    await store.append(
      `job.${jobId}`,
      [
        { type: JOB_EVENTS.uploaded, version: 1, data: { blob_id: "poisonblob", size: 5, vector, embedder: "test" } },
        {
          type: JOB_EVENTS.indexed,
          version: 1,
          data: { object_id: `0x${"a".repeat(64)}`, wallet: `0x${"b".repeat(64)}`, owner: aliceOwner, namespace, blob_id: "poisonblob", vector, importance: 0.5, size: 5, created_at: new Date().toISOString() },
        },
      ],
      accepted.seq,
      ctx,
    );

    // Another owner's ordinary work goes through, behind the poison in the log.
    await bobRemembersAndRecalls("The ferry to the island leaves at seven", "when does the ferry leave?");

    // The job that carried the poison reads failed, with the reason, for its owner.
    const job = await until("the poison job to read failed", async () => {
      const j = await alice.job(jobId);
      return j.status === "failed" ? j : undefined;
    });
    expect(job.error).toMatch(/set aside/);
    expect(JSON.stringify(job)).not.toContain("\\u0000");

    // On the DLQ stream: which projection, where, why — never the payload.
    const dead = await until("dead letters", async () => {
      const m = await streamMessages(STREAMS.deadLetters, "dlq.projection.");
      return m.length ? m : undefined;
    });
    const names = dead.map((d) => (d.data as DeadLetterV1).name);
    expect(names).toContain("job_status");
    expect(names).toContain("memory_index");
    for (const d of dead) {
      const rec = d.data as DeadLetterV1;
      expect(rec).toMatchObject({ source: "projection", stream: "EVT", aggregate: `job.${jobId}`, attempts: 3 });
      expect(JSON.stringify(rec)).not.toContain("vector");
    }

    // An alert per set-aside commit, on alerts.deadletter.projection.
    const alerts = await until("dead-letter alerts", async () => {
      const m = (await streamMessages(STREAMS.alerts, "alerts.deadletter.")).map((x) => parseAlert(JSON.stringify(x.data)));
      return m.length >= dead.length ? m : undefined;
    });
    expect(alerts[0]).toMatchObject({ type: "alerts.deadletter.projection", severity: "critical" });

    // `memrelay lag` shows what was set aside, and no lag behind it.
    const lag = await runProjectionsCommand("lag", [], { NATS_URL: t.stack.config.natsUrl, DATABASE_URL: t.database.url });
    expect(lag.rc).toBe(0);
    expect(lag.out).toMatch(/memory_index\s+checkpoint\s+\d+\s+lag 0 events\s+set aside 1 \(dead letters\)/);
    expect(lag.out).toMatch(/job_status\s+checkpoint\s+\d+\s+lag 0 events\s+set aside 1/);
  }, 120_000);
});

describe("a poison command on the work queue", () => {
  it("is set aside after bounded retries, its job fails, and the queue keeps flowing", async () => {
    const log = t.stack.log;
    // Unreadable: set aside at once.
    const garbled = randomUUID();
    await log.js.publish(`cmd.job.${garbled}`, "{not json", { msgID: garbled });
    // Readable but impossible to decide (no text): a defect, retried a bounded number of times.
    const broken = randomUUID();
    const command = { type: "remember.start", version: 1, id: broken, aggregate: `job.${broken}`, issued_at: new Date().toISOString(), correlation_id: broken, data: { owner: aliceOwner, namespace: "broken", importance: 0.5, accepted_at: new Date().toISOString() } };
    await log.js.publish(`cmd.job.${broken}`, JSON.stringify(command), { msgID: broken });

    await bobRemembersAndRecalls("Grandma's lemon cake needs three eggs", "how many eggs for the cake?");

    const job = await until("the broken command's job to fail", async () => {
      const j = await alice.job(broken);
      return j.status === "failed" ? j : undefined;
    }, 60_000);
    expect(job.error).toMatch(/set aside/);

    const dead = await until("both commands set aside", async () => {
      const m = await streamMessages(STREAMS.deadLetters, "dlq.actor.");
      return m.length >= 2 ? m.map((x) => x.data as DeadLetterV1) : undefined;
    }, 60_000);
    expect(dead.find((d) => d.aggregate === `job.${garbled}`)).toMatchObject({ source: "actor", types: ["unparsed"], attempts: 1 });
    expect(dead.find((d) => d.aggregate === `job.${broken}`)).toMatchObject({ source: "actor", types: ["remember.start"], attempts: 5 });
    // The work queue holds neither any more: nothing keeps a worker busy.
    const left = await log.jsm.streams.getMessage(STREAMS.commands, { last_by_subj: `cmd.job.${broken}` }).catch(() => null);
    expect(left).toBeNull();

    const lag = await runProjectionsCommand("lag", [], { NATS_URL: t.stack.config.natsUrl, DATABASE_URL: t.database.url });
    expect(lag.out).toMatch(/actor job\s+set aside 2 commands/);
  }, 120_000);
});
