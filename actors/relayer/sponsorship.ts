// The relayer's sponsorship (spec/relayer.md, /sponsor and /sponsor/execute, run by the sidecar): checks the sender's
// request, has the sponsorship port (the gas station, or the provider when SPONSOR_API_KEY is set) sponsor the one
// allowlisted call, binds the sponsored transaction to the sender once, and at execution checks the sender's signature
// and has the port execute it, retrying transient failures (SPONSOR_TRANSIENT_MAX_ATTEMPTS / _BASE_DELAY_MS /
// _MAX_DELAY_MS). Every refusal is an HttpError with a clear status.
import { PortError, SponsorshipInvalidated, type SponsorshipPort } from "../../adapters/ports.ts";
import { verifySenderSignature } from "../../adapters/chain/sui/signatures.ts";
import type { SponsorBindings } from "../../adapters/sponsor/bindings.ts";
import { backoffDelay, sleepMs } from "../../adapters/sponsor/retry.ts";
import { HttpError } from "../../schemas/http-error.ts";
import type { RetryPolicy, SponsoredTransaction, SponsorExecuteRequest, SponsorRequest } from "../../schemas/relayer/sponsor.ts";
import { checkSponsorAuth, qualifyingCall } from "./sponsor-rules.ts";

export interface SponsorshipDeps {
  readonly bindings: SponsorBindings;
  readonly provider: SponsorshipPort;
  /** The memory package whose account calls qualify. */
  readonly packageId: string;
  /** AUTH_MAX_CLOCK_DRIFT_SECS: how old a request's authTimestamp may be. */
  readonly clockWindowSecs: number;
  readonly transientRetry: RetryPolicy;
  readonly clock?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** The status and words of a sponsorship port's failure, as the sender sees it. */
function refusal(err: unknown, step: "sponsor" | "execute"): HttpError {
  const reason = err instanceof Error ? err.message.replace(/^(chain|sponsor): /, "") : String(err);
  if (err instanceof SponsorshipInvalidated) return new HttpError(404, `the sponsored transaction expired before execution; ask /sponsor again (${reason})`);
  if (err instanceof PortError && err.kind === "forbidden") return new HttpError(503, "sponsorship is unavailable: the sponsorship provider refused this relayer's credentials", {}, { "retry-after": "60" });
  if (err instanceof PortError && !err.retryable) {
    return new HttpError(422, step === "sponsor" ? `the sponsor refused this transaction: ${reason}` : `the chain refused the sponsored transaction: ${reason}`);
  }
  return new HttpError(503, step === "sponsor" ? "the sponsor is unavailable; ask again shortly" : "the chain is unavailable; execute again shortly", {}, { "retry-after": "5" });
}

export class Sponsorship {
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly deps: SponsorshipDeps) {
    this.now = deps.clock ?? Date.now;
    this.sleep = deps.sleep ?? sleepMs;
  }

  async sponsor(req: SponsorRequest): Promise<SponsoredTransaction> {
    const kindBytes = new Uint8Array(Buffer.from(req.transactionBlockKindBytes, "base64"));
    await checkSponsorAuth(req, kindBytes, this.now(), this.deps.clockWindowSecs);
    const target = qualifyingCall(kindBytes, this.deps.packageId);
    if (!(await this.deps.bindings.claimNonce(req.authNonce, req.sender))) {
      throw new HttpError(409, "authNonce was already used; sign a new request with a fresh nonce");
    }
    const sponsored = await this.deps.provider.sponsor({ kindBytes, sender: req.sender, allowedMoveCallTargets: [target] }).catch((err) => {
      throw refusal(err, "sponsor");
    });
    await this.deps.bindings.bind(sponsored.digest, { sender: req.sender, bytes: sponsored.bytes });
    return sponsored;
  }

  async execute(req: SponsorExecuteRequest): Promise<{ digest: string }> {
    const taken = await this.deps.bindings.take(req.digest, req.sender);
    if (taken.kind === "unknown") throw new HttpError(404, `no sponsored transaction ${req.digest}: unknown or expired; ask /sponsor again`);
    if (taken.kind === "other_sender") throw new HttpError(403, "sender is not the sender this sponsored transaction is bound to");
    if (taken.kind === "used") throw new HttpError(409, "this sponsored transaction was already executed (or is executing)");
    const { binding, revision } = taken;
    if (!verifySenderSignature(binding.bytes, req.signature, binding.sender)) {
      await this.deps.bindings.release(req.digest, binding, revision);
      throw new HttpError(400, "signature is not the sender's signature of the sponsored bytes");
    }
    for (let attempt = 1; ; attempt++) {
      try {
        const executed = await this.deps.provider.execute({ digest: req.digest, bytes: binding.bytes, signature: req.signature });
        await this.deps.bindings.executed(req.digest, binding, revision);
        return { digest: executed.digest };
      } catch (err) {
        const transient = !(err instanceof PortError) || err.retryable;
        if (transient && attempt < this.deps.transientRetry.maxAttempts) {
          await this.sleep(backoffDelay(this.deps.transientRetry, attempt));
          continue;
        }
        await this.deps.bindings.release(req.digest, binding, revision);
        throw refusal(err, "execute");
      }
    }
  }
}
