// The console upload's one fold (schemas/console/upload-view.ts): given an upload's events → its progress as the
// file routes show it.
import { describe, expect, it } from "vitest";
import { QUEUED_UPLOAD, foldUpload, uploadChange } from "../schemas/console/upload-view.ts";
import { EV, consoleEvent, type ConsoleEvent, type UploadQueued } from "../schemas/console/events.ts";
import type { NewEvent } from "../schemas/envelope.ts";

let n = 0;
const stored = (e: NewEvent) => ({ ...e, id: `e${++n}`, aggregate: "console.upload.f1", occurred_at: "2026-11-27T00:00:00.000Z", causation_id: "c", correlation_id: "c" }) as ConsoleEvent;
const queued = stored(consoleEvent(EV.uploadQueued, { file_id: "f1", size: 3 } as UploadQueued));
const started = stored(consoleEvent(EV.uploadStarted, { started_at: "t0" }));
const completed = stored(consoleEvent(EV.uploadCompleted, { storage_object_id: "s1", completed_at: "t1", bucket_id: "b", space_id: "sp", size: 3 }));
const failed = stored(consoleEvent(EV.uploadFailed, { code: "quota_exceeded", message: "full", failed_at: "t2" }));

describe("upload fold", () => {
  it("given queued, the upload is queued at no progress", () => {
    expect(foldUpload([queued])).toEqual(QUEUED_UPLOAD);
  });

  it("given queued and started, it is active", () => {
    expect(foldUpload([queued, started])).toEqual({ ...QUEUED_UPLOAD, upload_state: "active" });
  });

  it("given completed, it is complete with its storage object and finish time", () => {
    expect(foldUpload([queued, started, completed])).toEqual({ upload_state: "completed", upload_progress: 1, upload_error: null, storage_object_id: "s1", upload_finished_at: "t1" });
  });

  const cleaned = stored(consoleEvent(EV.uploadCleaned, { cleaned_at: "t3" }));
  const failedProgress = { upload_progress: 0, upload_error: { code: "quota_exceeded", message: "full", failed_at: "t2" }, storage_object_id: null, upload_finished_at: "t2" };

  it("given failed, it stays active with the error until its cleanup removed the bytes and freed the name", () => {
    expect(foldUpload([queued, started, failed])).toEqual({ upload_state: "active", ...failedProgress });
  });

  it("given failed and cleaned, it failed with the error and finish time", () => {
    expect(foldUpload([queued, started, failed, cleaned])).toEqual({ upload_state: "failed", ...failedProgress });
  });

  it("the checks seen change nothing shown", () => {
    expect(uploadChange(stored(consoleEvent(EV.uploadChecksSeen, { bucket_state: "active", storage_used: 0, storage_cap: 10, seen_at: "t1" })))).toBeUndefined();
  });
});
