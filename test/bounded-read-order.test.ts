// A bounded read of the log, an aggregate's history (EventStore.load), against a private nats-server, through a
// JetStream client that loses one delivery on the way (as a reconnect can: without acks nothing sends it again): the
// read fails as an outage, to be retried, instead of building a state from a history that misses a commit. Through the
// client as it is, the same read returns everything and leaves no consumer.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Consumer, ConsumerInfo, ConsumerMessages, JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { EventStore, HistoryUnavailable } from "../eventlog/event-store.ts";
import { STREAMS } from "../eventlog/subjects.ts";
import { isUnavailable } from "../adapters/unavailable.ts";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";

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
