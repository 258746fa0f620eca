// Stream and subject names of the event log (DESIGN.md 2.1). One place, so a search for a subject finds its owner.

export const STREAMS = {
  commands: "CMD",
  events: "EVT",
  alerts: "ALERTS",
  chain: "CHAIN",
  /** Messages an actor or a projection could not apply after bounded retries (eventlog/dead-letter.ts). */
  deadLetters: "DLQ",
} as const;

export const SUBJECTS = {
  commands: "cmd.>",
  events: "evt.>",
  alerts: "alerts.>",
  chain: "chain.>",
  deadLetters: "dlq.>",
} as const;

export const KV_BUCKETS = {
  snapshots: "snapshots",
  nonces: "nonces",
  /** Low-balance alert dedup claims, one key per (network, wallet type, token, address). */
  alertDedup: "alert_dedup",
} as const;

/**
 * Core NATS (not a stream): a projection runner announces here the checkpoint of every batch it commits, so readers
 * can wait for read models without polling Postgres (projections/checkpoint-feed.ts). At most once: readers recheck.
 */
export const PROJECTION_APPLIED = "proj.applied";
export const projectionAppliedSubject = (projection: string) => `${PROJECTION_APPLIED}.${projection}`;

/**
 * Core NATS: the job-status read model announces here, after each batch it commits, the jobs that finished in it
 * (schemas/relayer/remember-job.ts JobOutcome[] as JSON). One subscription per gateway serves all its long polls.
 * At most once, like PROJECTION_APPLIED: a long poll also rereads the job now and then.
 */
export const JOB_OUTCOMES = "proj.job_outcomes";

export const commandSubject = (aggregateType: string, aggregateId: string) => `cmd.${aggregateType}.${aggregateId}`;
export const eventSubject = (aggregateType: string, aggregateId: string) => `evt.${aggregateType}.${aggregateId}`;
/** Event subject of an aggregate named `<type>.<id>`, as envelopes and the event store name it. */
export const aggregateEventSubject = (aggregate: string) => `evt.${aggregate}`;
/** Every command or event subject of an aggregate type: a consumer's or a projection's filter, a barrier to wait for. */
export const commandFilter = (aggregateType: string) => `cmd.${aggregateType}.>`;
export const eventFilter = (aggregateType: string) => `evt.${aggregateType}.>`;
