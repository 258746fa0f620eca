// What the console's actors reach the world through. Effects are idempotent and keyed by their aggregate id.
import type { Db } from "../../db/pool.ts";
import type { Logger } from "../../config/logger.ts";
import type { SponsoredChainPort } from "../../adapters/ports.ts";
import type { ConsoleLog } from "./log.ts";
import type { StoragePort } from "../../adapters/file-storage/blobstore-http.ts";

export interface ConsoleActorPorts {
  /** The console's log; its `clock` (actors/clock.ts) is the time effects record what they saw and did at. */
  readonly clog: ConsoleLog;
  readonly storage: StoragePort;
  readonly chain: SponsoredChainPort;
  /** The console's sponsor: co-signs sponsored transactions and pays the gas of blob records. */
  readonly sponsorKey: Uint8Array;
  /** Read models, for checks an effect makes at commit time (storage quota). */
  readonly db: Db;
  readonly logger: Logger;
}
