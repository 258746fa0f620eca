// Outages of the event log that our own code notices (a history read whose consumer went silent) rather than NATS
// reporting them: the unavailability check (adapters/unavailable.ts) knows them by this class, so a caller retries
// them (a lookup answers 503, an actor host redelivers) instead of taking them for a bad command.

/** The event log cannot serve this now; the same call later may succeed. */
export class EventLogOutage extends Error {}
