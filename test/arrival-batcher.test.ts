// Lookups batched by arrival (adapters/arrival-batcher.ts): one query per batch, answers in order, and never an answer from a
// query sent before the lookup was asked.
import { afterEach, describe, expect, it, vi } from "vitest";
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

  describe("with gatherMs (records of one quilt, each batch a transaction)", () => {
    afterEach(() => void vi.useRealTimers());
    const recorder = () => {
      const runs: (readonly number[])[] = [];
      const batcher = new ArrivalBatcher<number, number>(async (keys) => (runs.push(keys), keys.map((k) => k * 10)), 4, 3, { gatherMs: 50 });
      return { runs, batcher };
    };

    it("lets the first item wait for the others arriving within gatherMs, though the batcher has room, and answers each", async () => {
      vi.useFakeTimers();
      const { runs, batcher } = recorder();
      const first = batcher.submit(1);
      await vi.advanceTimersByTimeAsync(30);
      const second = batcher.submit(2);
      expect(runs).toEqual([]);
      await vi.advanceTimersByTimeAsync(20);
      expect(runs).toEqual([[1, 2]]);
      expect(await Promise.all([first, second])).toEqual([10, 20]);
    });

    it("sends a whole batch at once, without waiting out gatherMs", async () => {
      vi.useFakeTimers();
      const { runs, batcher } = recorder();
      const all = [1, 2, 3, 4].map((k) => batcher.submit(k));
      expect(runs).toEqual([[1, 2, 3]]);
      await vi.advanceTimersByTimeAsync(49);
      expect(runs).toEqual([[1, 2, 3]]);
      await vi.advanceTimersByTimeAsync(1);
      expect(runs).toEqual([[1, 2, 3], [4]]);
      expect(await Promise.all(all)).toEqual([10, 20, 30, 40]);
    });

    it("does not make items that waited behind batches in flight wait gatherMs again", async () => {
      vi.useFakeTimers();
      const runs: (readonly number[])[] = [];
      const gate = deferred<readonly number[]>();
      const batcher = new ArrivalBatcher<number, number>((keys) => (runs.push(keys), runs.length === 1 ? gate.promise : Promise.resolve(keys)), 1, 8, { gatherMs: 50 });
      const first = batcher.submit(1);
      await vi.advanceTimersByTimeAsync(50);
      const behind = batcher.submit(2);
      await vi.advanceTimersByTimeAsync(100);
      expect(runs).toEqual([[1]]);
      gate.resolve([1]);
      await first;
      // 2 has waited 100 ms already: out the moment the first batch is answered
      expect(runs).toEqual([[1], [2]]);
      expect(await behind).toBe(2);
    });
  });
});
