// Sui's owned-object rule for the local ledger under a network profile. On Sui a transaction's owned inputs (its gas
// coin first of all) are locked at a version by the first transaction validators sign; a different transaction naming
// the same object version while the first is in flight is refused as equivocation, and the object is only usable again
// once the first one is final (it then has a new version). The local ledger has one gas balance per address, so the
// gas coin of an address stands for it here. Locks live in this process: they see the transactions this process
// submits (its server wallets share one process each), not another process's.
import { blake2b } from "@noble/hashes/blake2.js";

/** The lock a transaction found already taken. */
export interface LockConflict {
  readonly objectId: string;
  readonly version: number;
  /** The digest of the transaction in flight that holds it. */
  readonly heldBy: string;
}

interface Held {
  readonly digest: string;
  /** Submissions of that same transaction in flight (a resubmitted transaction is no equivocation). */
  count: number;
}

const encoder = new TextEncoder();

/** The object id standing for `address`'s gas coin. */
export function gasCoinId(address: string): string {
  return "0x" + Buffer.from(blake2b(encoder.encode(`gas-coin:${address}`), { dkLen: 32 })).toString("hex");
}

/** Sui's answer to an equivocating transaction, as its JSON-RPC reports it. */
export function objectLockConflictMessage(c: LockConflict): string {
  return (
    "Transaction is rejected as invalid by more than 1/3 of validators by stake (non-retriable). Non-retriable errors: " +
    `[Object (${c.objectId}, SequenceNumber(${c.version})) already locked by a different transaction: TransactionDigest(${c.heldBy})]`
  );
}

/** Whether `message` is Sui's object-lock (equivocation) refusal. */
export function isObjectLockConflict(message: string): boolean {
  return message.includes("locked by a different transaction");
}

export class OwnedObjectLocks {
  private readonly held = new Map<string, Held>();
  private readonly versions = new Map<string, number>();

  /** Locks every object for `digest`, or none of them and names the first one another transaction holds. */
  lock(objectIds: readonly string[], digest: string): LockConflict | null {
    for (const objectId of objectIds) {
      const h = this.held.get(objectId);
      if (h && h.digest !== digest) return { objectId, version: this.versions.get(objectId) ?? 0, heldBy: h.digest };
    }
    for (const objectId of objectIds) {
      const h = this.held.get(objectId);
      if (h) h.count++;
      else this.held.set(objectId, { digest, count: 1 });
    }
    return null;
  }

  /** Ends one submission of `digest`; `executed` moves the objects to their next version when the last one ends. */
  unlock(objectIds: readonly string[], digest: string, executed: boolean): void {
    for (const objectId of objectIds) {
      const h = this.held.get(objectId);
      if (!h || h.digest !== digest) continue;
      if (--h.count > 0) continue;
      this.held.delete(objectId);
      if (executed) this.versions.set(objectId, (this.versions.get(objectId) ?? 0) + 1);
    }
  }

  /** Objects locked now (for tests and diagnostics). */
  get size(): number {
    return this.held.size;
  }
}
