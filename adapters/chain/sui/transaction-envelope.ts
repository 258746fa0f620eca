// The Sui TransactionData around a transaction kind, shared by the real chain adapters and the local ledger: gas from
// the owner's address balance and a ValidDuring window, as every transaction this project builds names them (the
// local ledger charges and enforces the same values).
import { concatBytes } from "@noble/hashes/utils.js";
import { bcs } from "@mysten/sui/bcs";
import type { ChainTarget } from "../../../schemas/chain.ts";

/** Fixed gas fee charged to the gas owner of every non-system transaction, in MIST (1 SUI = 10^9 MIST). */
export const GAS_FEE_MIST = 1_000_000n;
/** Reference gas price the transactions name; the fee itself is fixed (GAS_FEE_MIST). */
export const GAS_PRICE = 1000n;
/** Builders make a transaction valid this long either side of its build time; the ledger accepts windows up to twice it. */
export const TX_CLOCK_SKEW_MS = 10 * 60 * 1000;

export type TransactionKindInput = Parameters<typeof bcs.TransactionKind.serialize>[0];

export interface TransactionEnvelope {
  readonly target: ChainTarget;
  readonly sender: string;
  readonly gasOwner: string;
  readonly validFromMs: number;
  readonly validUntilMs: number;
  /** u32 */
  readonly nonce: number;
}

/** The TransactionData around a transaction kind: gas from the owner's address balance, a ValidDuring window. */
export function wrapTransactionKind(kind: TransactionKindInput, e: TransactionEnvelope): Uint8Array {
  return bcs.TransactionData.serialize({ V1: { kind, ...envelopeFields(e) } }).toBytes();
}

/** TransactionData's variant index of V1, the BCS enum tag its bytes start with. */
const TRANSACTION_DATA_V1 = 0;

/**
 * wrapTransactionKind around a kind already in BCS (one the server encoded itself): the kind's bytes are spliced in
 * as they are, since TransactionData V1 is the V1 tag, the kind, then sender, gas data and expiration. Parsing and
 * re-serializing the kind cost more than the rest of the transaction (its per-record arguments).
 */
export function wrapTransactionKindBytes(kind: Uint8Array, e: TransactionEnvelope): Uint8Array {
  const f = envelopeFields(e);
  return concatBytes(Uint8Array.of(TRANSACTION_DATA_V1), kind, bcs.Address.serialize(f.sender).toBytes(), bcs.GasData.serialize(f.gasData).toBytes(), bcs.TransactionExpiration.serialize(f.expiration).toBytes());
}

function envelopeFields(e: TransactionEnvelope) {
  return {
    sender: e.sender,
    gasData: { payment: [], owner: e.gasOwner, price: GAS_PRICE.toString(), budget: GAS_FEE_MIST.toString() },
    expiration: {
      ValidDuring: {
        minEpoch: null,
        maxEpoch: null,
        minTimestamp: String(e.validFromMs),
        maxTimestamp: String(e.validUntilMs),
        chain: e.target.chainIdentifier,
        nonce: e.nonce,
      },
    },
  };
}
