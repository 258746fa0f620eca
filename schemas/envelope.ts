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

/** An event about to be appended: the store adds the envelope's ids and time. */
export interface NewEvent<T extends string = string, D = unknown> {
  readonly type: T;
  readonly version: number;
  readonly data: D;
}

/**
 * An aggregate's event catalogue is an interface mapping each event type to its data (e.g. `JobEventData`). These
 * derive the unions the event store, the actors and the projections use, so a changed field fails the build
 * wherever it is read or written.
 */
type TypeOf<C> = keyof C & string;
/** An event of catalogue C about to be appended. */
export type NewEventOf<C> = { [T in TypeOf<C>]: NewEvent<T, C[T]> }[TypeOf<C>];
/** An event of catalogue C as read back from the log (at its current version: upcast on read). */
export type EventOf<C> = { [T in TypeOf<C>]: EventEnvelope<T, C[T]> }[TypeOf<C>];

/** Catalogue C's events as an actor's machine receives them (`{type, data}`, actors/host.ts toMachineEvent). */
export type MachineEventOf<C> = { [T in TypeOf<C>]: { readonly type: T; readonly data: C[T] } }[TypeOf<C>];

/** The event of type T of catalogue C, as read back. */
export type EventOfType<C, T extends TypeOf<C>> = EventEnvelope<T, C[T]>;

/** The catalogue's constructor: `newEvent(type, data)` with the current version of that type filled in. */
export function eventsOf<C>(currentVersion: { readonly [T in TypeOf<C>]: number }) {
  return <T extends TypeOf<C>>(type: T, data: C[T]): NewEvent<T, C[T]> => ({ type, version: currentVersion[type], data });
}

/** Catalogue C's guard: an envelope read from the log (already upcast) is one of C's events when its type is one of C's. */
export function isEventOf<C>(currentVersion: { readonly [T in TypeOf<C>]: number }) {
  return (e: EventEnvelope): e is EventOf<C> => Object.hasOwn(currentVersion, e.type);
}

/**
 * A command about to be published: what its issuer decides (type, version, data). The command bus adds the envelope
 * (id, aggregate, `issued_at`, correlation), like the event store does for events.
 */
export type NewCommand<T extends string = string, D = unknown> = NewEvent<T, D>;
/** A command of catalogue C (an interface mapping each command type to its data, e.g. `ConsoleCommandData`) about to be published. */
export type NewCommandOf<C> = NewEventOf<C>;
/** A command of catalogue C as its actor receives it: `decide` switches on `type`, and `data` follows. */
export type CommandOf<C> = { [T in TypeOf<C>]: CommandEnvelope<T, C[T]> }[TypeOf<C>];
/** A command catalogue's constructor: `newCommand(type, data)` with the current version of that type filled in. */
export const commandsOf: <C>(currentVersion: { readonly [T in TypeOf<C>]: number }) => <T extends TypeOf<C>>(type: T, data: C[T]) => NewCommand<T, C[T]> = eventsOf;

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
