// Events of the quilt aggregate (`quilt.<key>`, MEMRELAY_STORE_MODE=quilt): which remember jobs a quilt holds is
// decided once, in the event log, before the quilt is stored. The first fact appended to a key wins (expected
// sequence 0): `quilt.sealed` (its members, in patch order) or `quilt.abandoned` (a job found its quilt unsealed
// after a crash, so nobody may seal it later). A sealed quilt is rebuilt from its members' `job.encrypted`
// ciphertexts byte for byte, so storing it again gives the same quilt blob id; `quilt.stored` saves that rebuild
// when the store's answer was recorded. Events carry job ids, identifiers and ids, never ciphertext or text.
import { eventsOf, type EventOf, type NewEventOf } from "../envelope.ts";

export const QUILT = "quilt";

export interface QuiltMemberRef {
  readonly job_id: string;
  /** The patch's identifier within the quilt (positional, unique within it). */
  readonly identifier: string;
}
export interface QuiltSealed { readonly members: readonly QuiltMemberRef[] }
export interface QuiltAbandoned { readonly by_job: string }
export interface QuiltStoredPatch { readonly job_id: string; readonly patch_id: string }
export interface QuiltStored { readonly quilt_id: string; readonly patches: readonly QuiltStoredPatch[] }

export const QUILT_EVENTS = {
  sealed: "quilt.sealed",
  abandoned: "quilt.abandoned",
  stored: "quilt.stored",
} as const;

export interface QuiltEventData {
  [QUILT_EVENTS.sealed]: QuiltSealed;
  [QUILT_EVENTS.abandoned]: QuiltAbandoned;
  [QUILT_EVENTS.stored]: QuiltStored;
}
export type QuiltEvent = EventOf<QuiltEventData>;
export type NewQuiltEvent = NewEventOf<QuiltEventData>;

export const quiltEvent = eventsOf<QuiltEventData>({
  [QUILT_EVENTS.sealed]: 1,
  [QUILT_EVENTS.abandoned]: 1,
  [QUILT_EVENTS.stored]: 1,
});

/** What a quilt's events say of it: sealed (members, and the stored result once recorded), abandoned, or nothing yet. */
export type QuiltFate =
  | { readonly state: "unsealed" }
  | { readonly state: "abandoned" }
  | { readonly state: "sealed"; readonly seq: number; readonly members: readonly QuiltMemberRef[]; readonly stored?: QuiltStored };

/** Folds a quilt's events (with their stream sequences), in log order. Pure. */
export function quiltFate(events: readonly { readonly seq: number; readonly event: QuiltEvent }[]): QuiltFate {
  const first = events.find(({ event: e }) => e.type === QUILT_EVENTS.sealed || e.type === QUILT_EVENTS.abandoned);
  if (!first) return { state: "unsealed" };
  if (first.event.type !== QUILT_EVENTS.sealed) return { state: "abandoned" };
  const stored = events.find(({ seq, event: e }) => seq >= first.seq && e.type === QUILT_EVENTS.stored)?.event;
  return { state: "sealed", seq: first.seq, members: first.event.data.members, ...(stored?.type === QUILT_EVENTS.stored ? { stored: stored.data } : {}) };
}
