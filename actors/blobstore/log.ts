// The blob store's access to the event log: the current state of an aggregate is the last event on its subject
// (events carry full state), read straight from JetStream so decisions never depend on a lagging read model. Writes
// go through the aggregate store (eventlog/aggregate-store.ts) with the deciders of deciders.ts.
import type { EventLog } from "../../eventlog/connection.ts";
import { AggregateStore, JetStreamCommitLog, type Fold } from "../../eventlog/aggregate-store.ts";
import { lastEventSeq } from "../../eventlog/last-message.ts";
import { aggregateOf, type BlobstoreEvent, type Kind } from "../../schemas/blobstore/events.ts";
import { systemClock, type Clock } from "../clock.ts";

export class BlobstoreLog {
  readonly store: AggregateStore;

  constructor(
    readonly log: EventLog,
    /** The time commands decide at (actors/clock.ts). */
    readonly clock: Clock = systemClock,
  ) {
    this.store = new AggregateStore(new JetStreamCommitLog(log));
  }

  /** The current state of an aggregate, as `fold` reads it from the log. */
  async state<S>(kind: Kind, id: string, fold: Fold<S, BlobstoreEvent>): Promise<S> {
    return (await this.store.read(aggregateOf(kind, id), fold)).state;
  }

  /** Stream sequence of the last event matching a subject filter (e.g. `evt.bs_blob.>`), 0 when none. */
  async lastSeq(filter: string): Promise<number> {
    return lastEventSeq(this.log.jsm, filter);
  }
}
