// The bounded reads of the log, an aggregate's history (EventStore.load) and the local ledger's replay of chain
// blocks, against a private nats-server, through a JetStream client that loses one delivery on the way (as a reconnect
// can: without acks nothing sends it again): the read fails as an outage, to be retried, instead of building a state
// from a history that misses a commit or a block. Through the client as it is, the same reads return everything and
// leave no consumer.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Effect, Exit } from "effect";
import type { Consumer, ConsumerInfo, ConsumerMessages, JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { EventStore, HistoryUnavailable } from "../eventlog/event-store.ts";
import { STREAMS } from "../eventlog/subjects.ts";
import { isUnavailable } from "../adapters/unavailable.ts";
import { LocalChain } from "../adapters/chain/local/local-chain.ts";
import { Ledger } from "../adapters/chain/local/ledger.ts";
import { ChainStateStore } from "../adapters/chain/local/state-store.ts";
import { localTarget } from "../adapters/chain/local/transaction-data.ts";
import { generateKeypair, mint } from "../adapters/chain/local/accounts.ts";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";

const PACKAGE_ID = "0x" + "cd".repeat(32);

/** `messages` without their `lost`-th delivery (1-based). */
function losing(messages: ConsumerMessages, lost: number): ConsumerMessages {
  return new Proxy(messages, {
    get(target, key) {
      if (key === Symbol.asyncIterator) {
        return async function* () {
          let n = 0;
          for await (const m of target) if (++n !== lost) yield m;
        };
      }
      const v = Reflect.get(target, key) as unknown;
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

/** `js`, whose consumers (ordered ones, or ones made from their info) lose their `lost`-th delivery. */
function losingDelivery(js: JetStreamClient, lost: number): JetStreamClient {
  const wrap = (c: Consumer): Consumer =>
    new Proxy(c, {
      get(target, key) {
        if (key === "consume") return async (opts?: Parameters<Consumer["consume"]>[0]) => losing(await target.consume(opts), lost);
        const v = Reflect.get(target, key) as unknown;
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  const consumers = new Proxy(js.consumers, {
    get(target, key) {
      if (key === "get") return async (...args: Parameters<typeof target.get>) => wrap(await target.get(...args));
      if (key === "getConsumerFromInfo") return (ci: ConsumerInfo) => wrap(target.getConsumerFromInfo(ci));
      const v = Reflect.get(target, key) as unknown;
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return new Proxy(js, { get: (target, key) => (key === "consumers" ? consumers : Reflect.get(target, key)) });
}

/** `jsm`, whose every consumer is deleted as soon as it is made (lost before it delivers anything). */
function losingConsumers(jsm: JetStreamManager): JetStreamManager {
  const consumers = new Proxy(jsm.consumers, {
    get(target, key) {
      if (key === "add") {
        return async (stream: string, config: Parameters<typeof target.add>[1]) => {
          const info = await target.add(stream, config);
          await target.delete(stream, info.name);
          return info;
        };
      }
      const v = Reflect.get(target, key) as unknown;
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return new Proxy(jsm, { get: (target, key) => (key === "consumers" ? consumers : Reflect.get(target, key)) });
}

let server: NatsServerHandle;
let log: EventLog;

beforeAll(async () => {
  server = await startNatsServer();
  log = await openEventLog({ servers: server.url, name: "bounded-read-order" });
});

afterAll(async () => {
  await log?.close();
  await server?.cleanup();
});

const consumerCount = async (stream: string) => (await log.jsm.streams.info(stream)).state.consumer_count;

describe("an aggregate's history", () => {
  it("is read whole through the client as it is; a lost delivery or a lost consumer fails the read as an outage", async () => {
    const store = new EventStore(log.js, log.jsm);
    const ctx = { causationId: "c", correlationId: "c" };
    for (let i = 0; i < 5; i++) {
      await store.append("job.order", [{ type: "job.noted", version: 1, data: { i } }], "any", ctx);
      await store.append("job.other", [{ type: "job.noted", version: 1, data: { i } }], "any", ctx);
    }
    const whole = await store.load("job.order");
    expect(whole.events.map((e) => (e.event.data as { i: number }).i)).toEqual([0, 1, 2, 3, 4]);
    expect(await consumerCount(STREAMS.events)).toBe(0);

    const lossy = new EventStore(losingDelivery(log.js, 2), log.jsm);
    const err = await lossy.load("job.order").then(
      (history) => history,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(HistoryUnavailable);
    expect(isUnavailable(err)).toBe(true);
    expect(await consumerCount(STREAMS.events)).toBe(0);

    const t0 = Date.now();
    const gone = await new EventStore(log.js, losingConsumers(log.jsm)).load("job.order").then(
      (history) => history,
      (e: unknown) => e,
    );
    expect(gone).toBeInstanceOf(HistoryUnavailable);
    expect(isUnavailable(gone)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });
});

describe("the local ledger's replay of chain blocks", () => {
  it("replays every block through the client as it is; a lost delivery fails the replay before a state that misses a block", async () => {
    const operator = generateKeypair();
    const chain = await LocalChain.open(log, { packageId: PACKAGE_ID, network: "localnet", operatorKey: operator.secretKey, healIntervalMs: 0 });
    try {
      for (let i = 0; i < 4; i++) await mint(chain, { operatorKey: operator.secretKey, to: generateKeypair().keypair.address, amount: 1n });
      const last = (await log.jsm.streams.info(STREAMS.chain)).state.last_seq;
      const store = await ChainStateStore.open(log.kvm, 1);
      const target = localTarget("localnet", PACKAGE_ID);

      expect(await Effect.runPromise(new Ledger(log.js, log.jsm, store, { target }).rematerialise())).toBe(last);
      expect(await consumerCount(STREAMS.chain)).toBe(0);

      const exit = await Effect.runPromiseExit(new Ledger(losingDelivery(log.js, 2), log.jsm, store, { target }).rematerialise());
      expect(Exit.isFailure(exit)).toBe(true);
      expect(String(exit)).toMatch(/StoreUnavailable[\s\S]*delivered #\d+ as delivery 3 after #\d+ as delivery 1/);
      expect(await consumerCount(STREAMS.chain)).toBe(0);
    } finally {
      await chain.close();
    }
  });
});
