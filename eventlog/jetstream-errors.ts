// JetStream's refusals told apart by the codes nats.js exposes (JetStreamApiError.code, the server's err_code), not
// by the wording of messages, which servers and client versions are free to change.
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";

// Codes nats.js does not name (nats-server's errors.json).
const CONSUMER_NAME_EXISTS = 10013;
const CONSUMER_ALREADY_EXISTS = 10148;

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
