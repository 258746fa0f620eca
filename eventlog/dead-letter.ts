// Setting a message aside: what an actor or a projection does with a message it cannot apply after bounded retries,
// so nothing else waits behind it. The record goes to the DLQ stream (`dlq.<source>.<name>`) and an alert to
// `alerts.deadletter.<source>`; both carry Nats-Msg-Id derived from the record, so a retried set-aside stores
// neither twice. Operators list them with `memrelay lag` (and `nats stream view DLQ`); docs/alerts.md.
import { createHash } from "node:crypto";
import type { EventLog } from "./connection.ts";
import { STREAMS } from "./subjects.ts";
import { alertId, publishAlert } from "./alert-stream.ts";
import { ALERT_SOURCE, ALERT_SUBJECTS, uuidFromDigest, type DeadLetterAlert, type DeadLetterV1 } from "../schemas/alerts.ts";
import { storableText } from "../schemas/text.ts";

export const DEAD_LETTER_STREAM = STREAMS.deadLetters;
/** Longest error text kept: enough to diagnose, short enough never to carry a payload along. */
const MAX_ERROR_CHARS = 500;

export type DeadLetterInput = Omit<DeadLetterV1, "id" | "dead_lettered_at">;

export function deadLetterRecord(input: DeadLetterInput, now = new Date()): DeadLetterV1 {
  const key = `${input.source}:${input.name}:${input.stream}:${input.stream_seq}`;
  return {
    ...input,
    subject: storableText(input.subject),
    aggregate: storableText(input.aggregate),
    types: input.types.map(storableText),
    error: storableText(input.error).slice(0, MAX_ERROR_CHARS),
    id: uuidFromDigest(createHash("sha256").update(key).digest()),
    dead_lettered_at: now.toISOString(),
  };
}

/** Publishes the record to the DLQ stream and raises its alert. */
export async function setAside(log: EventLog, record: DeadLetterV1, network: string): Promise<void> {
  await log.js.publish(`dlq.${record.source}.${record.name.replace(/[^A-Za-z0-9_-]/g, "_")}`, JSON.stringify(record), {
    msgID: record.id,
    expect: { streamName: DEAD_LETTER_STREAM },
  });
  const alert: DeadLetterAlert = {
    type: record.source === "projection" ? ALERT_SUBJECTS.deadLetterProjection : ALERT_SUBJECTS.deadLetterActor,
    version: 1,
    id: alertId(`deadletter:${record.id}`),
    occurred_at: record.dead_lettered_at,
    emitted_at: new Date().toISOString(),
    source: ALERT_SOURCE,
    network,
    severity: "critical",
    text: `${record.source} ${record.name} set aside ${record.stream} #${record.stream_seq} (${record.types.join(", ")}) after ${record.attempts} attempts: ${record.error}`,
    data: record,
  };
  await publishAlert(log.js, alert);
}

/** Dead letters on the DLQ stream per `<source>.<name>`, for `memrelay lag` and the metrics gauge. */
export async function deadLetterCounts(log: EventLog): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const info = await log.jsm.streams.info(DEAD_LETTER_STREAM, { subjects_filter: ">" }).catch(() => undefined);
  for (const [subject, n] of Object.entries(info?.state.subjects ?? {})) counts.set(subject.slice("dlq.".length), n);
  return counts;
}
