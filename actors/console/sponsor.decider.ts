// A sponsorship request's decisions, pure (like bucket.decider.ts): which bucket an access group may be created for,
// and whether a reserved transaction is executed, answered from its outcome, or unknown to the caller.
import { accept, reject, type Decision, type Fold } from "../../eventlog/aggregate-store.ts";
import { EV, type ConsoleMachineEvent, type SponsorExecuted, type SponsorReserved } from "../../schemas/console/events.ts";
import { verifySenderSignature } from "../../adapters/chain/sui/signatures.ts";
import { inactive, type BucketFacts } from "./bucket.decider.ts";
import type { ConsoleError } from "./errors.ts";

type Decided<R> = Decision<R, ConsoleError>;

/** An access group is created for an active private bucket that has its encryption policy; the verdict is the policy. */
export function groupPolicy(b: BucketFacts): Decided<string> {
  if (b.visibility !== "private") return reject({ code: "group_needs_private_bucket" });
  const notActive = inactive(b);
  if (notActive) return reject(notActive);
  if (!b.encryption_policy_id) return reject({ code: "bucket_without_policy" });
  return accept(b.encryption_policy_id);
}

/** A sponsored transaction as its events tell it: its reservation and the last of them. */
export interface SponsorState {
  readonly reservation: SponsorReserved | null;
  readonly last: ConsoleMachineEvent | null;
}

export const SPONSOR: Fold<SponsorState, ConsoleMachineEvent> = {
  initial: { reservation: null, last: null },
  evolve: (s, e) => ({ reservation: s.reservation ?? (e.type === EV.sponsorReserved ? e.data : null), last: e }),
};

export interface ExecuteSponsored {
  readonly digest: string;
  readonly userId: string;
  readonly signature: string;
}

/** `executed`: the transaction already ran, answered from its outcome; else the execute command is published. */
export type Execution = { readonly executed: SponsorExecuted | null };

/**
 * Only the user who reserved a transaction executes it (to anyone else it is unknown), with the service key's
 * signature of the reserved bytes; an expired one is unknown, an executed one answers with its outcome again.
 */
export const executeSponsored =
  (c: ExecuteSponsored) =>
  (s: SponsorState): Decided<Execution> => {
    if (!s.reservation || s.reservation.user_id !== c.userId) return reject({ code: "sponsorship_unknown", digest: c.digest });
    if (s.last?.type === EV.sponsorExecuted) return accept({ executed: s.last.data });
    if (s.last?.type === EV.sponsorExpired) return reject({ code: "sponsorship_unknown", digest: c.digest });
    if (!verifySenderSignature(s.reservation.tx_bytes, c.signature, s.reservation.sender)) return reject({ code: "sponsor_signature_mismatch", sender: s.reservation.sender });
    return accept({ executed: null });
  };
