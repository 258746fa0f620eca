// What a sponsorship request can be refused for (actors/relayer/sponsor-rules.ts, sponsorship.ts): decisions and port
// outcomes in the domain's words. How each reads on the wire (status, text, retry-after) is the edge's business:
// gateway/relayer/sponsor-refusals.ts, which the sidecar's routes answer with.

export type SponsorStep = "sponsor" | "execute";

export type SponsorError =
  | { readonly code: "stale_request"; readonly clockWindowSecs: number }
  | { readonly code: "auth_signature_mismatch" }
  | { readonly code: "not_a_transaction_kind" }
  | { readonly code: "trailing_bytes" }
  /** not exactly one allowlisted account call of the memory package */
  | { readonly code: "call_not_sponsored" }
  | { readonly code: "gas_coin_argument" }
  | { readonly code: "nonce_used" }
  | { readonly code: "sponsorship_unknown"; readonly digest: string }
  | { readonly code: "other_sender" }
  | { readonly code: "already_executed" }
  | { readonly code: "sender_signature_mismatch" }
  /** the provider invalidated the sponsored transaction before it ran */
  | { readonly code: "expired"; readonly reason: string }
  /** the provider refused this relayer's own credentials */
  | { readonly code: "provider_credentials" }
  /** a refusal that asking again will not change */
  | { readonly code: "refused"; readonly step: SponsorStep; readonly reason: string }
  /** the sponsor or the chain did not answer after the retries */
  | { readonly code: "unavailable"; readonly step: SponsorStep };

export class SponsorRefusal extends Error {
  constructor(readonly error: SponsorError) {
    super(`sponsorship refused: ${error.code}`);
  }
}

export const refuse = (error: SponsorError) => new SponsorRefusal(error);
