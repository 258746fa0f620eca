// The last message on a subject, or null: an aggregate's current state, the command still queued for it, or the
// sequence a reader waits for a read model to reach. One lookup for every stream, so "none" means the same everywhere.
import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import { isNoMessage } from "./jetstream-errors.ts";
import { STREAMS } from "./subjects.ts";

/** The last message of `stream` on `subject` (a filter may have wildcards), null when it has none. */
export async function lastMessage(jsm: JetStreamManager, stream: string, subject: string): Promise<StoredMsg | null> {
  return jsm.streams.getMessage(stream, { last_by_subj: subject }).catch((err) => {
    if (isNoMessage(err)) return null;
    throw err;
  });
}

/** Stream sequence of the last event on a subject filter, 0 when none. */
export async function lastEventSeq(jsm: JetStreamManager, filter: string): Promise<number> {
  return (await lastMessage(jsm, STREAMS.events, filter))?.seq ?? 0;
}
