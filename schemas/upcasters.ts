// Upcasters by event type: every event read from the log passes through here, so readers only ever see the
// current version of each event. Add an entry when an event's `version` is bumped.
import type { EventEnvelope, Upcaster } from "./envelope.ts";
import { JOB_EVENTS, JOB_VECTOR_EVENT_VERSION } from "./relayer/remember-job.ts";
import { encodeVectorF32 } from "./vector-wire.ts";

/** job.uploaded / job.indexed v1 → v2: the vector from JSON numbers (`vector`) to `vector_f32`. */
const jobVectorV2: Upcaster = (event: EventEnvelope) => {
  if (event.version !== 1) return event;
  const { vector, ...rest } = event.data as { vector: readonly number[] };
  return { ...event, version: JOB_VECTOR_EVENT_VERSION, data: { ...rest, vector_f32: encodeVectorF32(vector) } };
};

export const UPCASTERS: ReadonlyMap<string, Upcaster> = new Map([
  [JOB_EVENTS.uploaded, jobVectorV2],
  [JOB_EVENTS.indexed, jobVectorV2],
]);
