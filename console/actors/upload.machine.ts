// Upload job lifecycle (spec/console.md, States: upload — queued, active, completed, failed). The bytes were
// streamed into storage while the request was read; the job then checks the bucket (`begin`), verifies the stored
// object and the space's quota (`verify`), records the blob object on chain and hands the file to its file actor
// (`record`). A failure removes the stored bytes and releases the name (`cleanup`). Each step's outcome is
// appended before the next step runs (durableBefore), so pollers see progress and a crash repeats only one step.
import { assign, setup } from "xstate";
import { EV, type UploadCompleted, type UploadFailed, type UploadProgressed, type UploadQueued } from "../../schemas/console-events.ts";

export interface UploadContext {
  upload?: UploadQueued;
  progress: number;
  storage_object_id?: string;
  failure?: UploadFailed;
}

type UploadEvent =
  | { type: typeof EV.uploadQueued; data: UploadQueued }
  | { type: typeof EV.uploadStarted; data: unknown }
  | { type: typeof EV.uploadProgressed; data: UploadProgressed }
  | { type: typeof EV.uploadCompleted; data: UploadCompleted }
  | { type: typeof EV.uploadFailed; data: UploadFailed }
  | { type: typeof EV.uploadCleaned; data: unknown };

export const uploadMachine = setup({
  types: { context: {} as UploadContext, events: {} as UploadEvent },
  actions: { recordFailure: assign(({ event }) => ({ failure: event.data as UploadFailed })) },
}).createMachine({
  id: "console-upload",
  initial: "none",
  context: { progress: 0 },
  states: {
    none: { on: { [EV.uploadQueued]: { target: "queued", actions: assign(({ event }) => ({ upload: event.data })) } } },
    queued: { meta: { effect: "begin" }, on: { [EV.uploadStarted]: "active", [EV.uploadFailed]: { target: "failing", actions: "recordFailure" } } },
    active: {
      initial: "verifying",
      states: {
        verifying: {
          meta: { effect: "verify", durableBefore: true },
          on: { [EV.uploadProgressed]: { target: "recording", actions: assign(({ event }) => ({ progress: event.data.progress })) } },
        },
        recording: { meta: { effect: "record", durableBefore: true } },
      },
      on: {
        [EV.uploadCompleted]: { target: "completed", actions: assign(({ event }) => ({ progress: 1, storage_object_id: event.data.storage_object_id })) },
        [EV.uploadFailed]: { target: "failing", actions: "recordFailure" },
      },
    },
    failing: { meta: { effect: "cleanup", durableBefore: true }, on: { [EV.uploadCleaned]: "failed" } },
    completed: { type: "final" },
    failed: { type: "final" },
  },
});
