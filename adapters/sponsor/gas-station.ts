// The gas station: a sponsor key of our own that pays the gas of the transactions it sponsors (SPONSOR_PRIVATE_KEY
// behind the relayer's /sponsor, and the key behind the local stack's sponsorship provider). Sponsoring wraps the
// transaction kind into TransactionData with the sponsor as gas owner, valid for `ttlMs`; executing co-signs and submits.
import { randomBytes } from "node:crypto";
import { bcs } from "@mysten/sui/bcs";
import { PortError, SponsorshipInvalidated, type SponsoredChainPort, type SponsorshipPort } from "../ports.ts";
import { keypairFromSecret, type SecretKeyInput } from "../chain/sui/keys.ts";
import { cosign } from "../chain/sui/signatures.ts";
import { txDigest } from "../chain/sui/digest.ts";
import { wrapTransactionKind } from "../chain/sui/transaction-envelope.ts";
import { isExpiredTransactionError } from "../../schemas/chain.ts";
import type { SponsoredTransaction } from "../../schemas/relayer/sponsor.ts";

/** Builders' clock may run ahead of the chain's: sponsored transactions are valid from a minute before they were made. */
const CLOCK_SLACK_MS = 60_000;

export class GasStation implements SponsorshipPort {
  readonly address: string;
  private readonly now: () => number;

  constructor(private readonly chain: SponsoredChainPort, private readonly key: SecretKeyInput, private readonly opts: { ttlMs: number; clock?: () => number }) {
    this.address = keypairFromSecret(key).address;
    this.now = opts.clock ?? Date.now;
  }

  async sponsor(input: { kindBytes: Uint8Array; sender: string }): Promise<SponsoredTransaction> {
    let bytes: Uint8Array;
    try {
      const now = this.now();
      bytes = wrapTransactionKind(bcs.TransactionKind.parse(input.kindBytes) as Parameters<typeof wrapTransactionKind>[0], {
        target: this.chain.target,
        sender: input.sender,
        gasOwner: this.address,
        validFromMs: now - CLOCK_SLACK_MS,
        validUntilMs: now + this.opts.ttlMs,
        nonce: randomBytes(4).readUInt32LE(0),
      });
    } catch (err) {
      throw new PortError("sponsor", "invalid", `not a sponsorable transaction kind: ${err instanceof Error ? err.message : String(err)}`);
    }
    return { bytes: Buffer.from(bytes).toString("base64"), digest: txDigest(bytes) };
  }

  async execute(input: { bytes: string; signature: string }): Promise<{ digest: string }> {
    try {
      const executed = await this.chain.execute(cosign(input.bytes, input.signature, this.key));
      return { digest: executed.digest };
    } catch (err) {
      if (err instanceof PortError && isExpiredTransactionError(err.message)) throw new SponsorshipInvalidated(err.message.replace(/^chain: /, ""));
      throw err;
    }
  }
}
