// Upcasters by event type: every event read from the log passes through here, so readers only ever see the
// current version of each event. Add an entry when an event's `version` is bumped; none exist yet (all v1).
import type { Upcaster } from "./envelope.ts";

export const UPCASTERS: ReadonlyMap<string, Upcaster> = new Map();
