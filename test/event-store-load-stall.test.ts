// Reading an aggregate's history back when the consumer delivering it goes silent or ends before the aggregate's last
// event (a consumer lost with a NATS node; issue 32's chaos run saw a job lookup wait on one for 5 minutes): the read
// fails, for its caller to retry, instead of waiting for good or passing a part of the history off as all of it. The
// JetStream client is a unit-test fake whose consumer delivers the first commit and then what `after` says.
import { describe, expect, it } from "vitest";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { EventStore, HistoryStalled, encodeCommit } from "../eventlog/event-store.ts";
import { isUnavailable } from "../adapters/unavailable.ts";

function fakeLog(after: "silence" | "end") {
  let deleted = 0;
  const first = { seq: 3, subject: "evt.job.a", data: encodeCommit({ events: [{ type: "job.accepted", version: 1, id: "e1", aggregate: "job.a", occurred_at: new Date(0).toISOString(), causation_id: "c", correlation_id: "c", data: {} }] }) };
  const consume = async () => {
    let sent = false;
    return {
      stop: () => undefined,
      [Symbol.asyncIterator]: () => ({
        next: () => {
          if (!sent) {
            sent = true;
            return Promise.resolve({ done: false, value: first });
          }
          return after === "end" ? Promise.resolve({ done: true, value: undefined }) : new Promise(() => undefined);
        },
      }),
    };
  };
  const js = { consumers: { get: async () => ({ consume, delete: async () => (deleted++, true) }) } } as unknown as JetStreamClient;
  // the aggregate's last event is at sequence 7: the consumer never gets there
  const jsm = { streams: { getMessage: async () => ({ seq: 7 }) } } as unknown as JetStreamManager;
  return { store: new EventStore(js, jsm), deleted: () => deleted };
}

describe("reading an aggregate's history when its consumer stalls", () => {
  it("fails once the consumer has delivered nothing for a while, and deletes it", async () => {
    const f = fakeLog("silence");
    const t0 = Date.now();
    const err = await f.store.load("job.a").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HistoryStalled);
    expect((err as Error).message).toMatch(/no event delivered/);
    // an outage to retry (503, a redelivery), never a bad command to set aside
    expect(isUnavailable(err)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(f.deleted()).toBe(1);
  }, 20_000);

  it("fails when the consumer ends before the last event, rather than returning a part of the history", async () => {
    const f = fakeLog("end");
    const err = await f.store.load("job.a").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HistoryStalled);
    expect((err as Error).message).toMatch(/ended at sequence 3 of 7/);
    expect(isUnavailable(err)).toBe(true);
  });
});
