// Lookups batched by arrival (adapters/arrival-batcher.ts): one query per batch, answers in order, and never an answer from a
// query sent before the lookup was asked.
import { describe, expect, it } from "vitest";
import { ArrivalBatcher } from "../adapters/arrival-batcher.ts";

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe("ArrivalBatcher", () => {
  it("sends the first lookup at once and the ones asked while it is out as one batch, each answered with its own value", async () => {
    const runs: { keys: readonly number[]; done: ReturnType<typeof deferred<readonly string[]>> }[] = [];
    const lookup = new ArrivalBatcher<number, string>((keys) => {
      const done = deferred<readonly string[]>();
      runs.push({ keys, done });
      return done.promise;
    }, 1);
    const first = lookup.submit(1);
    const later = [lookup.submit(2), lookup.submit(3), lookup.submit(2)];
    expect(runs.map((r) => r.keys)).toEqual([[1]]);
    runs[0].done.resolve(["one"]);
    expect(await first).toBe("one");
    // the waiting lookups go out together only after the query in flight answered
    expect(runs.map((r) => r.keys)).toEqual([[1], [2, 3, 2]]);
    runs[1].done.resolve(["two", "three", "two"]);
    expect(await Promise.all(later)).toEqual(["two", "three", "two"]);
  });

  it("with wholeTurn, gathers what one turn of the event loop asks into the first batch", async () => {
    const runs: (readonly number[])[] = [];
    const lookup = new ArrivalBatcher<number, number>(async (keys) => {
      runs.push(keys);
      return keys.map((k) => k * 10);
    }, 1, 256, { wholeTurn: true });
    const asked = [lookup.submit(1), lookup.submit(2), lookup.submit(3)];
    expect(runs).toEqual([]);
    expect(await Promise.all(asked)).toEqual([10, 20, 30]);
    expect(runs).toEqual([[1, 2, 3]]);
    // a later turn starts a batch of its own
    expect(await lookup.submit(4)).toBe(40);
    expect(runs).toEqual([[1, 2, 3], [4]]);
  });

  it("fails every lookup of a failed batch, and the next batch still runs", async () => {
    let n = 0;
    const lookup = new ArrivalBatcher<number, number>(async (keys) => {
      if (n++ === 0) throw new Error("down");
      return keys.map((k) => k * 10);
    }, 1);
    const a = lookup.submit(1);
    const b = lookup.submit(2);
    await expect(a).rejects.toThrow("down");
    expect(await b).toBe(20);
    expect(await lookup.submit(3)).toBe(30);
  });

  it("keeps up to maxInFlight queries out and splits batches at maxBatch", async () => {
    const seen: (readonly number[])[] = [];
    const gates: (() => void)[] = [];
    const lookup = new ArrivalBatcher<number, number>((keys) => {
      seen.push(keys);
      return new Promise((resolve) => gates.push(() => resolve(keys)));
    }, 2, 2);
    const all = [1, 2, 3, 4, 5, 6].map((k) => lookup.submit(k));
    expect(seen).toEqual([[1], [2]]);
    gates.shift()!();
    await all[0];
    expect(seen).toEqual([[1], [2], [3, 4]]);
    while (gates.length) {
      gates.shift()!();
      await new Promise((r) => setTimeout(r, 0));
    }
    expect(await Promise.all(all)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(seen).toEqual([[1], [2], [3, 4], [5, 6]]);
  });
});
