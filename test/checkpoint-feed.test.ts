// The checkpoint feed a long poll follows (projections/checkpoint-feed.ts): announcements wake a wait once its
// projections reach the sequence; the stored checkpoints cover an announcement lost. A fake connection and database
// stand in for NATS and Postgres, so each announcement arrives exactly when the test sends it.
import { describe, expect, it } from "vitest";
import { CheckpointFeed } from "../projections/checkpoint-feed.ts";
import { projectionAppliedSubject } from "../eventlog/subjects.ts";
import type { EventLog } from "../eventlog/connection.ts";
import type { Db } from "../db/pool.ts";

function feedWithStore(stored: Map<string, number>) {
  const subscribed = new Map<string, (err: Error | null, m: { string(): string }) => void>();
  const log = {
    nc: {
      subscribe: (subject: string, opts: { callback: (err: Error | null, m: { string(): string }) => void }) => void subscribed.set(subject, opts.callback),
    },
  } as unknown as EventLog;
  let reads = 0;
  const db = {
    query: async (_text: string, [names]: [string[]]) => {
      reads++;
      return { rows: names.filter((n) => stored.has(n)).map((name) => ({ name, seq: String(stored.get(name)) })) };
    },
  } as unknown as Db;
  const feed = new CheckpointFeed(log, db);
  return { feed, announce: (name: string, seq: number) => subscribed.get(projectionAppliedSubject(name))?.(null, { string: () => String(seq) }), reads: () => reads };
}

const settledWithin = async <T>(p: Promise<T>, ms: number): Promise<T | "pending"> =>
  Promise.race([p, new Promise<"pending">((r) => setTimeout(() => r("pending"), ms))]);

describe("checkpoint feed", () => {
  it("answers once every named projection has announced the sequence, not before", async () => {
    const { feed, announce, reads } = feedWithStore(new Map([["a", 1], ["b", 1]]));
    const wait = feed.waitFor(["a", "b"], 5, 5_000);
    await new Promise((r) => setImmediate(r));
    announce("a", 5);
    announce("other", 9);
    expect(await settledWithin(wait, 50)).toBe("pending");
    announce("b", 6);
    expect(await settledWithin(wait, 50)).toBe(true);
    expect(reads()).toBe(1); // the first read of unknown projections only
  });

  it("reads the stored checkpoints after a quiet window, so a lost announcement does not hold the wait", async () => {
    const stored = new Map([["a", 1], ["b", 1]]);
    const { feed } = feedWithStore(stored);
    const wait = feed.waitFor(["a", "b"], 5, 5_000);
    await new Promise((r) => setImmediate(r));
    stored.set("a", 5).set("b", 5); // applied, announcement lost
    expect(await settledWithin(wait, 1_000)).toBe(true);
  });

  it("rereads for a projection gone quiet even while another it waits on keeps announcing", async () => {
    const stored = new Map([["a", 1], ["b", 1]]);
    const { feed, announce } = feedWithStore(stored);
    const wait = feed.waitFor(["a", "b"], 5, 5_000);
    let b = 5;
    const chatter = setInterval(() => announce("b", b++), 20);
    try {
      await new Promise((r) => setImmediate(r));
      stored.set("a", 5); // applied, announcement lost
      expect(await settledWithin(wait, 1_000)).toBe(true);
    } finally {
      clearInterval(chatter);
    }
  });

  it("answers false when the wait is over first", async () => {
    const { feed } = feedWithStore(new Map([["a", 1]]));
    expect(await feed.waitFor(["a"], 5, 100)).toBe(false);
  });
});
