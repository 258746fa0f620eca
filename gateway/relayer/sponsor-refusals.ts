// How a sponsorship refusal (actors/relayer/sponsor-refusals.ts) reads on the wire (spec/relayer.md, /sponsor and
// /sponsor/execute): status, text and retry-after, in one place.
import { HttpError } from "../../schemas/http-error.ts";
import { SPONSORED_ACCOUNT_CALLS } from "../../schemas/relayer/sponsor.ts";
import type { SponsorError } from "../../actors/relayer/sponsor-refusals.ts";

const ONLY_ACCOUNT_CALLS = `only one call to ${SPONSORED_ACCOUNT_CALLS.map((f) => `account::${f}`).join(", ")} of the memory package qualifies for sponsorship`;

export function sponsorHttpError(e: SponsorError): HttpError {
  switch (e.code) {
    case "stale_request":
      return new HttpError(401, `authTimestamp is outside the clock window of ${e.clockWindowSecs} s; sign a fresh request`);
    case "auth_signature_mismatch":
      return new HttpError(401, "authSignature is not the sender's personal-message signature over this sponsor request");
    case "not_a_transaction_kind":
      return new HttpError(400, "transactionBlockKindBytes is not a BCS TransactionKind");
    case "trailing_bytes":
      return new HttpError(400, "transactionBlockKindBytes has trailing bytes");
    case "call_not_sponsored":
      return new HttpError(403, ONLY_ACCOUNT_CALLS);
    case "gas_coin_argument":
      return new HttpError(403, "sponsored calls take transaction inputs only (no gas coin)");
    case "nonce_used":
      return new HttpError(409, "authNonce was already used; sign a new request with a fresh nonce");
    case "sponsorship_unknown":
      return new HttpError(404, `no sponsored transaction ${e.digest}: unknown or expired; ask /sponsor again`);
    case "other_sender":
      return new HttpError(403, "sender is not the sender this sponsored transaction is bound to");
    case "already_executed":
      return new HttpError(409, "this sponsored transaction was already executed (or is executing)");
    case "sender_signature_mismatch":
      return new HttpError(400, "signature is not the sender's signature of the sponsored bytes");
    case "expired":
      return new HttpError(404, `the sponsored transaction expired before execution; ask /sponsor again (${e.reason})`);
    case "provider_credentials":
      return new HttpError(503, "sponsorship is unavailable: the sponsorship provider refused this relayer's credentials", {}, { "retry-after": "60" });
    case "refused":
      return new HttpError(422, e.step === "sponsor" ? `the sponsor refused this transaction: ${e.reason}` : `the chain refused the sponsored transaction: ${e.reason}`);
    case "unavailable":
      return new HttpError(503, e.step === "sponsor" ? "the sponsor is unavailable; ask again shortly" : "the chain is unavailable; execute again shortly", {}, { "retry-after": "5" });
  }
}
