// Typed failures of the local ledger and their mapping to the ports' PortError.
import { Data } from "effect";
import { PortError, SignatureRejected, type PortErrorKind } from "../../ports.ts";

/**
 * The transaction was refused by the ledger's rules (bad input, not authorised, no funds, conflicting state);
 * `badSignature` when a signature on it does not verify (the port's SignatureRejected).
 */
export class TxRejected extends Data.TaggedError("TxRejected")<{ readonly kind: Exclude<PortErrorKind, "unavailable">; readonly message: string; readonly badSignature?: true }> {}

/** Another process appended first: reload the state and decide again. */
export class AppendConflict extends Data.TaggedError("AppendConflict")<{ readonly expected: number }> {}

/** NATS (stream or KV) failed or timed out. */
export class StoreUnavailable extends Data.TaggedError("StoreUnavailable")<{ readonly message: string; readonly cause?: unknown }> {}

export type LedgerError = TxRejected | StoreUnavailable;

export const PORT = "chain";

export const reject = (kind: TxRejected["kind"], message: string) => new TxRejected({ kind, message });

export function toPortError(err: unknown): PortError {
  if (err instanceof PortError) return err;
  if (err instanceof TxRejected) return err.badSignature ? new SignatureRejected(PORT, err.message) : new PortError(PORT, err.kind, err.message);
  if (err instanceof StoreUnavailable) return new PortError(PORT, "unavailable", err.message);
  if (err instanceof AppendConflict) return new PortError(PORT, "unavailable", "ledger too contended, retry later");
  if (err && typeof err === "object" && (err as { _tag?: string })._tag === "TimeoutError") {
    return new PortError(PORT, "unavailable", "ledger operation timed out");
  }
  return new PortError(PORT, "unavailable", err instanceof Error ? err.message : String(err));
}

export function unavailable(what: string) {
  return (cause: unknown) => new StoreUnavailable({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, cause });
}
