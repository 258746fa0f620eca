// The aggregate store (eventlog/aggregate-store.ts) over an in-memory log: a decision is appended against the state
// it was made on, made again after a concurrent append, its result returned; refusals and empty decisions append
// nothing. No NATS, no Postgres.
import { describe, expect, it } from "vitest";
import { AggregateStore, accept, reject, type Fold } from "../eventlog/aggregate-store.ts";
import { ConcurrencyConflict } from "../eventlog/event-store.ts";
import { InMemoryCommitLog } from "./support/in-memory-commit-log.ts";

// The store is generic over events: these tests use a catalogue of their own.
const newEvent = <D>(type: string, data: D) => ({ type, version: 1, data });

const counter: Fold<number, { type: string; data: unknown }> = { initial: 0, evolve: (_, e) => (e.data as { n: number }).n };
const ctx = { correlationId: "t", causationId: "t" };
const AGG = "counter.1";
const increment = (n: number) => accept(n + 1, [newEvent("counter.set", { n: n + 1 })]);

describe("aggregate store", () => {
  it("appends the decision and returns its result with the sequence", async () => {
    const log = new InMemoryCommitLog();
    await log.append(AGG, [newEvent("counter.set", { n: 4 })], 0, ctx);
    const o = await new AggregateStore(log).handle(AGG, counter, increment);
    expect(o).toEqual({ ok: true, result: 5, seq: 2 });
    expect(log.events(AGG).map((e) => e.data)).toEqual([{ n: 4 }, { n: 5 }]);
  });

  it("decides again on the new state when a concurrent writer appended first", async () => {
    const log = new InMemoryCommitLog();
    const seen: number[] = [];
    log.beforeAppend = async (aggregate) => {
      log.beforeAppend = null;
      await log.append(aggregate, [newEvent("counter.set", { n: 10 })], "any", ctx);
    };
    const o = await new AggregateStore(log).handle(AGG, counter, (n) => (seen.push(n), increment(n)));
    expect(seen).toEqual([0, 10]);
    expect(o).toMatchObject({ ok: true, result: 11 });
    expect(log.events(AGG).map((e) => e.data)).toEqual([{ n: 10 }, { n: 11 }]);
  });

  it("gives up after its attempts when every append conflicts", async () => {
    const log = new InMemoryCommitLog();
    log.beforeAppend = (aggregate) => log.append(aggregate, [newEvent("counter.set", { n: 1 })], "any", ctx).then(() => undefined);
    await expect(new AggregateStore(log, 3).handle(AGG, counter, increment)).rejects.toBeInstanceOf(ConcurrencyConflict);
    // three decisions tried (each after the interloper's append): the interloper's appends and ours
    expect(log.appends).toBe(6);
  });

  it("passes other append failures on without deciding again", async () => {
    const log = new InMemoryCommitLog();
    let decisions = 0;
    log.beforeAppend = async () => {
      throw new Error("log unreachable");
    };
    await expect(new AggregateStore(log).handle(AGG, counter, (n) => (decisions++, increment(n)))).rejects.toThrow("log unreachable");
    expect(decisions).toBe(1);
  });

  it("a refusal appends nothing and comes back as the domain error", async () => {
    const log = new InMemoryCommitLog();
    const o = await new AggregateStore(log).handle(AGG, counter, () => reject({ code: "too_small" }));
    expect(o).toEqual({ ok: false, error: { code: "too_small" } });
    expect(log.appends).toBe(0);
  });

  it("a decision without events appends nothing and answers with no sequence", async () => {
    const log = new InMemoryCommitLog();
    const o = await new AggregateStore(log).handle(AGG, counter, (n) => accept(n));
    expect(o).toEqual({ ok: true, result: 0, seq: null });
    expect(log.appends).toBe(0);
  });

  it("a blind write decides on the initial state and appends whatever the aggregate holds", async () => {
    const log = new InMemoryCommitLog();
    await log.append(AGG, [newEvent("counter.set", { n: 7 })], 0, ctx);
    const o = await new AggregateStore(log).handle(AGG, counter, increment, { blind: true });
    expect(o).toMatchObject({ ok: true, result: 1 });
    expect(log.events(AGG).map((e) => e.data)).toEqual([{ n: 7 }, { n: 1 }]);
  });

  it("assuming a new aggregate appends without reading, and decides on the real state when it exists", async () => {
    const log = new InMemoryCommitLog();
    const fresh = await new AggregateStore(log).handle(AGG, counter, increment, { assumeNew: true });
    expect(fresh).toEqual({ ok: true, result: 1, seq: 1 });
    const seen: number[] = [];
    const again = await new AggregateStore(log).handle(AGG, counter, (n) => (seen.push(n), increment(n)), { assumeNew: true });
    expect(seen).toEqual([0, 1]);
    expect(again).toEqual({ ok: true, result: 2, seq: 2 });
    expect(log.events(AGG).map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it("reads a state-carrying aggregate from its last commit", async () => {
    const log = new InMemoryCommitLog();
    await log.append(AGG, [newEvent("counter.set", { n: 2 })], 0, ctx);
    await log.append(AGG, [newEvent("counter.set", { n: 3 })], 1, ctx);
    expect(await new AggregateStore(log).read(AGG, counter)).toEqual({ state: 3, seq: 2 });
  });
});
