// DESIGN.md 2.4: streams replicated R3 on a three-node JetStream cluster; killing one node loses no acknowledged
// event, and appends keep working through the survivors.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { EventStore } from "../eventlog/event-store.ts";
import { STREAMS } from "../eventlog/subjects.ts";
import { startNatsCluster, type NatsCluster } from "./support/nats-cluster.ts";

let cluster: NatsCluster;
let log: EventLog;

async function withRetry<T>(fn: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

beforeAll(async () => {
  cluster = await startNatsCluster(3);
  // Streams need a JetStream meta leader; the cluster elects one within a few seconds of starting.
  log = await withRetry(() => openEventLog({ servers: cluster.urls.join(","), name: "cluster-test", replicas: 3 }), 30_000);
}, 60_000);
afterAll(async () => {
  await log?.close();
  await cluster?.cleanup();
});

describe("three-node JetStream cluster", () => {
  it("a connection opened without a replicas setting (an operator command) leaves the R3 streams and buckets at R3", async () => {
    const operator = await withRetry(() => openEventLog({ servers: cluster.urls.join(","), name: "cluster-operator" }));
    try {
      expect(operator.replicas).toBeUndefined();
      for (const name of Object.values(STREAMS)) expect((await log.jsm.streams.info(name)).config.num_replicas, name).toBe(3);
      expect((await log.jsm.streams.info("KV_snapshots")).config.num_replicas).toBe(3);
      // A bucket created through the R3 log gets its replicas without naming them.
      const made = await log.kvm.create("cluster_test_r3", { history: 1 });
      expect((await made.status()).replicas).toBe(3);
    } finally {
      await operator.close();
    }
  }, 60_000);

  it("keeps every acknowledged event when a node is killed", async () => {
    const info = await log.jsm.streams.info(STREAMS.events);
    expect(info.config.num_replicas).toBe(3);
    const store = new EventStore(log.js, log.jsm);
    const acked: number[] = [];
    const append = async (i: number) => {
      const r = await store.append(`test.agg${i}`, [{ type: "test.happened", version: 1, data: { i } }], 0, { causationId: "c", correlationId: "c", commitId: `commit-${i}` });
      acked.push(r.seq);
    };
    for (let i = 0; i < 200; i++) await append(i);
    await cluster.kill(0);
    for (let i = 200; i < 400; i++) await withRetry(() => append(i));
    expect(new Set(acked).size).toBe(400);

    // Read back from a survivor only: every acknowledged sequence is there.
    const nc = await connect({ servers: cluster.urls.slice(1) });
    try {
      // Creating a manager asks for account info, which can time out while the survivors settle after the kill.
      const jsm = await withRetry(() => jetstreamManager(nc));
      const state = (await withRetry(() => jsm.streams.info(STREAMS.events))).state;
      expect(state.messages).toBeGreaterThanOrEqual(400);
      for (const seq of acked) {
        const m = await withRetry(() => jsm.streams.getMessage(STREAMS.events, { seq }));
        expect(m?.seq).toBe(seq);
      }
    } finally {
      await nc.close();
    }
  }, 240_000);
});
