// The relayer's sponsorship (spec/relayer.md, /sponsor and /sponsor/execute, run by the sidecar): checks the sender's
// request, has the sponsorship port (the gas station, or the provider when SPONSOR_API_KEY is set) sponsor the one
// allowlisted call, binds the sponsored transaction to the sender once, and at execution checks the sender's signature
// and has the port execute it, retrying transient failures (SPONSOR_TRANSIENT_MAX_ATTEMPTS / _BASE_DELAY_MS /
// _MAX_DELAY_MS). Every refusal is a SponsorRefusal in the domain's words (sponsor-refusals.ts); the edge says it.
import { PortError, SponsorshipInvalidated, type SponsorshipPort } from "../../adapters/ports.ts";
import { verifySenderSignature } from "../../adapters/chain/sui/signatures.ts";
import type { SponsorBindings } from "../../adapters/sponsor/bindings.ts";
import { backoffDelay, sleepMs } from "../../adapters/sponsor/retry.ts";
import type { RetryPolicy, SponsoredTransaction, SponsorExecuteRequest, SponsorRequest } from "../../schemas/relayer/sponsor.ts";
import { checkSponsorAuth, qualifyingCall } from "./sponsor-rules.ts";
import { refuse, type SponsorRefusal, type SponsorStep } from "./sponsor-refusals.ts";

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

/** What a sponsorship port's failure means for the sender's request. */
function refusal(err: unknown, step: SponsorStep): SponsorRefusal {
  const reason = err instanceof Error ? err.message.replace(/^(chain|sponsor): /, "") : String(err);
  if (err instanceof SponsorshipInvalidated) return refuse({ code: "expired", reason });
  if (err instanceof PortError && err.kind === "forbidden") return refuse({ code: "provider_credentials" });
  if (err instanceof PortError && !err.retryable) return refuse({ code: "refused", step, reason });
  return refuse({ code: "unavailable", step });
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
      throw refuse({ code: "nonce_used" });
    }
    const sponsored = await this.deps.provider.sponsor({ kindBytes, sender: req.sender, allowedMoveCallTargets: [target] }).catch((err) => {
      throw refusal(err, "sponsor");
    });
    await this.deps.bindings.bind(sponsored.digest, { sender: req.sender, bytes: sponsored.bytes });
    return sponsored;
  }

  async execute(req: SponsorExecuteRequest): Promise<{ digest: string }> {
    const taken = await this.deps.bindings.take(req.digest, req.sender);
    if (taken.kind === "unknown") throw refuse({ code: "sponsorship_unknown", digest: req.digest });
    if (taken.kind === "other_sender") throw refuse({ code: "other_sender" });
    if (taken.kind === "used") throw refuse({ code: "already_executed" });
    const { binding, revision } = taken;
    if (!verifySenderSignature(binding.bytes, req.signature, binding.sender)) {
      await this.deps.bindings.release(req.digest, binding, revision);
      throw refuse({ code: "sender_signature_mismatch" });
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
