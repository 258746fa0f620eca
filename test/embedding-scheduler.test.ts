// Windows of long texts, pooling, and the embedding scheduler (fairness, query priority, deadlines, dedup), over a
// scripted model: these are the scheduler's rules, not the model's behaviour (the black-box suites use real models).
import { describe, expect, it } from "vitest";
import { allWindows, meanPool, spread, windowsOf } from "../adapters/embeddings/windows.ts";
import { EmbeddingScheduler, TextTooLong, deadlineMs, type BackgroundModel, type SchedulerOptions } from "../adapters/embeddings/scheduler.ts";
import type { EmbeddingPort } from "../adapters/ports.ts";
import { embeddingFromEnv } from "../config/env.ts";

const SENTENCES = Array.from({ length: 60 }, (_, i) => `Sentence number ${i} talks about topic ${i % 7} at some length.`).join(" ");

describe("windows", () => {
  const spec = { maxChars: 200, overlapChars: 40 };

  it("keeps a text that fits as one window, unchanged", () => {
    expect(allWindows("short text", spec)).toEqual(["short text"]);
    expect(allWindows("", spec)).toEqual([""]);
    expect(allWindows("x".repeat(200), spec)).toEqual(["x".repeat(200)]);
  });

  it("covers the whole text with overlapping windows no longer than the limit, cut after sentences", () => {
    const w = allWindows(SENTENCES, spec);
    expect(w.length).toBeGreaterThan(SENTENCES.length / 200);
    for (const x of w) expect(x.length).toBeLessThanOrEqual(200);
    // Every window but the last ends a sentence; every sentence is whole in some window.
    for (const x of w.slice(0, -1)) expect(x.trimEnd()).toMatch(/\.$/);
    for (let i = 0; i < 60; i++) {
      const s = `Sentence number ${i} talks about topic ${i % 7} at some length.`;
      expect(w.some((x) => x.includes(s)), s).toBe(true);
    }
    // Consecutive windows overlap, and their union is the text.
    let covered = 0;
    for (const x of w) {
      const at = SENTENCES.indexOf(x, Math.max(0, covered - 200));
      expect(at).toBeGreaterThanOrEqual(0);
      expect(at).toBeLessThanOrEqual(covered);
      covered = at + x.length;
    }
    expect(covered).toBe(SENTENCES.length);
  });

  it("cuts between words when there is no sentence end, and anywhere in one unbroken token", () => {
    const words = Array.from({ length: 200 }, (_, i) => `word${i}`).join(" ");
    for (const x of allWindows(words, spec)) expect(x).toMatch(/^word\d+( word\d+)* ?$/);
    const blob = "y".repeat(1000);
    const w = allWindows(blob, spec);
    expect(w.every((x) => x.length <= 200)).toBe(true);
    expect(w.join("").length).toBeGreaterThanOrEqual(1000);
  });

  it("never splits a surrogate pair", () => {
    const emoji = "🙂".repeat(500);
    for (const x of allWindows(emoji, spec)) expect(x).toMatch(/^(?:🙂)+$/u);
  });

  it("refuses a window spec that cannot make progress", () => {
    expect(() => allWindows("abc", { maxChars: 10, overlapChars: 5 })).toThrow(RangeError);
    expect(() => allWindows("abc", { maxChars: 1, overlapChars: 0 })).toThrow(RangeError);
  });

  it("spreads a window budget evenly over a long text, first and last included", () => {
    expect(spread([1, 2, 3], 5)).toEqual([1, 2, 3]);
    expect(spread(Array.from({ length: 101 }, (_, i) => i), 5)).toEqual([0, 25, 50, 75, 100]);
    const w = windowsOf(SENTENCES, { ...spec, maxWindows: 4 });
    expect(w).toHaveLength(4);
    expect(SENTENCES.startsWith(w[0])).toBe(true);
    expect(SENTENCES.endsWith(w[3])).toBe(true);
  });

  it("pools unit vectors into their normalised mean; one vector stays itself", () => {
    const a = Float32Array.from([1, 0]);
    const b = Float32Array.from([0, 1]);
    expect(meanPool([a])).toBe(a);
    const m = meanPool([a, b]);
    expect(m[0]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(m[1]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(() => meanPool([])).toThrow(RangeError);
  });
});

/** A model that answers each call when the test releases it, recording what each call held. */
function scriptedModel() {
  const calls: { texts: string[]; release: () => void }[] = [];
  let waiters: (() => void)[] = [];
  const model: EmbeddingPort = {
    name: "scripted",
    dims: 2,
    embed: (texts) =>
      new Promise((resolve) => {
        calls.push({ texts: [...texts], release: () => resolve(texts.map((t) => Float32Array.from(t.startsWith("b") ? [0, 1] : [1, 0]))) });
        for (const w of waiters) w();
        waiters = [];
      }),
  };
  const nextCall = async (n: number) => {
    while (calls.length < n) await new Promise<void>((r) => waiters.push(r));
    return calls[n - 1];
  };
  return { model, calls, nextCall };
}

/** A background model answering each call when the test releases it, with the CPU time the test says it took. */
function scriptedBackground() {
  const calls: { texts: string[]; release: (cpuMs: number | undefined) => void }[] = [];
  let waiters: (() => void)[] = [];
  const background: BackgroundModel = {
    embedInBackground: (texts) =>
      new Promise((resolve) => {
        calls.push({ texts: [...texts], release: (cpuMs) => resolve({ vectors: texts.map(() => Float32Array.from([1, 0])), cpuMs }) });
        for (const w of waiters) w();
        waiters = [];
      }),
  };
  const nextCall = async (n: number) => {
    while (calls.length < n) await new Promise<void>((r) => waiters.push(r));
    return calls[n - 1];
  };
  return { background, calls, nextCall };
}

const OPTIONS: SchedulerOptions = { window: { maxChars: 10, overlapChars: 0, maxWindows: 1000 }, deadline: { baseMs: 60_000, perWindowMs: 0 }, concurrency: 1, maxBatch: 3, maxBatchChars: 30 };

describe("embedding scheduler", () => {
  it("serves the least-served document first: a short one is not held behind long ones, long ones alternate", async () => {
    const { model, nextCall } = scriptedModel();
    const s = new EmbeddingScheduler(model, OPTIONS);
    const long = s.embedDocument("long", Array.from({ length: 20 }, () => "aaaa aaaa.").join(" "));
    const first = await nextCall(1); // the long document's first batch is on the model
    const other = s.embedDocument("other", Array.from({ length: 20 }, () => "cccc cccc.").join(" "));
    const short = s.embedDocument("short", "bbbb");
    first.release();
    const second = await nextCall(2);
    // The two documents nothing of which was embedded yet come first, the short one among them.
    expect(second.texts).toContain("bbbb");
    expect(second.texts.filter((x) => x.startsWith("cccc")).length).toBeGreaterThan(0);
    second.release();
    expect(Array.from(await short)).toEqual([0, 1]);
    for (let n = 3; ; n++) {
      const settled = await Promise.race([long.then(() => true), new Promise((r) => setTimeout(r, 0, false))]);
      if (settled) break;
      (await nextCall(n)).release();
    }
    expect(Array.from(await long)).toEqual([1, 0]);
    await other;
  });

  it("puts queries ahead of every waiting document window and batches them together", async () => {
    const { model, calls, nextCall } = scriptedModel();
    const s = new EmbeddingScheduler(model, OPTIONS);
    void s.embedDocument("doc", Array.from({ length: 10 }, () => "aaaa aaaa.").join(" "));
    const first = await nextCall(1);
    const q1 = s.embed(["q one"]);
    const q2 = s.embed(["q two"]);
    first.release();
    const second = await nextCall(2);
    expect(second.texts).toEqual(["q one", "q two"]);
    second.release();
    await Promise.all([q1, q2]);
    expect(calls[0].texts.every((t) => t.startsWith("aaaa"))).toBe(true);
  });

  it("embeds a query longer than one window as a document: the vector a remember of it stores", async () => {
    const { model, nextCall } = scriptedModel();
    const s = new EmbeddingScheduler(model, OPTIONS);
    const long = "bbbb bbbb. aaaa aaaa.";
    const asQuery = s.embed([long]);
    const first = await nextCall(1);
    expect(first.texts).toEqual(["bbbb bbbb.", "aaaa aaaa."]);
    first.release();
    const [v] = await asQuery;
    expect(v[0]).toBeCloseTo(Math.SQRT1_2, 6);
    expect(v[1]).toBeCloseTo(Math.SQRT1_2, 6);
  });

  it("keeps document batches within the character budget, so a query waits at most one short batch", async () => {
    const { model, nextCall } = scriptedModel();
    const s = new EmbeddingScheduler(model, { ...OPTIONS, maxBatch: 64, maxBatchChars: 25 });
    void s.embedDocument("doc", Array.from({ length: 10 }, () => "aaaa aaaa.").join(" "));
    const first = await nextCall(1);
    expect(first.texts.join("").length).toBeLessThanOrEqual(25);
  });

  it("keeps one model slot free of long documents' windows for queries and short memories", async () => {
    const { model, calls, nextCall } = scriptedModel();
    const s = new EmbeddingScheduler(model, { ...OPTIONS, concurrency: 2 });
    void s.embedDocument("long-1", Array.from({ length: 10 }, () => "aaaa aaaa.").join(" "));
    void s.embedDocument("long-2", Array.from({ length: 10 }, () => "aaaa aaaa.").join(" "));
    await nextCall(1);
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).toHaveLength(1); // the second slot waits for short work
    const short = s.embedDocument("short", "bbbb");
    const call2 = await nextCall(2);
    expect(call2.texts).toEqual(["bbbb"]);
    call2.release();
    expect(Array.from(await short)).toEqual([0, 1]);
  });

  it("moves a long document forward in every batch it may join, however many short ones keep arriving", async () => {
    const { model, nextCall } = scriptedModel();
    const s = new EmbeddingScheduler(model, { ...OPTIONS, maxBatch: 2 });
    void s.embedDocument("long", Array.from({ length: 4 }, () => "aaaa aaaa.").join(" "));
    const first = await nextCall(1);
    for (let i = 0; i < 3; i++) void s.embedDocument(`short-${i}`, `bbbb ${i}`);
    first.release();
    const second = await nextCall(2);
    expect(second.texts[0]).toBe("aaaa aaaa."); // the long one's next window leads, a short one fills the batch
    expect(second.texts[1]).toMatch(/^bbbb/);
  });

  it("embeds a document asked for twice under one key once", async () => {
    const { model, calls, nextCall } = scriptedModel();
    const s = new EmbeddingScheduler(model, OPTIONS);
    const a = s.embedDocument("job-1", "aaaa");
    const b = s.embedDocument("job-1", "aaaa");
    (await nextCall(1)).release();
    expect(await a).toBe(await b);
    expect(calls).toHaveLength(1);
  });

  it("fails a document whose own model time passes its deadline with TextTooLong, and drops its remaining windows", async () => {
    const { model, calls, nextCall } = scriptedModel();
    const s = new EmbeddingScheduler(model, { ...OPTIONS, deadline: { baseMs: 20, perWindowMs: 1 } });
    const text = Array.from({ length: 30 }, () => "aaaa aaaa.").join(" ");
    expect(s.deadlineMsFor(text)).toBe(20 + 30);
    const slow = s.embedDocument("slow", text);
    const first = await nextCall(1);
    const next = s.embedDocument("next", "bbbb");
    await new Promise((r) => setTimeout(r, 120)); // the model spends 120 ms on the slow document's first batch
    first.release();
    await expect(slow).rejects.toThrow(new TextTooLong(50).message);
    expect((await slow.catch((e) => e)).message).toBe("text too long to embed within 0.1 s");
    const second = await nextCall(2);
    expect(second.texts).toEqual(["bbbb"]); // nothing of the failed document is embedded any more
    second.release();
    await next;
    expect(calls).toHaveLength(2);
    expect(s.waiting).toEqual({ queries: 0, documents: 0 });
  });

  it("does not count time spent waiting behind other work against a document's deadline", async () => {
    const { model, nextCall } = scriptedModel();
    const s = new EmbeddingScheduler(model, { ...OPTIONS, deadline: { baseMs: 40, perWindowMs: 0 } });
    const busy = s.embedDocument("busy", "aaaa");
    const first = await nextCall(1);
    const waiting = s.embedDocument("waiting", "bbbb");
    await new Promise((r) => setTimeout(r, 100)); // "waiting" is queued for 100 ms, well past its 40 ms
    first.release();
    expect(Array.from(await busy)).toEqual([1, 0]); // finished in that batch: a finished embedding is kept
    (await nextCall(2)).release();
    expect(Array.from(await waiting)).toEqual([0, 1]);
  });

  it("reports how long the oldest embedding has waited", async () => {
    const { model, nextCall } = scriptedModel();
    const s = new EmbeddingScheduler(model, OPTIONS);
    expect(s.oldestWaitMs()).toBe(0);
    const d = s.embedDocument("d", "aaaa");
    await new Promise((r) => setTimeout(r, 30));
    expect(s.oldestWaitMs()).toBeGreaterThanOrEqual(25);
    (await nextCall(1)).release();
    await d;
    expect(s.oldestWaitMs()).toBe(0);
  });

  it("counts a document's wait from its last embedded window: a long one that progresses is not stalled", async () => {
    const { model, nextCall } = scriptedModel();
    const s = new EmbeddingScheduler(model, { ...OPTIONS, maxBatch: 1 });
    const d = s.embedDocument("d", "aaaa aaaa. aaaa aaaa.");
    const first = await nextCall(1);
    await new Promise((r) => setTimeout(r, 60));
    expect(s.oldestWaitMs()).toBeGreaterThanOrEqual(55);
    first.release(); // one window embedded: progress
    const second = await nextCall(2);
    expect(s.oldestWaitMs()).toBeLessThan(30);
    second.release();
    await d;
  });

  it("passes a model failure to every waiter of the batch", async () => {
    const s = new EmbeddingScheduler({ name: "broken", dims: 2, embed: async () => Promise.reject(new Error("model down")) }, OPTIONS);
    await expect(s.embed(["q"])).rejects.toThrow("model down");
    await expect(s.embedDocument("d", "aaaa")).rejects.toThrow("model down");
  });
});

describe("embedding scheduler with a background model for long documents", () => {
  const long = (n: number) => Array.from({ length: n }, () => "aaaa aaaa.").join(" ");

  it("runs long documents' windows there alone, one batch at a time, while queries and short memories use the model", async () => {
    const fg = scriptedModel();
    const bg = scriptedBackground();
    const s = new EmbeddingScheduler(fg.model, { ...OPTIONS, concurrency: 2 }, bg.background);
    const l1 = s.embedDocument("long-1", long(6));
    void s.embedDocument("long-2", long(6));
    const firstLong = await bg.nextCall(1);
    await new Promise((r) => setTimeout(r, 20));
    expect(bg.calls).toHaveLength(1); // one long batch at a time
    expect(fg.calls).toHaveLength(0); // the model's threads take no long windows
    // While that long batch is still out, a short memory and a query are embedded on the model.
    const short = s.embedDocument("short", "bbbb");
    const query = s.embed(["bbbb query"]);
    const a = await fg.nextCall(1);
    const b = await fg.nextCall(2);
    expect([...a.texts, ...b.texts].sort()).toEqual(["bbbb", "bbbb query"]);
    a.release();
    b.release();
    expect(Array.from(await short)).toEqual([0, 1]);
    expect(Array.from((await query)[0])).toEqual([0, 1]);
    expect(firstLong.texts.every((t) => t === "aaaa aaaa.")).toBe(true);
    // The long documents alternate on the background model until both are done.
    for (let n = 1; ; n++) {
      const settled = await Promise.race([l1.then(() => true), new Promise((r) => setTimeout(r, 0, false))]);
      if (settled) break;
      (await bg.nextCall(n)).release(1);
    }
    expect(fg.calls).toHaveLength(2);
  });

  it("charges a document the background thread's CPU time, not the wall time it waited for a core", async () => {
    const fg = scriptedModel();
    const bg = scriptedBackground();
    const s = new EmbeddingScheduler(fg.model, { ...OPTIONS, maxBatch: 10, maxBatchChars: 1000, deadline: { baseMs: 50, perWindowMs: 0 } }, bg.background);
    const slowButCheap = s.embedDocument("cheap", long(3));
    const call = await bg.nextCall(1);
    await new Promise((r) => setTimeout(r, 120)); // 120 ms of wall time at a low priority ...
    call.release(9); // ... of which the thread ran 9 ms
    expect(Array.from(await slowButCheap)).toEqual([1, 0]);
    const costly = s.embedDocument("costly", long(12)); // two batches: it fails after the first
    (await bg.nextCall(2)).release(60); // past its 50 ms of model time
    await expect(costly).rejects.toThrow(new TextTooLong(50).message);
  });
});

describe("deadline formula and operator variables", () => {
  it("is base + per window × windows, from EMBEDDING_DEADLINE_*", () => {
    expect(deadlineMs({ baseMs: 30_000, perWindowMs: 2_000 }, 64)).toBe(158_000);
    const d = embeddingFromEnv({});
    expect(d).toMatchObject({ maxWindows: 64, deadlineBaseMs: 30_000, deadlineMsPerWindow: 2_000 });
    expect(d.workers).toBeGreaterThanOrEqual(1);
    expect(embeddingFromEnv({ EMBEDDING_WORKERS: "3", EMBEDDING_MAX_WINDOWS: "8", EMBEDDING_DEADLINE_BASE_SECS: "5", EMBEDDING_DEADLINE_MS_PER_WINDOW: "10" })).toEqual({ workers: 3, maxWindows: 8, deadlineBaseMs: 5_000, deadlineMsPerWindow: 10 });
    expect(embeddingFromEnv({ EMBEDDING_WORKERS: "0" }).workers).toBe(d.workers); // out of range: the default
  });
});
