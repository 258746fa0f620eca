// The submission layer of server-signed chain writes (the workers' blob registration): a transaction kind the server
// built and one of its wallets signs as sender, executed either directly (the wallet pays its gas) or sponsored
// (SPONSOR_DURABLE_REGISTER_ENABLED: the sponsorship provider pays). Sponsored, an invalidated sponsorship is
// sponsored again per SPONSOR_INVALIDATED_*; a sponsorship that still fails falls back to the wallet paying itself
// when SPONSOR_FALLBACK_TO_DIRECT_SIGN is on, else fails the caller's attempt.
import { randomBytes } from "node:crypto";
import { PortError, type ServerTransactions, type SponsorshipPort } from "../ports.ts";
import { keypairFromSecret, toSerializedSignature, type SecretKeyInput } from "./sui/keys.ts";
import { signingDigest } from "./sui/digest.ts";
import { TX_CLOCK_SKEW_MS, wrapTransactionKindBytes } from "./sui/transaction-envelope.ts";
import { retryWhileInvalidated, sleepMs } from "../sponsor/retry.ts";
import type { ChainTarget, SignedTx } from "../../schemas/chain.ts";
import type { RetryPolicy } from "../../schemas/relayer/sponsor.ts";
import type { Logger } from "../../config/logger.ts";

/** Sui signature of `bytes` (base64 TransactionData) by `key`. */
function signTransactionBytes(bytes: string, key: SecretKeyInput): string {
  const kp = keypairFromSecret(key);
  return toSerializedSignature(kp.sign(signingDigest(Buffer.from(bytes, "base64"))), kp.publicKey);
}

/** The sender pays: TransactionData around `kind` with the sender as gas owner, signed and submitted. */
export function directTransactions(target: ChainTarget, submit: (tx: SignedTx) => Promise<{ readonly digest: string }>): ServerTransactions {
  return {
    execute(kind, sender) {
      let tx: SignedTx;
      try {
        const address = keypairFromSecret(sender).address;
        const now = Date.now();
        const bytes = wrapTransactionKindBytes(kind, {
          target,
          sender: address,
          gasOwner: address,
          validFromMs: now - TX_CLOCK_SKEW_MS,
          validUntilMs: now + TX_CLOCK_SKEW_MS,
          nonce: randomBytes(4).readUInt32LE(0),
        });
        const b64 = Buffer.from(bytes).toString("base64");
        tx = { tx_bytes: b64, signatures: [signTransactionBytes(b64, sender)] };
      } catch (err) {
        return Promise.reject(new PortError("chain", "invalid", err instanceof Error ? err.message : String(err)));
      }
      return submit(tx);
    },
  };
}

export interface SponsoredTransactionsOptions {
  readonly provider: SponsorshipPort;
  /** Where a failed sponsorship falls back to, when `fallbackToDirect`. */
  readonly direct: ServerTransactions;
  /** SPONSOR_FALLBACK_TO_DIRECT_SIGN */
  readonly fallbackToDirect: boolean;
  /** SPONSOR_INVALIDATED_MAX_ATTEMPTS / _BASE_DELAY_MS / _MAX_DELAY_MS */
  readonly invalidatedRetry: RetryPolicy;
  /** Move call targets the provider may sponsor for us (the memory package's calls the server makes). */
  readonly allowedMoveCallTargets: readonly string[];
  readonly logger?: Logger;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** The provider pays: sponsor, sign as sender, execute; re-sponsored while invalidated; optionally direct on failure. */
export function sponsoredTransactions(o: SponsoredTransactionsOptions): ServerTransactions {
  const sleep = o.sleep ?? sleepMs;
  return {
    async execute(kind, sender) {
      const address = keypairFromSecret(sender).address;
      try {
        return await retryWhileInvalidated(
          o.invalidatedRetry,
          async () => {
            const sponsored = await o.provider.sponsor({ kindBytes: kind, sender: address, allowedMoveCallTargets: o.allowedMoveCallTargets });
            return o.provider.execute({ digest: sponsored.digest, bytes: sponsored.bytes, signature: signTransactionBytes(sponsored.bytes, sender) });
          },
          sleep,
        );
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        if (!o.fallbackToDirect) throw new PortError("chain", "unavailable", `sponsored execution failed: ${reason}`);
        // Safe for record_blob: should the provider have executed it after all, the direct one finds the blob recorded.
        o.logger?.warn("sponsorship failed; the server wallet pays the gas (SPONSOR_FALLBACK_TO_DIRECT_SIGN)", { sender: address, error: reason });
        return o.direct.execute(kind, sender);
      }
    },
  };
}
