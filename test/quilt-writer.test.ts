// The quilt writer's gathering (adapters/blobs/quilt-writer.ts) with a fake clock, a recording store and a recording
// sealer: when a quilt goes out (count, bytes, wait), what each caller gets, that a failed quilt fails every caller in
// it, and the crash-safety protocol's rules: sealed before stored, an abandoned quilt stores nothing, a member that
// comes after its quilt went out leaves, a key the writer does not hold is left to the event log.
import { describe, expect, it } from "vitest";
import { JOIN_GRACE_MS, QuiltAbandoned, QuiltWriter, type Clock, type QuiltSealer, type StoreQuilt } from "../adapters/blobs/quilt-writer.ts";
import { QUILT_EVENTS, quiltFate, type QuiltEvent, type QuiltMemberRef, type QuiltStored } from "../schemas/relayer/quilt.ts";
import { quiltLimitsFromEnv } from "../config/env.ts";
import { nextQuiltMove, nextStoreEstimate } from "../adapters/blobs/quilt-pacing.ts";

class FakeClock implements Clock {
  private timers: { at: number; fn: () => void; live: boolean }[] = [];
  private t = 0;
  now() {
    return this.t;
  }
  after(ms: number, fn: () => void) {
    const t = { at: this.t + ms, fn, live: true };
    this.timers.push(t);
    return () => void (t.live = false);
  }
  advance(ms: number) {
    this.t += ms;
    for (const t of this.timers.filter((x) => x.live && x.at <= this.t)) {
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

/** A sealer that records what it sealed and stored, in call order (`steps`), or refuses a seal when told to. */
function recordingSealer(refuse?: (key: string) => Error | undefined) {
  const sealed = new Map<string, readonly QuiltMemberRef[]>();
  const stored = new Map<string, QuiltStored>();
  const steps: string[] = [];
  const sealer: QuiltSealer = {
    async seal(key, members) {
      steps.push(`seal ${members.length}`);
      const err = refuse?.(key);
      if (err) throw err;
      sealed.set(key, members);
    },
    async stored(key, s) {
      steps.push(`stored ${s.patches.length}`);
      stored.set(key, s);
    },
  };
  return { sealer, sealed, stored, steps };
}

let jobs = 0;
/** What a job does: reserve a key, (record it,) join; a `left` answer fails the write here. */
function write(w: QuiltWriter, contents: Uint8Array, jobId = `job${jobs++}`) {
  return w.join(w.reserve(contents.byteLength), jobId, contents)!.then((o) => {
    if (o.kind !== "stored") throw new Error(o.reason);
    return o;
  });
}
const writer = (store: StoreQuilt, limits: { maxPatches: number; maxBytes: number; maxWaitMs: number; maxInFlight?: number }, clock: Clock = new FakeClock(), sealer = recordingSealer().sealer) =>
  new QuiltWriter(store, sealer, { maxInFlight: 4, ...limits }, clock);
const flushMicrotasks = () => new Promise((r) => setImmediate(r));

describe("quilt writer", () => {
  it("sends a quilt when it holds maxPatches blobs, and answers each caller with its own patch id", async () => {
    const clock = new FakeClock();
    const { store, quilts } = recordingStore();
    const w = writer(store, { maxPatches: 3, maxBytes: 1000, maxWaitMs: 50 }, clock);
    const results = Promise.all([1, 2, 3].map((t) => write(w, blob(t))));
    const got = await results;
    expect(quilts).toEqual([[1, 2, 3]]);
    expect(got.map((g) => g.quiltId)).toEqual(["quilt0", "quilt0", "quilt0"]);
    expect(new Set(got.map((g) => g.quiltPatchId)).size).toBe(3);
    expect(clock.armed).toBe(0); // the wait was cancelled with the send
  });

  it("sends what it has after maxWaitMs, not before", async () => {
    const clock = new FakeClock();
    const { store, quilts } = recordingStore();
    const w = writer(store, { maxPatches: 10, maxBytes: 1000, maxWaitMs: 50 }, clock);
    const a = write(w, blob(1));
    clock.advance(30);
    const b = write(w, blob(2));
    clock.advance(19);
    await flushMicrotasks();
    expect(quilts).toEqual([]);
    expect(w.gathered).toBe(2);
    clock.advance(1);
    await Promise.all([a, b]);
    expect(quilts).toEqual([[1, 2]]);
    // the next blob starts a new wait
    const c = write(w, blob(3));
    clock.advance(50);
    await c;
    expect(quilts).toEqual([[1, 2], [3]]);
  });

  it("sends the gathered quilt before a blob that would pass maxBytes, and a blob over maxBytes alone", async () => {
    const clock = new FakeClock();
    const { store, quilts } = recordingStore();
    const w = writer(store, { maxPatches: 10, maxBytes: 100, maxWaitMs: 50 }, clock);
    const first = [write(w, blob(1, 60)), write(w, blob(2, 50))]; // 110 > 100: blob 1 goes out alone first
    await first[0];
    expect(quilts).toEqual([[1]]);
    const big = write(w, blob(3, 101));
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
    const w = writer(store, { maxPatches: 2, maxBytes: 1000, maxWaitMs: 50 }, clock);
    const failed = await Promise.allSettled([write(w, blob(1)), write(w, blob(2))]);
    expect(failed.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    for (const r of failed) expect((r as PromiseRejectedResult).reason.message).toBe("publisher answered 503");
    const ok = await Promise.all([write(w, blob(3)), write(w, blob(4))]);
    expect(ok.map((o) => o.quiltId)).toEqual(["quilt1", "quilt1"]);
    expect(quilts).toHaveLength(2);
  });

  it("fails every caller when the publisher's answer leaves a patch out (the quilt's record must name every member)", async () => {
    const w = writer(async () => ({ quiltId: "q", patchIds: new Map([["p0", "q:p0"]]) }), { maxPatches: 2, maxBytes: 1000, maxWaitMs: 50 }, new FakeClock());
    const [a, b] = await Promise.allSettled([write(w, blob(1)), write(w, blob(2))]);
    expect([a.status, b.status]).toEqual(["rejected", "rejected"]);
    expect((b as PromiseRejectedResult).reason.message).toMatch(/without patch p1/);
  });

  it("drain sends what is gathered at once and waits for it", async () => {
    const clock = new FakeClock();
    const { store, quilts } = recordingStore();
    const w = writer(store, { maxPatches: 10, maxBytes: 1000, maxWaitMs: 50 }, clock);
    const a = write(w, blob(7));
    await w.drain();
    expect(quilts).toEqual([[7]]);
    await expect(a).resolves.toMatchObject({ quiltId: "quilt0" });
  });

  it("seals the members, in patch order, before it stores the quilt, then records what the store answered", async () => {
    const { store, quilts } = recordingStore();
    const { sealer, sealed, stored, steps } = recordingSealer();
    const w = writer(store, { maxPatches: 3, maxBytes: 1000, maxWaitMs: 50 }, new FakeClock(), sealer);
    const got = await Promise.all([write(w, blob(1), "a"), write(w, blob(2), "b"), write(w, blob(3), "c")]);
    await w.drain();
    expect(steps).toEqual(["seal 3", "stored 3"]);
    const [key] = [...sealed.keys()];
    expect(sealed.get(key)).toEqual([{ job_id: "a", identifier: "p0" }, { job_id: "b", identifier: "p1" }, { job_id: "c", identifier: "p2" }]);
    expect(stored.get(key)).toEqual({ quilt_id: "quilt0", patches: got.map((g, i) => ({ job_id: "abc"[i], patch_id: g.quiltPatchId })) });
    expect(quilts).toEqual([[1, 2, 3]]);
  });

  it("stores nothing when the seal fails: an abandoned quilt tells its members to leave, any other failure fails them", async () => {
    const { store, quilts } = recordingStore();
    let refusal: Error = new QuiltAbandoned("quilt k was abandoned before it was sealed");
    const w = writer(store, { maxPatches: 2, maxBytes: 1000, maxWaitMs: 50 }, new FakeClock(), recordingSealer(() => refusal).sealer);
    const reserved = [w.reserve(1), w.reserve(1)];
    const outcomes = await Promise.all([w.join(reserved[0], "a", blob(1))!, w.join(reserved[1], "b", blob(2))!]);
    expect(outcomes.map((o) => o.kind)).toEqual(["left", "left"]);
    refusal = new Error("nats: timeout");
    const failed = await Promise.allSettled([write(w, blob(3)), write(w, blob(4))]);
    expect(failed.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(quilts).toEqual([]);
  });

  it("a member that joins after its quilt went out without it leaves; a redelivered member waits on the same patch", async () => {
    const clock = new FakeClock();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { store: record, quilts } = recordingStore();
    const store: StoreQuilt = async (patches) => (await gate, record(patches));
    const w = writer(store, { maxPatches: 10, maxBytes: 1000, maxWaitMs: 50 }, clock);
    const key = w.reserve(1);
    expect(w.reserve(1)).toBe(key); // the late one reserved, but has not joined when the wait is over
    const first = w.join(key, "on-time", blob(1))!;
    clock.advance(50);
    await flushMicrotasks();
    // At its wait the quilt closes, and still waits a grace for the member that reserved a place, then goes without it.
    expect(quilts).toEqual([]);
    clock.advance(JOIN_GRACE_MS);
    await flushMicrotasks();
    await expect(w.join(key, "late", blob(2))).resolves.toEqual({ kind: "left", reason: expect.stringContaining("without this job") });
    const again = w.join(key, "on-time", blob(1))!; // redelivered while its quilt is being stored
    release();
    const [a, b] = await Promise.all([first, again]);
    expect(a).toEqual(b);
    expect(quilts).toEqual([[1]]);
    // Once the quilt is over, the writer no longer knows the key: the job reads its quilt's fate from the event log.
    await w.drain();
    expect(w.join(key, "on-time", blob(1))).toBeUndefined();
    expect(w.join("a key of another process", "x", blob(1))).toBeUndefined();
  });

  it("members whose join comes after the wait (their job still recording the key) still go in: no quilt goes out before them", async () => {
    const clock = new FakeClock();
    const { store, quilts } = recordingStore();
    const w = writer(store, { maxPatches: 10, maxBytes: 1000, maxWaitMs: 50 }, clock);
    const keys = [w.reserve(1), w.reserve(1)];
    clock.advance(50);
    await flushMicrotasks();
    expect(quilts).toEqual([]);
    const got = await Promise.all([w.join(keys[0], "a", blob(1))!, w.join(keys[1], "b", blob(2))!]);
    expect(got.map((o) => o.kind)).toEqual(["stored", "stored"]);
    expect(quilts).toEqual([[1, 2]]);
    expect(w.reserve(1)).not.toBe(keys[0]); // a closed quilt takes no more reservations
  });

  it("keeps at most maxInFlight quilts in flight: the next one gathers until one returns, and holds what came meanwhile", async () => {
    const clock = new FakeClock();
    const gates: (() => void)[] = [];
    const { store: record, quilts } = recordingStore();
    // Each store waits for its own release (the publisher's seconds), in the order the quilts went out.
    const store: StoreQuilt = (patches) => new Promise<void>((r) => gates.push(r)).then(() => record(patches));
    const w = writer(store, { maxPatches: 100, maxBytes: 1000, maxWaitMs: 50, maxInFlight: 2 }, clock);
    const first = write(w, blob(1));
    clock.advance(50); // nothing in flight: the short wait
    await flushMicrotasks();
    expect(gates).toHaveLength(1);
    const second = write(w, blob(2));
    clock.advance(50); // one in flight, one place free: the next goes a spacing (here the short wait) after the last
    await flushMicrotasks();
    expect(gates).toHaveLength(2);
    const later = [3, 4, 5].map((t) => write(w, blob(t)));
    clock.advance(10_000); // both places taken: no timer sends the third, however long the stores take
    await flushMicrotasks();
    expect(gates).toHaveLength(2);
    expect(w.gathered).toBe(3);
    gates[0]!();
    await first;
    await flushMicrotasks();
    expect(gates).toHaveLength(3); // one returned: the gathered quilt goes at once, with all that came meanwhile
    gates[1]!();
    gates[2]!();
    await Promise.all([second, ...later]);
    expect(quilts).toEqual([[1], [2], [3, 4, 5]]);
  });

  it("spaces quilts a maxInFlight-th of one quilt's store apart once it knows the store time, so that they return spread out", async () => {
    const clock = new FakeClock();
    // Every store takes 4 s on the fake clock (released by advancing it).
    const store: StoreQuilt = (patches) => new Promise((r) => clock.after(4_000, () => r({ quiltId: "q", patchIds: new Map(patches.map((p) => [p.identifier, `q:${p.identifier}`])) })));
    const sentAt: number[] = [];
    const { sealer } = recordingSealer(() => void sentAt.push(clock.now()));
    const w = writer(store, { maxPatches: 100, maxBytes: 1000, maxWaitMs: 50, maxInFlight: 4 }, clock, sealer);
    const all: Promise<unknown>[] = [];
    // A blob every 100 ms for 20 s, then 10 s more for the last stores.
    for (let t = 0; t < 30_000; t += 100) {
      if (t < 20_000) all.push(write(w, blob(1)));
      clock.advance(100);
      await flushMicrotasks();
    }
    await Promise.all(all);
    const gaps = sentAt.slice(1).map((t, i) => t - sentAt[i]!);
    // Before the first answer: a quilt every short wait up to 4 in flight; after it, one every 4 s ÷ 4.
    expect(gaps.slice(0, 3).every((g) => g <= 100)).toBe(true);
    expect(gaps.slice(6).every((g) => g >= 1_000 && g <= 1_100)).toBe(true);
  });

  it("reads its limits from QUILT_MAX_PATCHES, QUILT_MAX_BYTES, QUILT_MAX_WAIT_MS, QUILT_MAX_IN_FLIGHT and refuses bad values", () => {
    expect(quiltLimitsFromEnv({})).toEqual({ maxPatches: 256, maxBytes: 8 * 1024 * 1024, maxWaitMs: 50, maxInFlight: 4 });
    expect(quiltLimitsFromEnv({ QUILT_MAX_PATCHES: "10", QUILT_MAX_BYTES: "2048", QUILT_MAX_WAIT_MS: "5", QUILT_MAX_IN_FLIGHT: "2" })).toEqual({ maxPatches: 10, maxBytes: 2048, maxWaitMs: 5, maxInFlight: 2 });
    for (const [k, v] of [["QUILT_MAX_PATCHES", "0"], ["QUILT_MAX_PATCHES", "667"], ["QUILT_MAX_BYTES", "1.5"], ["QUILT_MAX_WAIT_MS", "soon"], ["QUILT_MAX_IN_FLIGHT", "0"]]) {
      expect(() => quiltLimitsFromEnv({ [k]: v }), `${k}=${v}`).toThrow(k);
    }
  });
});

describe("a quilt's fate (schemas/relayer/quilt.ts quiltFate)", () => {
  const e = (seq: number, type: string, data: unknown) => ({ seq, event: { type, version: 1, id: `e${seq}`, aggregate: "quilt.k", occurred_at: "t", causation_id: "c", correlation_id: "c", data } as QuiltEvent });
  const members = [{ job_id: "a", identifier: "p0" }];
  const stored = { quilt_id: "q", patches: [{ job_id: "a", patch_id: "q:p0" }] };

  it("is decided by the first seal or abandon; the first stored answer of a sealed quilt is kept", () => {
    expect(quiltFate([])).toEqual({ state: "unsealed" });
    expect(quiltFate([e(1, QUILT_EVENTS.abandoned, { by_job: "a" }), e(2, QUILT_EVENTS.sealed, { members })])).toEqual({ state: "abandoned" });
    expect(quiltFate([e(1, QUILT_EVENTS.sealed, { members })])).toEqual({ state: "sealed", seq: 1, members });
    const twice = quiltFate([e(1, QUILT_EVENTS.sealed, { members }), e(2, QUILT_EVENTS.stored, stored), e(3, QUILT_EVENTS.stored, { ...stored, quilt_id: "other" }), e(4, QUILT_EVENTS.abandoned, { by_job: "b" })]);
    expect(twice).toEqual({ state: "sealed", seq: 1, members, stored });
  });
});

describe("the quilt writer's pacing (adapters/blobs/quilt-pacing.ts nextQuiltMove)", () => {
  const pacing = { maxInFlight: 4, maxWaitMs: 50 };
  const at = (inFlight: number, sinceFirstMs: number, sinceLastCloseMs?: number, storeMs?: number) => nextQuiltMove({ inFlight, sinceFirstMs, sinceLastCloseMs, storeMs }, pacing);

  it("given nothing in flight, a quilt waits the short wait from its first reservation", () => {
    expect(at(0, 0)).toEqual({ kind: "wait", ms: 50 });
    expect(at(0, 20, 5_000, 4_000)).toEqual({ kind: "wait", ms: 30 });
    expect(at(0, 50)).toEqual({ kind: "close" });
  });

  it("given a place free, it goes a maxInFlight-th of one store after the last quilt, never sooner than the short wait", () => {
    expect(at(1, 0, 10, 4_000)).toEqual({ kind: "wait", ms: 990 });
    expect(at(3, 0, 1_000, 4_000)).toEqual({ kind: "close" });
    expect(at(1, 0, 10, 100)).toEqual({ kind: "wait", ms: 40 }); // a fast store: the short wait spaces them
    expect(at(1, 0, 10, undefined)).toEqual({ kind: "wait", ms: 40 }); // no store answered yet
  });

  it("given maxInFlight quilts in flight, it holds until one returns, however long it has gathered", () => {
    expect(at(4, 60_000, 60_000, 4_000)).toEqual({ kind: "hold" });
  });

  it("estimates the store time from the recent stores", () => {
    expect(nextStoreEstimate(undefined, 4_000)).toBe(4_000);
    expect(nextStoreEstimate(4_000, 2_000)).toBeCloseTo(3_400);
  });
});
