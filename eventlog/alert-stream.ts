// Publishing to the ALERTS stream. Every alert is stored with Nats-Msg-Id = its id, so a retried publish (a lost
// ack, a redone projection batch) is a no-op inside the stream's duplicate window.
import { createHash } from "node:crypto";
import type { JetStreamClient } from "@nats-io/jetstream";
import { STREAMS } from "./subjects.ts";
import { uuidFromDigest, type AlertEnvelope } from "../schemas/alerts.ts";

const encoder = new TextEncoder();

/** A stable alert id from the name of what it is about (e.g. the event it was derived from). */
export function alertId(name: string): string {
  return uuidFromDigest(createHash("sha256").update(name).digest());
}

export async function publishAlert(js: JetStreamClient, alert: AlertEnvelope, timeoutMs = 5_000): Promise<{ seq: number; duplicate: boolean }> {
  const ack = await js.publish(alert.type, encoder.encode(JSON.stringify(alert)), {
    msgID: alert.id,
    timeout: timeoutMs,
    expect: { streamName: STREAMS.alerts },
  });
  return { seq: ack.seq, duplicate: ack.duplicate };
}
