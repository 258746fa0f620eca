// Which event log a database's read models belong to. A read model records the identity of the EVT stream its
// checkpoint counts in (the stream's creation time) and the NATS server it was read from. Another log finding them
// asks that server whether the recorded log is still there: if it answers with the same identity, another stack is
// running on this database and rebuilding its read models under it would corrupt both, so the start is refused.
// A log that no longer answers (a stack that stopped for good, a store wiped) leaves read models any log may rebuild.
import { AuthorizationError, connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import type { EventLog } from "../eventlog/connection.ts";
import { STREAMS } from "../eventlog/subjects.ts";

export interface LogIdentity {
  /** The EVT stream's creation time: two logs never share it. */
  readonly created: string;
  /** host:port of the NATS server it was read from (no credentials). */
  readonly server: string;
}

/** How long a recorded server gets to answer: a stopped local stack refuses at once; a remote one may be slow. */
const PROBE_TIMEOUT_MS = 3_000;

export async function identityOf(log: EventLog): Promise<LogIdentity> {
  return { created: (await log.jsm.streams.info(STREAMS.events)).created, server: log.nc.getServer() };
}

/**
 * Whether the log `other` is still served at its recorded server. A server that cannot be reached, or that holds
 * another EVT stream (or none), means that log is gone. A server that refuses to say (authorization) counts as
 * alive: wrongly refusing a start is recoverable (`memrelay replay`), wrongly rebuilding another stack's read models
 * is what this guards against.
 */
export async function logStillAnswers(other: LogIdentity): Promise<boolean> {
  const nc = await connect({ servers: other.server, name: "memrelay-log-probe", timeout: PROBE_TIMEOUT_MS, reconnect: false, maxReconnectAttempts: 0 }).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
  if (nc instanceof Error) return nc instanceof AuthorizationError;
  try {
    const jsm = await jetstreamManager(nc, { timeout: PROBE_TIMEOUT_MS });
    const info = await jsm.streams.info(STREAMS.events).catch(() => undefined);
    return info?.created === other.created;
  } catch {
    // JetStream not enabled there, or it did not answer in time: not the recorded log.
    return false;
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/** A start refused because the database holds read models of another, running event log. */
export class ReadModelOfAnotherLog extends Error {
  constructor(projection: string, other: LogIdentity) {
    super(
      `read model ${projection} in this database was built from another event log that is still running (NATS at ${other.server}, stream created ${other.created}): ` +
        "two stacks must not share a database. Give this stack its own database (DATABASE_URL), or its own data directory (MEMRELAY_DATA_DIR: " +
        "`memrelay start` names the database after it); to rebuild this database from this event log on purpose, run `memrelay replay`.",
    );
  }
}
