// The event envelope every service appends to the log (DESIGN.md 2.1). Pure types, no I/O.

export interface EventEnvelope<T extends string = string, D = unknown> {
  readonly type: T;
  readonly version: number;
  readonly id: string;
  /** `<aggregate type>.<aggregate id>`, also the subject suffix after `evt.` */
  readonly aggregate: string;
  readonly occurred_at: string;
  readonly causation_id: string;
  readonly correlation_id: string;
  readonly data: D;
}

/** One append: the events produced by one transition, stored as one JetStream message so they commit atomically. */
export interface EventCommit {
  readonly events: readonly EventEnvelope[];
}

/** An event as read back from the log, with its stream position. */
export interface StoredEvent<E extends EventEnvelope = EventEnvelope> {
  readonly seq: number;
  readonly subject: string;
  readonly event: E;
}

/** A command on the work queue. Commands may carry plaintext; they never leave the CMD stream. */
export interface CommandEnvelope<T extends string = string, D = unknown> {
  readonly type: T;
  readonly version: number;
  /** Command id: also the JetStream `Nats-Msg-Id`, so a re-published command is deduplicated. */
  readonly id: string;
  readonly aggregate: string;
  readonly issued_at: string;
  readonly correlation_id: string;
  readonly data: D;
}

export type Upcaster = (event: EventEnvelope) => EventEnvelope;

/** Upcasting happens in one place: register per event type, applied when events are read. */
export function upcast(event: EventEnvelope, upcasters: ReadonlyMap<string, Upcaster>): EventEnvelope {
  const up = upcasters.get(event.type);
  return up ? up(event) : event;
}
