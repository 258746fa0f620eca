// The relayer's gas station (spec/relayer.md, /sponsor and /sponsor/execute, run by the sidecar): checks the
// sender's request, builds the sponsored TransactionData around the one allowlisted call, binds it to the sender
// once, and at execution co-signs as gas owner and submits, retrying transient chain failures
// (SPONSOR_TRANSIENT_MAX_ATTEMPTS / _BASE_DELAY_MS / _MAX_DELAY_MS). Every refusal is an HttpError with a clear 4xx.
import { PortError, type SponsoredChainPort } from "../../adapters/ports.ts";
import { keypairFromSecret, type SecretKeyInput } from "../../adapters/chain/local/keys.ts";
import { cosign, txDigest, verifySenderSignature } from "../../adapters/chain/local/tx.ts";
import type { SponsorBindings } from "../../adapters/sponsor/bindings.ts";
import { HttpError } from "../../schemas/http-error.ts";
import type { SponsoredTransaction, SponsorExecuteRequest, SponsorRequest } from "../../schemas/relayer/sponsor.ts";
import { checkSponsorAuth, qualifyingKind, sponsoredTransaction } from "./sponsor-rules.ts";

export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export interface SponsorshipDeps {
  readonly bindings: SponsorBindings;
  readonly chain: SponsoredChainPort;
  readonly sponsorKey: SecretKeyInput;
  /** AUTH_MAX_CLOCK_DRIFT_SECS: how old a request's authTimestamp may be. */
  readonly clockWindowSecs: number;
  readonly transientRetry: RetryPolicy;
  readonly clock?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

const delayFor = (p: RetryPolicy, attempt: number) => Math.min(p.maxDelayMs, p.baseDelayMs * 2 ** (attempt - 1));

export class Sponsorship {
  readonly sponsorAddress: string;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly deps: SponsorshipDeps) {
    this.sponsorAddress = keypairFromSecret(deps.sponsorKey).address;
    this.now = deps.clock ?? Date.now;
    this.sleep = deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
  }

  async sponsor(req: SponsorRequest): Promise<SponsoredTransaction> {
    const now = this.now();
    const kindBytes = new Uint8Array(Buffer.from(req.transactionBlockKindBytes, "base64"));
    await checkSponsorAuth(req, kindBytes, now, this.deps.clockWindowSecs);
    const kind = qualifyingKind(kindBytes, this.deps.chain.packageId);
    if (!(await this.deps.bindings.claimNonce(req.authNonce, req.sender))) {
      throw new HttpError(409, "authNonce was already used; sign a new request with a fresh nonce");
    }
    const bytes = sponsoredTransaction(kind, { target: this.deps.chain.target, sender: req.sender, sponsor: this.sponsorAddress, nowMs: now });
    const sponsored = { bytes: Buffer.from(bytes).toString("base64"), digest: txDigest(bytes) };
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
    const signed = cosign(binding.bytes, req.signature, this.deps.sponsorKey);
    for (let attempt = 1; ; attempt++) {
      try {
        const executed = await this.deps.chain.execute(signed);
        await this.deps.bindings.executed(req.digest, binding, revision);
        return { digest: executed.digest };
      } catch (err) {
        const transient = !(err instanceof PortError) || err.retryable;
        if (transient && attempt < this.deps.transientRetry.maxAttempts) {
          await this.sleep(delayFor(this.deps.transientRetry, attempt));
          continue;
        }
        await this.deps.bindings.release(req.digest, binding, revision);
        if (transient) throw new HttpError(503, "the chain is unavailable; execute again shortly", {}, { "retry-after": "5" });
        throw new HttpError(422, `the chain refused the sponsored transaction: ${err.message.replace(/^chain: /, "")}`);
      }
    }
  }
}
