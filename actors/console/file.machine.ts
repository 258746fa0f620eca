// File lifecycle (spec/console.md, States: file — completed, deleting, deleted). A file is completed when its
// upload job completes (the upload aggregate records it); its own aggregate begins with DELETE, which marks it
// deleting at once (the command carries what the worker needs to know about the stored object); the `release`
// effect removes the object from storage, confirms it is gone and frees the file's name; then it is deleted.
// Repeated deletes decide nothing (deduplicated). A failed upload stored nothing and is discarded at once.
import { assign, setup } from "xstate";
import { EV, type FileDeleteRequested, type ConsoleEventData } from "../../schemas/console/events.ts";
import type { MachineEventOf } from "../../schemas/envelope.ts";

export interface FileContext {
  file?: FileDeleteRequested;
}

type FileEvent = MachineEventOf<Pick<ConsoleEventData, typeof EV.fileDeleteRequested | typeof EV.fileDeleted>>;

export const fileMachine = setup({ types: { context: {} as FileContext, events: {} as FileEvent } }).createMachine({
  id: "console-file",
  initial: "completed",
  context: {},
  states: {
    completed: { on: { [EV.fileDeleteRequested]: { target: "deleting", actions: assign(({ event }) => ({ file: event.data })) } } },
    deleting: {
      meta: { effect: "release", durableBefore: true },
      on: { [EV.fileDeleted]: "deleted" },
    },
    deleted: { type: "final" },
  },
});
