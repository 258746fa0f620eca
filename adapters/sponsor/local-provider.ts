// The local stack's sponsorship provider (what Enoki is on a real network), behind the protocol of
// schemas/relayer/sponsor-provider.ts: sponsors a sender's transaction kind with the ledger's gas station when every
// Move call is one the request allows, keeps the sponsored transaction in JetStream KV (any replica can execute it,
// once), and executes it with the sender's signature. A transaction past its ValidDuring window is refused by the
// ledger as expired, and answered as the protocol's `expired`, so its client sponsors again.
import { bcs } from "@mysten/sui/bcs";
import { normalizeSuiAddress } from "@mysten/sui/utils";
import { PortError, SponsorshipInvalidated } from "../ports.ts";
import { verifySenderSignature } from "../chain/sui/signatures.ts";
import type { GasStation } from "./gas-station.ts";
import type { SponsorBindings } from "./bindings.ts";
import { PROVIDER_ERRORS, providerRefusal, type ProviderSponsorBody } from "../../schemas/relayer/sponsor-provider.ts";
import type { SponsoredTransaction } from "../../schemas/relayer/sponsor.ts";

const normalizeTarget = (t: string) => {
  const [pkg, module, fn] = t.split("::");
  return `${normalizeSuiAddress(pkg!)}::${module}::${fn}`;
};

export class LocalSponsorProvider {
  constructor(private readonly opts: { station: GasStation; bindings: SponsorBindings; network: string }) {}

  async sponsor(body: ProviderSponsorBody): Promise<SponsoredTransaction> {
    if (body.network !== this.opts.network) {
      throw providerRefusal(400, PROVIDER_ERRORS.invalidRequest, `this provider sponsors transactions on ${this.opts.network}, not ${body.network}`);
    }
    const kindBytes = new Uint8Array(Buffer.from(body.transactionBlockKindBytes, "base64"));
    let commands: NonNullable<ReturnType<typeof bcs.TransactionKind.parse>["ProgrammableTransaction"]>["commands"];
    try {
      const kind = bcs.TransactionKind.parse(kindBytes);
      if (!kind.ProgrammableTransaction) throw new Error("not a programmable transaction");
      commands = kind.ProgrammableTransaction.commands;
    } catch {
      throw providerRefusal(400, PROVIDER_ERRORS.invalidRequest, "transactionBlockKindBytes is not a programmable TransactionKind");
    }
    if (body.allowedMoveCallTargets) {
      const allowed = new Set(body.allowedMoveCallTargets.map(normalizeTarget));
      for (const c of commands) {
        const call = c.MoveCall;
        const target = call && `${normalizeSuiAddress(call.package)}::${call.module}::${call.function}`;
        if (!target || !allowed.has(target)) throw providerRefusal(403, PROVIDER_ERRORS.forbiddenTarget, `${target ?? c.$kind} is not among allowedMoveCallTargets`);
      }
    }
    const sponsored = await this.opts.station.sponsor({ kindBytes, sender: body.sender }).catch((err) => {
      throw providerRefusal(400, PROVIDER_ERRORS.invalidRequest, err instanceof Error ? err.message.replace(/^sponsor: /, "") : String(err));
    });
    await this.opts.bindings.bind(sponsored.digest, { sender: body.sender, bytes: sponsored.bytes });
    return sponsored;
  }

  async execute(digest: string, signature: string): Promise<{ digest: string }> {
    const taken = await this.opts.bindings.take(digest);
    if (taken.kind === "unknown" || taken.kind === "other_sender") throw providerRefusal(404, PROVIDER_ERRORS.notFound, `no sponsored transaction ${digest}`);
    if (taken.kind === "used") throw providerRefusal(409, PROVIDER_ERRORS.alreadyExecuted, "this sponsored transaction was already executed (or is executing)");
    const { binding, revision } = taken;
    if (!verifySenderSignature(binding.bytes, signature, binding.sender)) {
      await this.opts.bindings.release(digest, binding, revision);
      throw providerRefusal(400, PROVIDER_ERRORS.invalidSignature, "signature is not the sender's signature of the sponsored bytes");
    }
    try {
      const executed = await this.opts.station.execute({ bytes: binding.bytes, signature });
      await this.opts.bindings.executed(digest, binding, revision);
      return executed;
    } catch (err) {
      await this.opts.bindings.release(digest, binding, revision);
      if (err instanceof SponsorshipInvalidated) throw providerRefusal(400, PROVIDER_ERRORS.expired, "Sponsored transaction has expired");
      if (err instanceof PortError && !err.retryable) throw providerRefusal(400, PROVIDER_ERRORS.transactionFailed, err.message.replace(/^chain: /, ""));
      throw providerRefusal(503, PROVIDER_ERRORS.unavailable, "the chain is unavailable; execute again shortly");
    }
  }
}
