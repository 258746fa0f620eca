// The sponsorship provider over HTTP (SPONSOR_API_KEY, SPONSOR_API_URL, SPONSOR_NETWORK): Mysten's EnokiClient speaking
// the protocol of schemas/relayer/sponsor-provider.ts to Enoki or to the local stack's provider. Its failures become
// PortErrors that never carry the API key: a refused key (401) is `forbidden`, an expired sponsored transaction
// SponsorshipInvalidated, an outage or a 429/5xx `unavailable`, any other refusal `rejected` with the provider's reason.
import { EnokiClient, EnokiClientError, type EnokiNetwork } from "@mysten/enoki";
import { PortError, SponsorshipInvalidated, type SponsorshipPort } from "../ports.ts";
import { PROVIDER_ERRORS } from "../../schemas/relayer/sponsor-provider.ts";
import type { SponsoredTransaction } from "../../schemas/relayer/sponsor.ts";

const PORT = "sponsor";

export interface ProviderClientOptions {
  readonly apiKey: string;
  /** Base URL without the /v1 the client adds. */
  readonly apiUrl: string;
  readonly network: string;
}

export class SponsorProviderClient implements SponsorshipPort {
  private readonly client: EnokiClient;

  constructor(private readonly opts: ProviderClientOptions) {
    this.client = new EnokiClient({ apiKey: opts.apiKey, apiUrl: opts.apiUrl.replace(/\/+$/, "") });
  }

  async sponsor(input: { kindBytes: Uint8Array; sender: string; allowedMoveCallTargets?: readonly string[] }): Promise<SponsoredTransaction> {
    try {
      const r = await this.client.createSponsoredTransaction({
        // The protocol carries any network name; Enoki's type lists its own (a local provider serves its ledger's).
        network: this.opts.network as EnokiNetwork,
        transactionKindBytes: Buffer.from(input.kindBytes).toString("base64"),
        sender: input.sender,
        ...(input.allowedMoveCallTargets ? { allowedMoveCallTargets: [...input.allowedMoveCallTargets] } : {}),
      });
      return { bytes: r.bytes, digest: r.digest };
    } catch (err) {
      throw this.portError(err, "sponsor");
    }
  }

  async execute(input: { digest: string; signature: string }): Promise<{ digest: string }> {
    try {
      const r = await this.client.executeSponsoredTransaction({ digest: input.digest, signature: input.signature });
      return { digest: r.digest };
    } catch (err) {
      throw this.portError(err, "execute");
    }
  }

  private redact(text: string): string {
    return this.opts.apiKey ? text.split(this.opts.apiKey).join("[redacted]") : text;
  }

  private portError(err: unknown, step: "sponsor" | "execute"): PortError {
    if (!(err instanceof EnokiClientError)) {
      const cause = (err as { cause?: { code?: string } })?.cause?.code;
      return new PortError(PORT, "unavailable", `the sponsorship provider is unreachable (${step}${cause ? `: ${cause}` : ""})`);
    }
    const first = err.errors[0];
    const reason = this.redact(first?.message ?? "no reason given");
    if (err.code === PROVIDER_ERRORS.expired || /sponsored transaction has expired/i.test(reason)) return new SponsorshipInvalidated(`the sponsored transaction expired before execution: ${reason}`);
    // 401 is the key; a 403 is about the transaction (a call outside the allowed targets) unless it names the key.
    if (err.status === 401 || err.code === PROVIDER_ERRORS.invalidApiKey) return new PortError(PORT, "forbidden", `the sponsorship provider refused the API key (HTTP ${err.status}, ${err.code}); check SPONSOR_API_KEY`);
    if (err.status === 429 || err.status >= 500) return new PortError(PORT, "unavailable", `the sponsorship provider is unavailable (HTTP ${err.status}, ${step}): ${reason}`);
    return new PortError(PORT, "rejected", `the sponsorship provider refused to ${step} (HTTP ${err.status}, ${err.code}): ${reason}`);
  }
}
