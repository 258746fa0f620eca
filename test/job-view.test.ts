// The remember job's one fold (schemas/relayer/job-view.ts): given events → the state, the status an owner reads
// while the recall indexes catch up, and the view it is answered with.
import { describe, expect, it } from "vitest";
import { INITIAL_JOB, evolveJob, foldJob, jobView, visibleStatus } from "../schemas/relayer/job-view.ts";
import { JOB_EVENTS, jobEvent, type NewJobEvent } from "../schemas/relayer/remember-job.ts";
import { MEMORY_EVENTS, memoryEvent, type IndexLogEvent } from "../schemas/relayer/memory-maintenance.ts";
import type { NewEvent } from "../schemas/envelope.ts";

let n = 0;
const stored = (e: NewEvent, seq = ++n) => ({ seq, event: { ...e, id: `e${seq}`, aggregate: "job.j1", occurred_at: "2026-11-27T00:00:00.000Z", causation_id: "c", correlation_id: "c" } as IndexLogEvent });
const accepted = jobEvent(JOB_EVENTS.accepted, { owner: "0xabc", namespace: "ns", accepted_at: "t", text_bytes: 3 });
const attemptFailed = jobEvent(JOB_EVENTS.uploadAttemptFailed, { attempt: 1, wallet: "w1", error: "no gas" });
const uploaded = jobEvent(JOB_EVENTS.uploaded, { blob_id: "b1", size: 10, vector_f32: "AACAPw==", embedder: "h" });
const indexed = jobEvent(JOB_EVENTS.indexed, { object_id: "o1", wallet: "w", owner: "0xabc", namespace: "ns", blob_id: "b1", vector_f32: "AACAPw==", importance: 0.5, size: 10, created_at: "t" });
const failed = (extra: Partial<{ owner: string; namespace: string }> = {}): NewJobEvent => jobEvent(JOB_EVENTS.failed, { error: "upload failed after 5 wallet attempts: no gas", attempts: 5, ...extra });

describe("remember job fold", () => {
  it("given no events, the job is running with no owner", () => {
    expect(foldJob([])).toEqual({ status: "running" });
  });

  it("given accepted, uploaded and indexed, the job is done with its blob and the sequence that indexed it", () => {
    expect(foldJob([stored(accepted, 1), stored(uploaded, 2), stored(indexed, 7)])).toEqual({ status: "done", owner: "0xabc", namespace: "ns", blob_id: "b1", done_seq: 7 });
  });

  it("given accepted then uploaded, the job is uploaded", () => {
    expect(foldJob([stored(accepted), stored(uploaded)])).toMatchObject({ status: "uploaded", owner: "0xabc", blob_id: "b1" });
  });

  it("a failed wallet attempt and events of other aggregates change nothing (the same state comes back)", () => {
    const s = foldJob([stored(accepted)]);
    expect(evolveJob(s, stored(attemptFailed).event, 9)).toBe(s);
    const forgotten = memoryEvent(MEMORY_EVENTS.forgotten, { owner: "0xabc", namespace: "ns", forgotten_at: "t" });
    expect(evolveJob(s, stored(forgotten).event, 10)).toBe(s);
  });

  it("given accepted then failed, the job failed with the reason, for the owner accepted", () => {
    expect(foldJob([stored(accepted), stored(attemptFailed), stored(failed())])).toMatchObject({ status: "failed", owner: "0xabc", namespace: "ns", error: "upload failed after 5 wallet attempts: no gas" });
  });

  it("a failure set aside before acceptance names the owner itself, namespace defaulting", () => {
    expect(foldJob([stored(failed({ owner: "0xdef" }))])).toEqual({ status: "failed", owner: "0xdef", namespace: "default", error: "upload failed after 5 wallet attempts: no gas" });
    expect(foldJob([stored(failed())])).toEqual({ status: "failed", error: "upload failed after 5 wallet attempts: no gas" });
  });

  it("folds on from a state: a batch's events continue the job as the whole history would", () => {
    const all = [stored(accepted), stored(uploaded), stored(indexed)];
    expect(foldJob(all.slice(1), foldJob(all.slice(0, 1)))).toEqual(foldJob(all));
    expect(foldJob([], INITIAL_JOB)).toBe(INITIAL_JOB);
  });
});

describe("what the owner reads", () => {
  const done = { status: "done" as const, owner: "0xabc", namespace: "ns", blob_id: "b1", done_seq: 7 };

  it("done but not yet applied by the recall indexes reads uploaded; applied, done", () => {
    expect(visibleStatus(done, 6)).toBe("uploaded");
    expect(visibleStatus(done, 7)).toBe("done");
    expect(visibleStatus(done, 100)).toBe("done");
  });

  it("a job whose commit an index set aside reads failed, whatever its state", () => {
    expect(visibleStatus(done, 100, "memory_index")).toBe("failed");
    expect(visibleStatus({ status: "running" }, 0, "lexical_index")).toBe("failed");
  });

  it("other states read as they are", () => {
    for (const status of ["running", "uploaded", "failed"] as const) expect(visibleStatus({ status, done_seq: 50 }, 0)).toBe(status);
  });

  it("the view carries the blob id once there is one, and the error only when failed", () => {
    expect(jobView("j1", done)).toEqual({ job_id: "j1", status: "done", owner: "0xabc", namespace: "ns", blob_id: "b1" });
    expect(jobView("j1", { status: "running", owner: "0xabc", error: "old" })).toEqual({ job_id: "j1", status: "running", owner: "0xabc", namespace: "default" });
    expect(jobView("j1", { ...done, error: "x" }, "failed")).toEqual({ job_id: "j1", status: "failed", owner: "0xabc", namespace: "ns", blob_id: "b1", error: "x" });
  });
});
