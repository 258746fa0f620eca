// Reading an aggregate's history back when the consumer delivering it goes silent, ends before the aggregate's last
// event (a consumer lost with a NATS node; issue 32's chaos run saw a job lookup wait on one for 5 minutes), or delivers
// out of order (a delivery lost on the way, one repeated, one from another consumer: nats.js's ordered consumer could
// feed one inbox from two): the read fails, for its caller to retry, instead of waiting for good or passing a part of
// the history, or a wrong one, off as all of it. The JetStream client is a unit-test fake whose consumer delivers what
// each case lists (stream sequence and delivery sequence) and then what `after` says.
import { describe, expect, it } from "vitest";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { EventStore, HistoryUnavailable, encodeCommit } from "../eventlog/event-store.ts";
import { isUnavailable } from "../adapters/unavailable.ts";

interface Delivery {
  readonly seq: number;
  readonly delivery: number;
}

function fakeLog(deliveries: readonly Delivery[], after: "silence" | "end") {
  let deleted = 0;
  const commit = (seq: number) => encodeCommit({ events: [{ type: "job.accepted", version: 1, id: `e${seq}`, aggregate: "job.a", occurred_at: new Date(0).toISOString(), causation_id: "c", correlation_id: "c", data: {} }] });
  const consume = async () => {
    let sent = 0;
    return {
      stop: () => undefined,
      [Symbol.asyncIterator]: () => ({
        next: () => {
          const d = deliveries[sent++];
          if (d) return Promise.resolve({ done: false, value: { seq: d.seq, subject: "evt.job.a", data: commit(d.seq), info: { deliverySequence: d.delivery, pending: 0 } } });
          return after === "end" ? Promise.resolve({ done: true, value: undefined }) : new Promise(() => undefined);
        },
      }),
    };
  };
  const consumer = { consume, delete: async () => (deleted++, true) };
  // Both ways of reading: nats.js's ordered consumer, and a named consumer made and deleted by the reader.
  const js = { consumers: { get: async () => consumer, getConsumerFromInfo: () => consumer } } as unknown as JetStreamClient;
  // the aggregate's last event is at sequence 7
  const jsm = {
    streams: { getMessage: async () => ({ seq: 7 }) },
    consumers: { add: async (stream: string, config: { name: string }) => ({ name: config.name, stream_name: stream, config, num_pending: 3 }), delete: async () => (deleted++, true) },
  } as unknown as JetStreamManager;
  return { store: new EventStore(js, jsm), deleted: () => deleted };
}

async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (history) => ({ history }),
    (err: unknown) => err,
  );
}

describe("reading an aggregate's history when its consumer stalls", () => {
  it("fails once the consumer has delivered nothing for a while, and deletes it", async () => {
    const f = fakeLog([{ seq: 3, delivery: 1 }], "silence");
    const t0 = Date.now();
    const err = await failure(f.store.load("job.a"));
    expect(err).toBeInstanceOf(HistoryUnavailable);
    expect((err as Error).message).toMatch(/no event delivered/);
    // an outage to retry (503, a redelivery), never a bad command to set aside
    expect(isUnavailable(err)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(f.deleted()).toBe(1);
  }, 20_000);

  it("fails when the consumer ends before the last event, rather than returning a part of the history", async () => {
    const f = fakeLog([{ seq: 3, delivery: 1 }], "end");
    const err = await failure(f.store.load("job.a"));
    expect(err).toBeInstanceOf(HistoryUnavailable);
    expect((err as Error).message).toMatch(/ended at sequence 3 of 7/);
    expect(isUnavailable(err)).toBe(true);
  });
});

describe("reading an aggregate's history delivered out of order", () => {
  const cases: { name: string; deliveries: Delivery[] }[] = [
    // commit 5 lost on the way: the delivery counter jumps from 1 to 3
    { name: "a skipped delivery", deliveries: [{ seq: 3, delivery: 1 }, { seq: 7, delivery: 3 }] },
    // commit 5 twice: the second time from a consumer behind, whose delivery happens to fit
    { name: "a stream sequence not past the last one", deliveries: [{ seq: 3, delivery: 1 }, { seq: 5, delivery: 2 }, { seq: 5, delivery: 3 }, { seq: 7, delivery: 4 }] },
    // a consumer recreated from sequence 3 (its deliveries counted from 1 again) beside the first one
    { name: "a delivery counted from 1 again", deliveries: [{ seq: 3, delivery: 1 }, { seq: 5, delivery: 2 }, { seq: 3, delivery: 1 }, { seq: 7, delivery: 2 }] },
  ];
  for (const c of cases) {
    it(`fails on ${c.name}, as an outage to retry, rather than returning a wrong history`, async () => {
      const f = fakeLog(c.deliveries, "silence");
      const err = await failure(f.store.load("job.a"));
      expect(err).toBeInstanceOf(HistoryUnavailable);
      expect((err as Error).message).toMatch(/delivered #\d+ as delivery \d+ after #\d+/);
      expect(isUnavailable(err)).toBe(true);
      expect(f.deleted()).toBe(1);
    });
  }

  it("returns the history when every delivery is the next one", async () => {
    const f = fakeLog([{ seq: 3, delivery: 1 }, { seq: 5, delivery: 2 }, { seq: 7, delivery: 3 }], "silence");
    const { events, lastSeq } = await f.store.load("job.a");
    expect(events.map((e) => [e.seq, e.event.id])).toEqual([[3, "e3"], [5, "e5"], [7, "e7"]]);
    expect(lastSeq).toBe(7);
    expect(f.deleted()).toBe(1);
  });
});
