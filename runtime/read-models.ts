// Every read model of the stack — the relayer's, the developer console's and the blob store's — as `memrelay replay`
// and `memrelay lag` address them (and the rebuild benchmark measures them).
import type { EventLog } from "../eventlog/connection.ts";
import type { Projection } from "../projections/runtime.ts";
import { relayerProjections } from "./relayer-stack.ts";
import { consoleProjections } from "../projections/console/read-models.ts";
import { blobstoreProjections } from "../projections/blobstore/read-models.ts";

export function everyProjection(dims: number, alerts: { log: EventLog; network: string }): Projection[] {
  return [...relayerProjections(dims, alerts), ...consoleProjections, ...blobstoreProjections()];
}
