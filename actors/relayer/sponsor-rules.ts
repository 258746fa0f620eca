// The sponsorship rules (spec/relayer.md, /sponsor): who may ask (a fresh personal-message signature by the sender
// over the request) and what qualifies (exactly one allowlisted account call of the memory package).
import { bcs } from "@mysten/sui/bcs";
import { normalizeSuiAddress } from "@mysten/sui/utils";
import { verifyPersonalMessageSignature } from "@mysten/sui/verify";
import { SPONSORED_ACCOUNT_CALLS, sponsorAuthMessage, transactionKindHash, type SponsorRequest } from "../../schemas/relayer/sponsor.ts";
import { refuse } from "./sponsor-refusals.ts";

type TransactionKind = ReturnType<typeof bcs.TransactionKind.parse>;

/** Refused unless the request (its kind bytes decoded) is the sender's own, signed within the clock window. */
export async function checkSponsorAuth(req: SponsorRequest, kindBytes: Uint8Array, nowMs: number, clockWindowSecs: number): Promise<void> {
  if (Math.abs(nowMs / 1000 - req.authTimestamp) > clockWindowSecs) {
    throw refuse({ code: "stale_request", clockWindowSecs });
  }
  const kindHash = transactionKindHash(kindBytes);
  const message = new TextEncoder().encode(sponsorAuthMessage(req.sender, kindHash, req.authTimestamp, req.authNonce));
  try {
    await verifyPersonalMessageSignature(message, req.authSignature, { address: req.sender });
  } catch {
    throw refuse({ code: "auth_signature_mismatch" });
  }
}

/**
 * The Move call target (`package::account::function`) when the kind is exactly one allowlisted account call of
 * `packageId` — what a provider is told to allow; refused otherwise.
 */
export function qualifyingCall(kindBytes: Uint8Array, packageId: string): string {
  let kind: TransactionKind;
  let canonical: boolean;
  try {
    kind = bcs.TransactionKind.parse(kindBytes);
    canonical = bcs.TransactionKind.serialize(kind).toBytes().length === kindBytes.length;
  } catch {
    throw refuse({ code: "not_a_transaction_kind" });
  }
  if (!canonical) throw refuse({ code: "trailing_bytes" });
  const commands = kind.ProgrammableTransaction?.commands ?? [];
  const call = commands.length === 1 ? commands[0]!.MoveCall : null;
  if (!call) throw refuse({ code: "call_not_sponsored" });
  const allowed = (SPONSORED_ACCOUNT_CALLS as readonly string[]).includes(call.function);
  if (normalizeSuiAddress(call.package) !== normalizeSuiAddress(packageId) || call.module !== "account" || !allowed || call.typeArguments.length > 0) {
    throw refuse({ code: "call_not_sponsored" });
  }
  if (call.arguments.some((a) => a.Input === undefined)) throw refuse({ code: "gas_coin_argument" });
  return `${normalizeSuiAddress(packageId)}::account::${call.function}`;
}
