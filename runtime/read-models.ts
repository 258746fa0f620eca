// Every read model of the stack — the relayer's, the developer console's and the blob store's — as `memrelay replay`
// and `memrelay lag` address them (and the rebuild benchmark measures them). Only projection modules are imported:
// the operator commands load this without the services that run the stack.
import type { EventLog } from "../eventlog/connection.ts";
import type { Projection } from "../projections/runtime.ts";
import { memoryIndexProjection } from "../projections/relayer/memory-index.ts";
import { lexicalIndexProjection } from "../projections/relayer/lexical-index.ts";
import { jobStatusProjection } from "../projections/relayer/job-status.ts";
import { oauthProjection } from "../projections/relayer/oauth.ts";
import { alertsProjection } from "../projections/relayer/alerts.ts";
import { consoleProjections } from "../projections/console/read-models.ts";
import { blobstoreProjections } from "../projections/blobstore/read-models.ts";

/** The relayer's projections; with `alerts`, also the one publishing upload-failure alerts (it needs the log). */
export function relayerProjections(dims: number, alerts?: { log: EventLog; network: string }, embedder?: string): Projection[] {
  return [memoryIndexProjection(dims, embedder), lexicalIndexProjection, jobStatusProjection, oauthProjection, ...(alerts ? [alertsProjection(alerts.log, { network: alerts.network })] : [])];
}

export function everyProjection(dims: number, alerts: { log: EventLog; network: string }): Projection[] {
  return [...relayerProjections(dims, alerts), ...consoleProjections, ...blobstoreProjections()];
}
