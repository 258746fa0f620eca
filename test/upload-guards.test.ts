// The console upload machine's guards: the `commit` effect reports what it saw (bucket state, quota), the machine
// decides — a bucket gone or a quota exceeded reject the upload, else it completes — and the outcome's events
// are recorded by `complete` / `reject` from what the machine decided.
import { describe, expect, it } from "vitest";
import { Effect } from "effect";
import { evolve, effectOf } from "../actors/host.ts";
import { initialSnapshot } from "../actors/machine-steps.ts";
import { rejectionOf, uploadMachine } from "../actors/console/upload.machine.ts";
import { uploadActor } from "../actors/console/upload.actor.ts";
import type { ConsoleActorPorts } from "../actors/console/ports.ts";
import { EV, consoleEvent, type ConsoleEvent, type UploadChecksSeen, type UploadQueued } from "../schemas/console/events.ts";
import type { NewEvent } from "../schemas/envelope.ts";
import type { ConsoleCommand } from "../schemas/console/commands.ts";

let n = 0;
const stored = (e: NewEvent) => ({ ...e, id: `e${++n}`, aggregate: "console.upload.f1", occurred_at: "2026-11-27T00:00:00.000Z", causation_id: "c", correlation_id: "c" }) as ConsoleEvent;
const upload = { file_id: "f1", bucket_id: "b1", space_id: "s1", size: 100, storage_bucket_name: "sb", storage_key: "k" } as UploadQueued;
const queued = stored(consoleEvent(EV.uploadQueued, upload));
const started = stored(consoleEvent(EV.uploadStarted, { started_at: "t0" }));
const seen = (over: Partial<UploadChecksSeen> = {}) => stored(consoleEvent(EV.uploadChecksSeen, { bucket_state: "active", storage_used: 0, storage_cap: 1_000, seen_at: "t1", ...over }));
const given = (...events: ConsoleEvent[]) => evolve(uploadMachine, initialSnapshot(uploadMachine), events);
const actor = uploadActor({} as ConsoleActorPorts);
const command: ConsoleCommand = { type: "console.upload.start", version: 1, id: "c1", aggregate: "console.upload.f1", issued_at: "t", correlation_id: "c", data: upload };
const run = (effect: string, s: ReturnType<typeof given>) => Effect.runPromise(actor.effects[effect]({ aggregateId: "f1", context: s.context, command }));

describe("upload machine guards", () => {
  it("checks within quota on a live bucket: completing, and complete records the completion at the time seen", async () => {
    const s = given(queued, started, seen({ storage_used: 900 }));
    expect(s.value).toBe("completing");
    expect(effectOf(s)).toEqual({ effect: "complete" });
    const events = await run("complete", s);
    expect(events).toEqual([{ type: EV.uploadCompleted, version: 1, data: { storage_object_id: "sb/k", completed_at: "t1", bucket_id: "b1", space_id: "s1", size: 100 } }]);
    expect(evolve(uploadMachine, s, events.map(stored)).value).toBe("completed");
  });

  it("a quota the file would exceed (by one byte): rejecting, and reject records quota_exceeded", async () => {
    const s = given(queued, started, seen({ storage_used: 901 }));
    expect(s.value).toBe("rejecting");
    const events = await run("reject", s);
    expect(events).toEqual([{ type: EV.uploadFailed, version: 1, data: { code: "quota_exceeded", message: "the space's storage quota of 1000 bytes would be exceeded", failed_at: "t1" } }]);
    const f = evolve(uploadMachine, s, events.map(stored));
    expect(f.value).toBe("failing");
    expect(effectOf(f)).toEqual({ effect: "cleanup", durableBefore: true });
  });

  it("a bucket deleting or deleted: rejecting with bucket_deleted, whatever the quota", () => {
    for (const bucket_state of ["deleting", "deleted"] as const) {
      const s = given(queued, started, seen({ bucket_state }));
      expect(s.value).toBe("rejecting");
      expect(s.context.rejection?.code).toBe("bucket_deleted");
    }
  });

  it("rejectionOf: exactly at the cap is allowed, one byte over is not", () => {
    const at = { bucket_state: "active" as const, storage_used: 900, storage_cap: 1_000, seen_at: "t" };
    expect(rejectionOf(at, 100)).toBeUndefined();
    expect(rejectionOf(at, 101)?.code).toBe("quota_exceeded");
  });

  it("logs written before the checks were recorded still replay: active → completed or failed directly", () => {
    expect(given(queued, started, stored(consoleEvent(EV.uploadCompleted, { storage_object_id: "sb/k", completed_at: "t", bucket_id: "b1", space_id: "s1", size: 100 }))).value).toBe("completed");
    expect(given(queued, started, stored(consoleEvent(EV.uploadFailed, { code: "bucket_deleted", message: "m", failed_at: "t" }))).value).toBe("failing");
  });
});
