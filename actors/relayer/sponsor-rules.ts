// The sponsorship rules (spec/relayer.md, /sponsor): who may ask (a fresh personal-message signature by the sender
// over the request) and what qualifies (exactly one allowlisted account call of the memory package).
import { bcs } from "@mysten/sui/bcs";
import { normalizeSuiAddress } from "@mysten/sui/utils";
import { verifyPersonalMessageSignature } from "@mysten/sui/verify";
import { HttpError } from "../../schemas/http-error.ts";
import { SPONSORED_ACCOUNT_CALLS, sponsorAuthMessage, transactionKindHash, type SponsorRequest } from "../../schemas/relayer/sponsor.ts";

type TransactionKind = ReturnType<typeof bcs.TransactionKind.parse>;

const refuse = (status: number, message: string) => new HttpError(status, message);

/** 401 unless the request (its kind bytes decoded) is the sender's own, signed within the clock window. */
export async function checkSponsorAuth(req: SponsorRequest, kindBytes: Uint8Array, nowMs: number, clockWindowSecs: number): Promise<void> {
  if (Math.abs(nowMs / 1000 - req.authTimestamp) > clockWindowSecs) {
    throw refuse(401, `authTimestamp is outside the clock window of ${clockWindowSecs} s; sign a fresh request`);
  }
  const kindHash = transactionKindHash(kindBytes);
  const message = new TextEncoder().encode(sponsorAuthMessage(req.sender, kindHash, req.authTimestamp, req.authNonce));
  try {
    await verifyPersonalMessageSignature(message, req.authSignature, { address: req.sender });
  } catch {
    throw refuse(401, "authSignature is not the sender's personal-message signature over this sponsor request");
  }
}

/**
 * The Move call target (`package::account::function`) when the kind is exactly one allowlisted account call of
 * `packageId` — what a provider is told to allow; 400/403 otherwise.
 */
export function qualifyingCall(kindBytes: Uint8Array, packageId: string): string {
  let kind: TransactionKind;
  let canonical: boolean;
  try {
    kind = bcs.TransactionKind.parse(kindBytes);
    canonical = bcs.TransactionKind.serialize(kind).toBytes().length === kindBytes.length;
  } catch {
    throw refuse(400, "transactionBlockKindBytes is not a BCS TransactionKind");
  }
  if (!canonical) throw refuse(400, "transactionBlockKindBytes has trailing bytes");
  const only = `only one call to ${SPONSORED_ACCOUNT_CALLS.map((f) => `account::${f}`).join(", ")} of the memory package qualifies for sponsorship`;
  const commands = kind.ProgrammableTransaction?.commands ?? [];
  const call = commands.length === 1 ? commands[0]!.MoveCall : null;
  if (!call) throw refuse(403, only);
  const allowed = (SPONSORED_ACCOUNT_CALLS as readonly string[]).includes(call.function);
  if (normalizeSuiAddress(call.package) !== normalizeSuiAddress(packageId) || call.module !== "account" || !allowed || call.typeArguments.length > 0) {
    throw refuse(403, only);
  }
  if (call.arguments.some((a) => a.Input === undefined)) throw refuse(403, "sponsored calls take transaction inputs only (no gas coin)");
  return `${normalizeSuiAddress(packageId)}::account::${call.function}`;
}
