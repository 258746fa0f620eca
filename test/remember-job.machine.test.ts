// Given events / when command / then events, for the remember-job machine and its decider; and the property that
// a snapshot plus newer events gives the same state as replaying every event.
import { describe, expect, it } from "vitest";
import { initialTransition } from "xstate";
import { Effect } from "effect";
import { mayAttemptAgain, rememberJobMachine } from "../actors/relayer/remember-job.machine.ts";
import { effectOf, evolve } from "../actors/host.ts";
import type { SnapshotOf } from "../actors/machine-steps.ts";
import { rememberJobActor } from "../actors/relayer/remember-job.actor.ts";
import { JOB_EVENTS, MAX_WALLET_ATTEMPTS, type RememberCommand } from "../schemas/relayer/remember-job.ts";
import type { EventEnvelope } from "../schemas/envelope.ts";
import { encodeVectorF32 } from "../schemas/vector-wire.ts";

const ev = (type: string, data: unknown, i = 0): EventEnvelope => ({
  type, version: 1, id: `e${i}`, aggregate: "job.j1", occurred_at: new Date(0).toISOString(), causation_id: "c", correlation_id: "c", data,
});
const accepted = ev(JOB_EVENTS.accepted, { owner: "0xabc", namespace: "ns", accepted_at: "t", text_bytes: 3 });
const attemptFailed = (n: number) => ev(JOB_EVENTS.uploadAttemptFailed, { attempt: n, wallet: `w${n}`, error: "no gas" }, n);
const vector_f32 = encodeVectorF32([1, 0]);
const uploaded = { ...ev(JOB_EVENTS.uploaded, { blob_id: "b1", size: 10, vector_f32, embedder: "h" }), version: 2 };
const indexed = { ...ev(JOB_EVENTS.indexed, { object_id: "o1", wallet: "w", owner: "0xabc", namespace: "ns", blob_id: "b1", vector_f32, importance: 0.5, size: 10, created_at: "t" }), version: 2 };
const failed = ev(JOB_EVENTS.failed, { error: "upload failed after 5 wallet attempts: no gas", attempts: 5 });

const fresh = () => initialTransition(rememberJobMachine)[0];
const replay = (events: EventEnvelope[]) => evolve(rememberJobMachine, fresh(), events);
const command: RememberCommand = {
  type: "remember.start", version: 1, id: "j1", aggregate: "job.j1", issued_at: "t", correlation_id: "c",
  data: { owner: "0xabc", namespace: "ns", text: "hi!", importance: 0.5, accepted_at: "t" },
};
const decide = (s: SnapshotOf<typeof rememberJobMachine>) => rememberJobActor({} as never).decide(s, command);

describe("remember-job machine", () => {
  it("given no events, when remember.start, then job.accepted without the text", () => {
    const events = decide(fresh());
    expect(events.map((e) => e.type)).toEqual([JOB_EVENTS.accepted]);
    expect(JSON.stringify(events)).not.toContain("hi!");
  });

  it("given an accepted job, when remember.start is redelivered, then nothing new is decided", () => {
    expect(decide(replay([accepted]))).toEqual([]);
  });

  it("walks pending → running (store) → uploaded (record, durable before) → done", () => {
    expect(fresh().value).toBe("pending");
    const running = replay([accepted]);
    expect(running.value).toBe("running");
    expect(effectOf(running)).toEqual({ effect: "store" });
    const up = replay([accepted, uploaded]);
    expect(up.value).toBe("uploaded");
    expect(effectOf(up)).toEqual({ effect: "record", durableBefore: true, waitsOnly: true });
    const done = replay([accepted, uploaded, indexed]);
    expect(done.value).toBe("done");
    expect(effectOf(done)).toBeUndefined();
    expect(done.context).toMatchObject({ blob_id: "b1", object_id: "o1", vector_f32: undefined });
  });

  it("quilt mode: running → encrypted → joined (quilt, durable before) → uploaded; the ciphertext is dropped once stored", () => {
    const encrypted = ev(JOB_EVENTS.encrypted, { ciphertext: "Y2lwaGVy", size: 6, vector_f32, embedder: "h" });
    const joined = (quilt: string) => ev(JOB_EVENTS.quiltJoined, { quilt });
    const j = replay([accepted, encrypted, joined("k1")]);
    expect(j.value).toBe("joined");
    expect(effectOf(j)).toEqual({ effect: "quilt", durableBefore: true, waitsOnly: true });
    expect(j.context).toMatchObject({ ciphertext: "Y2lwaGVy", size: 6, vector_f32, embedder: "h", quilt: "k1" });
    // The quilt went out without the job: back to encrypted (gather, durable before), then another quilt, same ciphertext.
    const leftIt = replay([accepted, encrypted, joined("k1"), ev(JOB_EVENTS.quiltLeft, { quilt: "k1", reason: "abandoned" })]);
    expect(leftIt.value).toBe("encrypted");
    expect(effectOf(leftIt)).toEqual({ effect: "gather", durableBefore: true });
    expect(leftIt.context).toMatchObject({ ciphertext: "Y2lwaGVy", quilt: undefined });
    const again = replay([accepted, encrypted, joined("k1"), ev(JOB_EVENTS.quiltLeft, { quilt: "k1", reason: "abandoned" }), joined("k2")]);
    expect(again.context.quilt).toBe("k2");
    // A failed store stays in the same quilt (the next attempt stores that quilt again), counted like any attempt.
    const retried = replay([accepted, encrypted, joined("k1"), attemptFailed(1)]);
    expect(retried.value).toBe("joined");
    expect(retried.context).toMatchObject({ quilt: "k1", attempts: 1 });
    const stored = replay([accepted, encrypted, joined("k1"), uploaded]);
    expect(stored.value).toBe("uploaded");
    expect(stored.context).toMatchObject({ blob_id: "b1", ciphertext: undefined, quilt: undefined });
    expect(replay([accepted, encrypted, joined("k1"), uploaded, indexed]).value).toBe("done");
  });

  it("counts wallet attempts across steps and fails with the error", () => {
    const s = replay([accepted, attemptFailed(1), attemptFailed(2), uploaded, attemptFailed(3), attemptFailed(4), attemptFailed(5), failed]);
    expect(s.value).toBe("failed");
    expect(s.context.attempts).toBe(5);
    expect(s.context.error).toMatch(/5 wallet attempts/);
  });

  it("guard: attempts below the limit keep the job at its step; the last one allowed moves it to giving up", () => {
    const four = replay([accepted, attemptFailed(1), attemptFailed(2), attemptFailed(3), attemptFailed(4)]);
    expect(four.value).toBe("running");
    expect(effectOf(four)).toEqual({ effect: "store" });
    const five = replay([accepted, attemptFailed(1), attemptFailed(2), attemptFailed(3), attemptFailed(4), attemptFailed(5)]);
    expect(five.value).toBe("giving_up");
    expect(effectOf(five)).toEqual({ effect: "fail" });
    expect(five.context).toMatchObject({ attempts: 5, error: "no gas" });
  });

  it("guard: attempts count across the store and record steps (two before the upload, three after)", () => {
    const up = replay([accepted, attemptFailed(1), attemptFailed(2), uploaded, attemptFailed(3), attemptFailed(4)]);
    expect(up.value).toBe("uploaded");
    expect(replay([accepted, attemptFailed(1), attemptFailed(2), uploaded, attemptFailed(3), attemptFailed(4), attemptFailed(5)]).value).toBe("giving_up");
  });

  it("the limit is the machine's: mayAttemptAgain below MAX_WALLET_ATTEMPTS only", () => {
    expect(mayAttemptAgain(0)).toBe(true);
    expect(mayAttemptAgain(MAX_WALLET_ATTEMPTS - 1)).toBe(true);
    expect(mayAttemptAgain(MAX_WALLET_ATTEMPTS)).toBe(false);
  });

  it("giving up records job.failed with the attempts and the last attempt's error (the fail effect reports, it does not decide)", async () => {
    const giving = replay([accepted, attemptFailed(1), attemptFailed(2), attemptFailed(3), attemptFailed(4), attemptFailed(5)]);
    const events = await Effect.runPromise(rememberJobActor({} as never).effects.fail({ aggregateId: "j1", context: giving.context, command }));
    expect(events).toEqual([{ type: JOB_EVENTS.failed, version: 1, data: { error: "upload failed after 5 wallet attempts: no gas", attempts: 5 } }]);
    expect(evolve(rememberJobMachine, giving, events.map((e, i) => ev(e.type, e.data, 100 + i))).value).toBe("failed");
  });

  it("restores from any snapshot plus the newer events to the same state as a full replay", () => {
    const histories = [
      [accepted, uploaded, indexed],
      [accepted, attemptFailed(1), uploaded, attemptFailed(2), indexed],
      [accepted, attemptFailed(1), attemptFailed(2), attemptFailed(3), attemptFailed(4), attemptFailed(5), failed],
    ];
    for (const history of histories) {
      const full = replay(history);
      for (let cut = 0; cut <= history.length; cut++) {
        const partial = replay(history.slice(0, cut));
        // What the host persists: value and context only (JSON), then resolves them back into a snapshot.
        const persisted = JSON.parse(JSON.stringify({ value: partial.value, context: partial.context }));
        const restored = rememberJobMachine.resolveState(persisted);
        const resumed = evolve(rememberJobMachine, restored, history.slice(cut));
        expect({ value: resumed.value, context: resumed.context }).toEqual({ value: full.value, context: full.context });
      }
    }
  });
});
