// The quilt writer's gathering (adapters/blobs/quilt-writer.ts) with a fake clock and a recording store: when a quilt
// goes out (count, bytes, wait), what each caller gets, and that a failed quilt fails every caller in it.
import { describe, expect, it } from "vitest";
import { QuiltWriter, type Clock, type StoreQuilt } from "../adapters/blobs/quilt-writer.ts";
import { quiltLimitsFromEnv } from "../config/env.ts";

class FakeClock implements Clock {
  private timers: { at: number; fn: () => void; live: boolean }[] = [];
  private now = 0;
  after(ms: number, fn: () => void) {
    const t = { at: this.now + ms, fn, live: true };
    this.timers.push(t);
    return () => void (t.live = false);
  }
  advance(ms: number) {
    this.now += ms;
    for (const t of this.timers.filter((x) => x.live && x.at <= this.now)) {
      t.live = false;
      t.fn();
    }
  }
  get armed() {
    return this.timers.filter((t) => t.live).length;
  }
}

/** A store that records each quilt and answers `quilt<n>:<identifier>` ids (or fails when told to). */
function recordingStore(fail?: (n: number) => Error | undefined) {
  const quilts: number[][] = [];
  const store: StoreQuilt = async (patches) => {
    const n = quilts.push(patches.map((p) => p.contents[0])) - 1;
    const err = fail?.(n);
    if (err) throw err;
    return { quiltId: `quilt${n}`, patchIds: new Map(patches.map((p) => [p.identifier, `quilt${n}:${p.identifier}`])) };
  };
  return { store, quilts };
}
const blob = (tag: number, size = 1) => new Uint8Array(size).fill(tag);
const flushMicrotasks = () => new Promise((r) => setImmediate(r));

describe("quilt writer", () => {
  it("sends a quilt when it holds maxPatches blobs, and answers each caller with its own patch id", async () => {
    const clock = new FakeClock();
    const { store, quilts } = recordingStore();
    const w = new QuiltWriter(store, { maxPatches: 3, maxBytes: 1000, maxWaitMs: 50 }, clock);
    const results = Promise.all([1, 2, 3].map((t) => w.write(blob(t))));
    const got = await results;
    expect(quilts).toEqual([[1, 2, 3]]);
    expect(got.map((g) => g.quiltId)).toEqual(["quilt0", "quilt0", "quilt0"]);
    expect(new Set(got.map((g) => g.quiltPatchId)).size).toBe(3);
    expect(clock.armed).toBe(0); // the wait was cancelled with the send
  });

  it("sends what it has after maxWaitMs, not before", async () => {
    const clock = new FakeClock();
    const { store, quilts } = recordingStore();
    const w = new QuiltWriter(store, { maxPatches: 10, maxBytes: 1000, maxWaitMs: 50 }, clock);
    const a = w.write(blob(1));
    clock.advance(30);
    const b = w.write(blob(2));
    clock.advance(19);
    await flushMicrotasks();
    expect(quilts).toEqual([]);
    expect(w.gathered).toBe(2);
    clock.advance(1);
    await Promise.all([a, b]);
    expect(quilts).toEqual([[1, 2]]);
    // the next blob starts a new wait
    const c = w.write(blob(3));
    clock.advance(50);
    await c;
    expect(quilts).toEqual([[1, 2], [3]]);
  });

  it("sends the gathered quilt before a blob that would pass maxBytes, and a blob over maxBytes alone", async () => {
    const clock = new FakeClock();
    const { store, quilts } = recordingStore();
    const w = new QuiltWriter(store, { maxPatches: 10, maxBytes: 100, maxWaitMs: 50 }, clock);
    const first = [w.write(blob(1, 60)), w.write(blob(2, 50))]; // 110 > 100: blob 1 goes out alone first
    await first[0];
    expect(quilts).toEqual([[1]]);
    const big = w.write(blob(3, 101));
    await big;
    expect(quilts).toEqual([[1], [3]]); // the big one did not wait, and did not take blob 2 along
    expect(w.gathered).toBe(1);
    clock.advance(50);
    await first[1];
    expect(quilts).toEqual([[1], [3], [2]]);
  });

  it("fails every caller of a failed quilt with the reason, and the next quilt still goes out", async () => {
    const clock = new FakeClock();
    const { store, quilts } = recordingStore((n) => (n === 0 ? new Error("publisher answered 503") : undefined));
    const w = new QuiltWriter(store, { maxPatches: 2, maxBytes: 1000, maxWaitMs: 50 }, clock);
    const failed = await Promise.allSettled([w.write(blob(1)), w.write(blob(2))]);
    expect(failed.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    for (const r of failed) expect((r as PromiseRejectedResult).reason.message).toBe("publisher answered 503");
    const ok = await Promise.all([w.write(blob(3)), w.write(blob(4))]);
    expect(ok.map((o) => o.quiltId)).toEqual(["quilt1", "quilt1"]);
    expect(quilts).toHaveLength(2);
  });

  it("fails a caller whose patch the publisher's answer leaves out", async () => {
    const w = new QuiltWriter(async () => ({ quiltId: "q", patchIds: new Map([["p0", "q:p0"]]) }), { maxPatches: 2, maxBytes: 1000, maxWaitMs: 50 }, new FakeClock());
    const [a, b] = await Promise.allSettled([w.write(blob(1)), w.write(blob(2))]);
    expect(a).toEqual({ status: "fulfilled", value: { quiltId: "q", quiltPatchId: "q:p0" } });
    expect(b.status).toBe("rejected");
  });

  it("drain sends what is gathered at once and waits for it", async () => {
    const clock = new FakeClock();
    const { store, quilts } = recordingStore();
    const w = new QuiltWriter(store, { maxPatches: 10, maxBytes: 1000, maxWaitMs: 50 }, clock);
    const a = w.write(blob(7));
    await w.drain();
    expect(quilts).toEqual([[7]]);
    await expect(a).resolves.toMatchObject({ quiltId: "quilt0" });
  });

  it("reads its limits from QUILT_MAX_PATCHES, QUILT_MAX_BYTES, QUILT_MAX_WAIT_MS and refuses bad values", () => {
    expect(quiltLimitsFromEnv({})).toEqual({ maxPatches: 256, maxBytes: 8 * 1024 * 1024, maxWaitMs: 50 });
    expect(quiltLimitsFromEnv({ QUILT_MAX_PATCHES: "10", QUILT_MAX_BYTES: "2048", QUILT_MAX_WAIT_MS: "5" })).toEqual({ maxPatches: 10, maxBytes: 2048, maxWaitMs: 5 });
    for (const [k, v] of [["QUILT_MAX_PATCHES", "0"], ["QUILT_MAX_PATCHES", "667"], ["QUILT_MAX_BYTES", "1.5"], ["QUILT_MAX_WAIT_MS", "soon"]]) {
      expect(() => quiltLimitsFromEnv({ [k]: v }), `${k}=${v}`).toThrow(k);
    }
  });
});
