// The sponsorship rules (spec/relayer.md, /sponsor): who may ask (a fresh personal-message signature by the sender
// over the request), what qualifies (exactly one allowlisted account call of the memory package), and the sponsored
// TransactionData built around it (gas from the sponsor's address balance, valid for the binding's lifetime).
import { randomBytes } from "node:crypto";
import { bcs } from "@mysten/sui/bcs";
import { normalizeSuiAddress } from "@mysten/sui/utils";
import { verifyPersonalMessageSignature } from "@mysten/sui/verify";
import { HttpError } from "../../schemas/http-error.ts";
import type { ChainTarget } from "../../schemas/chain.ts";
import { SPONSOR_LIMITS, SPONSORED_ACCOUNT_CALLS, sponsorAuthMessage, transactionKindHash, type SponsorRequest } from "../../schemas/relayer/sponsor.ts";
import { wrapTransactionKind } from "../../adapters/chain/local/transaction-data.ts";

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

/** The transaction kind, when it is exactly one allowlisted account call of `packageId`; 400/403 otherwise. */
export function qualifyingKind(kindBytes: Uint8Array, packageId: string): TransactionKind {
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
  return kind;
}

/** The sponsored TransactionData: `sender` calls, `sponsor` pays, executable for the binding's lifetime. */
export function sponsoredTransaction(kind: TransactionKind, input: { target: ChainTarget; sender: string; sponsor: string; nowMs: number }): Uint8Array {
  return wrapTransactionKind(kind as Parameters<typeof wrapTransactionKind>[0], {
    target: input.target,
    sender: input.sender,
    gasOwner: input.sponsor,
    validFromMs: input.nowMs - 60_000,
    validUntilMs: input.nowMs + SPONSOR_LIMITS.bindingTtlMs,
    nonce: randomBytes(4).readUInt32LE(0),
  });
}
