// Upload job lifecycle (spec/console.md, States: upload — queued, active, completed, failed). The bytes were
// streamed into storage while the request was read; the job is queued while its command waits on the work queue,
// active once a worker took it, and then `commit` checks that the bucket still exists, that the stored object is
// there with the expected size and blob id, and that the space's quota still holds, and completes the file. The
// checks take milliseconds, so started and its outcome are appended in one commit with queued (one append and one
// read-model write per upload instead of two; a crash before it repeats the checks). A failure removes the stored
// bytes and releases the name (`cleanup`, recorded before it runs).
import { assign, setup } from "xstate";
import { EV, type UploadFailed, type UploadQueued, type ConsoleEventData } from "../../schemas/console/events.ts";
import type { MachineEventOf } from "../../schemas/envelope.ts";

export interface UploadContext {
  upload?: UploadQueued;
  storage_object_id?: string;
  failure?: UploadFailed;
}

type UploadEvent = MachineEventOf<Pick<ConsoleEventData, typeof EV.uploadQueued | typeof EV.uploadStarted | typeof EV.uploadCompleted | typeof EV.uploadFailed | typeof EV.uploadCleaned>>;

export const uploadMachine = setup({
  types: { context: {} as UploadContext, events: {} as UploadEvent },
  actions: { recordFailure: assign(({ event }) => ({ failure: event.data as UploadFailed })) },
}).createMachine({
  id: "console-upload",
  initial: "none",
  context: {},
  states: {
    none: { on: { [EV.uploadQueued]: { target: "queued", actions: assign(({ event }) => ({ upload: event.data })) } } },
    queued: { on: { [EV.uploadStarted]: "active" } },
    active: {
      meta: { effect: "commit" },
      on: {
        [EV.uploadCompleted]: { target: "completed", actions: assign(({ event }) => ({ storage_object_id: event.data.storage_object_id })) },
        [EV.uploadFailed]: { target: "failing", actions: "recordFailure" },
      },
    },
    failing: { meta: { effect: "cleanup", durableBefore: true }, on: { [EV.uploadCleaned]: "failed" } },
    completed: { type: "final" },
    failed: { type: "final" },
  },
});
