// JetStream's refusals told apart by the codes nats.js exposes (JetStreamApiError.code, the server's err_code), not
// by the wording of messages, which servers and client versions are free to change.
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { JetStreamStatusError, jserrors } from "@nats-io/jetstream/internal";

// Codes nats.js does not name (nats-server's errors.json).
const CONSUMER_NAME_EXISTS = 10013;
const CONSUMER_ALREADY_EXISTS = 10148;
/** JSClusterNotAvailErr, "JetStream system temporarily unavailable": the meta group has no leader. */
const CLUSTER_NOT_AVAILABLE = 10008;
/** The status a direct get or a pull answers with when JetStream cannot serve it (nats.js: JetStreamStatusError). */
const STATUS_UNAVAILABLE = 503;

const hasCode = (err: unknown, codes: readonly number[]) => err instanceof JetStreamApiError && codes.includes(err.code);

/** An append, or a KV create or update, that expected another last sequence: another writer came first. */
export const isWrongLastSequence = (err: unknown) =>
  hasCode(err, [JetStreamApiCodes.StreamWrongLastSequence, JetStreamApiCodes.StreamWrongLastSequenceUnknown]);

/** A stream or a consumer that does not exist. */
export const isStreamOrConsumerMissing = (err: unknown) => hasCode(err, [JetStreamApiCodes.StreamNotFound, JetStreamApiCodes.ConsumerNotFound]);

/** A message lookup with no match, or on a stream that does not exist (yet): either way there is no such message. */
export const isNoMessage = (err: unknown) => hasCode(err, [JetStreamApiCodes.NoMessageFound, JetStreamApiCodes.StreamNotFound]);

/** Adding a durable consumer that exists already (then its settings are updated instead). */
export const isConsumerExisting = (err: unknown) => hasCode(err, [CONSUMER_NAME_EXISTS, CONSUMER_ALREADY_EXISTS]);

/**
 * JetStream cannot serve for now, and will once its cluster settles: the meta group is electing a leader (10008, or a
 * 503 status on a direct get or a pull), or the server's JetStream API does not answer at all (a node whose JetStream
 * is still starting), which nats.js reports as JetStreamNotEnabled caused by the request's "no responders". The same
 * class caused by the server's own answer (10039, JetStream not enabled for the account) is configuration, not an
 * outage. Issue 32's chaos run: an actor host took these for defects and set remember jobs aside as failed.
 */
export const isJetStreamUnavailable = (err: unknown) =>
  hasCode(err, [CLUSTER_NOT_AVAILABLE]) ||
  (err instanceof JetStreamStatusError && err.code === STATUS_UNAVAILABLE) ||
  (err instanceof jserrors.JetStreamNotEnabled && !(err.cause instanceof JetStreamApiError));
