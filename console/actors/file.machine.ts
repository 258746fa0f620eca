// File lifecycle (spec/console.md, States: file — completed, deleting, deleted). A completed upload records the
// file; DELETE marks it deleting at once and the `release` effect removes the stored object, confirms it is gone and
// releases the file's name; then it is deleted. Repeated deletes decide nothing (deduplicated). A delete that
// overtakes the record command on the work queue waits in delete_pending; a failed upload is discarded directly.
import { assign, setup } from "xstate";
import { EV, type FileDeleted, type FileRecorded } from "../../schemas/console-events.ts";

export interface FileContext {
  file?: FileRecorded;
}

type FileEvent =
  | { type: typeof EV.fileRecorded; data: FileRecorded }
  | { type: typeof EV.fileDeleteRequested; data: unknown }
  | { type: typeof EV.fileDeleted; data: FileDeleted };

export const fileMachine = setup({ types: { context: {} as FileContext, events: {} as FileEvent } }).createMachine({
  id: "console-file",
  initial: "none",
  context: {},
  states: {
    none: {
      on: {
        [EV.fileRecorded]: { target: "completed", actions: assign(({ event }) => ({ file: event.data })) },
        [EV.fileDeleteRequested]: "delete_pending",
      },
    },
    delete_pending: {
      on: {
        [EV.fileRecorded]: { target: "deleting", actions: assign(({ event }) => ({ file: event.data })) },
        [EV.fileDeleted]: "deleted",
      },
    },
    completed: { on: { [EV.fileDeleteRequested]: "deleting" } },
    deleting: { meta: { effect: "release", durableBefore: true }, on: { [EV.fileDeleted]: "deleted" } },
    deleted: { type: "final" },
  },
});
