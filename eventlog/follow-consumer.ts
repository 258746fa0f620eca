// The consumer a projection runner follows the event log with: one ephemeral pull consumer of its own, named, read
// from one position until it is lost, and then given up (deleted) for a new one from the read models' checkpoints.
//
// Why not nats.js's ordered consumer: it recreates its consumer by itself after a loss (a NATS node killed, JetStream
// unavailable for a while), and its only check on what arrives is the delivery sequence. While it recreates one, a
// pull still queued for the consumer it gave up is sent with the new reply subject, and a consumer info answered late
// makes the old consumer current again (nats.js 3.4 consumer.js: `pull` fixes the subject when queued and the reply
// when sent; `resetPendingWithInfo` writes back `_info`): two consumers, from different positions, can then deliver to
// one inbox, and a delivery sequence that fits says nothing of the stream sequence. A projection lane drops what it
// already passed (`seq <= lastSeq`), so a commit from a consumer ahead let the lane's checkpoint move past commits it
// never applied: the likely way issue 32's chaos run left job-status rows at `uploaded` with their `job.indexed` in
// the log. The consumers it gave up were never deleted either (about 200 on EVT after a short chaos run). Here a loss
// ends the follow, and every message must be this one consumer's next delivery, at a stream sequence past the last,
// or the follow ends too: the runner starts again from what its lanes committed, which loses nothing.
//
// The bounded reads take the same consumer for the same check: an aggregate's history (EventStore.load, on every
// actor step and job lookup) and the local ledger's replay of chain blocks. An ordered consumer there could as well
// pass a skipped or repeated commit off as the history, and costs more: it asks for the stream's info before making
// its consumer, while this one is made from the answer to its creation (a load: 4 requests instead of 5).
import { randomUUID } from "node:crypto";
import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JsMsg } from "@nats-io/jetstream";
import type { EventLog } from "./connection.ts";
import { STREAMS } from "./subjects.ts";
import { LIVE_CONSUME } from "./live-consume.ts";
import { EventLogOutage } from "./outage.ts";

/** A delivery that is not the next one of the consumer: what lay between it and the last one must be read again. */
export class DeliveryOutOfOrder extends Error {}

/** The consumer's node stopped answering (missed heartbeats): a new consumer may be served by another node. */
export class ConsumerSilent extends EventLogOutage {}

/**
 * Heartbeats (LIVE_CONSUME.idle_heartbeat apart) missed in a row before the follow ends. nats.js answers missed
 * heartbeats by asking the consumer's node for its info and pulling again, and keeps at it for as long as that node
 * does not answer: a follower of a paused node (SIGSTOP, a frozen VM) waited out the whole pause while the rest of the
 * cluster served. Three, not nats.js's two: an event loop held for a second or two misses one and is not a silent node.
 */
const SILENT_AFTER_HEARTBEATS = 3;

/**
 * How long the server keeps a consumer nobody pulls from: one this process could not delete (its node was down) goes
 * away by itself soon after. A live follower pulls at least every LIVE_CONSUME.expires.
 */
const ABANDONED_AFTER_NS = 30_000 * 1e6;

export interface FollowConsumer {
  readonly messages: ConsumerMessages;
  /** Matching messages the log held past the start when the consumer was made. */
  readonly pending: number;
  /** Throws DeliveryOutOfOrder unless `m` is this consumer's next delivery, past the previous stream sequence. */
  check(m: JsMsg): void;
  /** Stops reading and deletes the consumer (a server that cannot be reached lets it expire instead). */
  close(): Promise<void>;
}

/** A consumer of `filter` on `stream` (the event log's by default) from stream sequence `after` + 1 (0: from the start). */
export async function followConsumer(log: Pick<EventLog, "js" | "jsm">, filter: string, after: number, maxMessages: number, stream: string = STREAMS.events): Promise<FollowConsumer> {
  const name = `follow_${randomUUID().replaceAll("-", "")}`;
  const info = await log.jsm.consumers.add(stream, {
    name,
    filter_subject: filter,
    ack_policy: AckPolicy.None,
    ...(after > 0 ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 } : { deliver_policy: DeliverPolicy.All }),
    inactive_threshold: ABANDONED_AFTER_NS,
    mem_storage: true,
    num_replicas: 1,
  });
  const remove = () => log.jsm.consumers.delete(stream, name).then(() => undefined, () => undefined);
  let messages: ConsumerMessages;
  try {
    // A consumer deleted or lost with its node ends the iteration with an error instead of being waited for.
    messages = await log.js.consumers.getConsumerFromInfo(info).consume({ ...LIVE_CONSUME, max_messages: maxMessages, abort_on_missing_resource: true });
  } catch (err) {
    await remove();
    throw err;
  }
  void endWhenSilent(messages, name);
  let delivered = 0;
  let lastSeq = after;
  return {
    messages,
    pending: info.num_pending,
    check(m) {
      // Without acks, a delivery lost on the way (a reconnect) is not sent again: the consumer's counter shows the gap.
      if (m.info.deliverySequence !== delivered + 1 || m.seq <= lastSeq) {
        throw new DeliveryOutOfOrder(`consumer ${name} delivered #${m.seq} as delivery ${m.info.deliverySequence} after #${lastSeq} as delivery ${delivered}`);
      }
      delivered = m.info.deliverySequence;
      lastSeq = m.seq;
    },
    async close() {
      messages.stop();
      await remove();
    },
  };
}

/** Ends `messages` with ConsumerSilent once its node has missed SILENT_AFTER_HEARTBEATS heartbeats in a row. */
async function endWhenSilent(messages: ConsumerMessages, name: string): Promise<void> {
  try {
    for await (const s of messages.status()) {
      if (s.type === "heartbeats_missed" && s.count >= SILENT_AFTER_HEARTBEATS) {
        messages.stop(new ConsumerSilent(`consumer ${name} missed ${s.count} heartbeats`));
        return;
      }
    }
  } catch {
    // the status feed ends with the consumer
  }
}
