// The restore job's lifecycle: pending → restoring (effect `restore`: plan, download, decrypt, re-embed, append the
// rows) → completed | failed. Machine events are the job's domain events; no timers (the host drives retries).
import { assign, setup } from "xstate";
import { RESTORE_EVENTS, type RestoreCompleted, type RestoreEventData } from "../../schemas/relayer/restore-job.ts";
import type { MachineEventOf } from "../../schemas/envelope.ts";

export interface RestoreJobContext {
  owner: string;
  namespace: string;
  limit: number;
  include_forgotten: boolean;
  outcome?: RestoreCompleted;
  error?: string;
}

export const restoreJobMachine = setup({
  types: { context: {} as RestoreJobContext, events: {} as MachineEventOf<RestoreEventData> },
}).createMachine({
  id: "restore-job",
  initial: "pending",
  context: { owner: "", namespace: "default", limit: 0, include_forgotten: false },
  states: {
    pending: {
      on: {
        [RESTORE_EVENTS.accepted]: {
          target: "restoring",
          actions: assign(({ event }) => ({ owner: event.data.owner, namespace: event.data.namespace, limit: event.data.limit, include_forgotten: event.data.include_forgotten })),
        },
        [RESTORE_EVENTS.failed]: { target: "failed", actions: assign(({ event }) => ({ error: event.data.error })) },
      },
    },
    restoring: {
      meta: { effect: "restore" },
      on: {
        [RESTORE_EVENTS.completed]: { target: "completed", actions: assign(({ event }) => ({ outcome: event.data })) },
        [RESTORE_EVENTS.failed]: { target: "failed", actions: assign(({ event }) => ({ error: event.data.error })) },
      },
    },
    completed: { type: "final" },
    failed: { type: "final" },
  },
});
