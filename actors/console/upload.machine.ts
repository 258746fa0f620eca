// Upload job lifecycle (spec/console.md, States: upload — queued, active, completed, failed). The bytes were
// streamed into storage while the request was read; the job is queued while its command waits on the work queue,
// active once a worker took it, and then `commit` reads the bucket's state and the space's quota (`checks_seen`, a
// fact); the machine's guards decide: a bucket gone or a quota exceeded fail the upload (`reject`), else it
// completes (`complete`). Logs from before the checks were recorded go from active to the outcome directly. The
// checks take milliseconds, so started and its outcome are appended in one commit with queued (one append and one
// read-model write per upload instead of two; a crash before it repeats the checks). A failure removes the stored
// bytes and releases the name (`cleanup`, recorded before it runs).
import { assign, setup } from "xstate";
import { CODE } from "../../schemas/console/http.ts";
import { EV, type UploadChecksSeen, type UploadFailed, type UploadQueued, type ConsoleEventData } from "../../schemas/console/events.ts";
import type { MachineEventOf } from "../../schemas/envelope.ts";

export interface UploadContext {
  upload?: UploadQueued;
  storage_object_id?: string;
  failure?: UploadFailed;
  /** Why the checks refused the upload: what `reject` records. */
  rejection?: { readonly code: string; readonly message: string };
  /** When the checks were seen: the time of the outcome they lead to. */
  checked_at?: string;
}

/** Why the checks seen refuse an upload of `size` bytes, if they do (pure: the machine's guards and tests use it). */
export function rejectionOf(seen: UploadChecksSeen, size: number): { code: string; message: string } | undefined {
  if (seen.bucket_state === "deleting" || seen.bucket_state === "deleted") return { code: "bucket_deleted", message: "the bucket was deleted while the file was uploading" };
  if (seen.storage_used + size > seen.storage_cap) return { code: CODE.quotaExceeded, message: `the space's storage quota of ${seen.storage_cap} bytes would be exceeded` };
  return undefined;
}

type UploadEvent = MachineEventOf<Pick<ConsoleEventData, typeof EV.uploadQueued | typeof EV.uploadStarted | typeof EV.uploadCompleted | typeof EV.uploadFailed | typeof EV.uploadCleaned | typeof EV.uploadChecksSeen>>;

export const uploadMachine = setup({
  types: { context: {} as UploadContext, events: {} as UploadEvent },
  actions: { recordFailure: assign(({ event }) => (event.type === EV.uploadFailed ? { failure: event.data } : {})) },
  guards: {
    refused: ({ context, event }) => event.type === EV.uploadChecksSeen && rejectionOf(event.data, context.upload?.size ?? 0) !== undefined,
  },
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
        [EV.uploadChecksSeen]: [
          {
            guard: "refused",
            target: "rejecting",
            actions: assign(({ context, event }) => ({ rejection: rejectionOf(event.data, context.upload?.size ?? 0), checked_at: event.data.seen_at })),
          },
          { target: "completing", actions: assign(({ event }) => ({ checked_at: event.data.seen_at })) },
        ],
        [EV.uploadCompleted]: { target: "completed", actions: assign(({ event }) => ({ storage_object_id: event.data.storage_object_id })) },
        [EV.uploadFailed]: { target: "failing", actions: "recordFailure" },
      },
    },
    completing: {
      meta: { effect: "complete" },
      on: { [EV.uploadCompleted]: { target: "completed", actions: assign(({ event }) => ({ storage_object_id: event.data.storage_object_id })) } },
    },
    rejecting: { meta: { effect: "reject" }, on: { [EV.uploadFailed]: { target: "failing", actions: "recordFailure" } } },
    failing: { meta: { effect: "cleanup", durableBefore: true }, on: { [EV.uploadCleaned]: "failed" } },
    completed: { type: "final" },
    failed: { type: "final" },
  },
});
