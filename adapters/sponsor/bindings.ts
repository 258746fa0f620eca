// Sponsorship state shared by every sidecar: used request nonces and the one-time binding of a sponsored
// transaction to its sender, in JetStream KV buckets whose entries expire on their own (the nonce after the clock
// window has passed, the binding after the sponsored transaction's validity). Compare-and-set on the revision makes a
// binding executable once, across processes.
import type { KV } from "@nats-io/kv";
import type { EventLog } from "../../eventlog/connection.ts";

const NONCES = "sponsor_nonces";
const BINDINGS = "sponsor_bindings";

export interface SponsorBinding {
  readonly sender: string;
  /** base64 sponsored TransactionData */
  readonly bytes: string;
  readonly state: "bound" | "executing" | "executed";
}

export type TakeResult =
  | { readonly kind: "taken"; readonly binding: SponsorBinding; readonly revision: number }
  | { readonly kind: "unknown" }
  | { readonly kind: "used" }
  | { readonly kind: "other_sender" };

const withState = (binding: Omit<SponsorBinding, "state">, state: SponsorBinding["state"]) => JSON.stringify({ sender: binding.sender, bytes: binding.bytes, state } satisfies SponsorBinding);

const isExistingKey = (err: unknown) => /wrong last sequence|key exists/i.test(err instanceof Error ? err.message : String(err));

export class SponsorBindings {
  private constructor(private readonly nonces: KV, private readonly bindings: KV) {}

  static async open(log: EventLog, opts: { nonceTtlMs: number; bindingTtlMs: number }): Promise<SponsorBindings> {
    const [nonces, bindings] = await Promise.all([
      log.kvm.create(NONCES, { history: 1, ttl: opts.nonceTtlMs }),
      log.kvm.create(BINDINGS, { history: 1, ttl: opts.bindingTtlMs }),
    ]);
    return new SponsorBindings(nonces, bindings);
  }

  /** true the first time `nonce` is claimed within its lifetime. */
  async claimNonce(nonce: string, sender: string): Promise<boolean> {
    try {
      await this.nonces.create(nonce, sender);
      return true;
    } catch (err) {
      if (isExistingKey(err)) return false;
      throw err;
    }
  }

  async bind(digest: string, binding: Omit<SponsorBinding, "state">): Promise<void> {
    await this.bindings.put(digest, withState(binding, "bound"));
  }

  /** Moves a bound transaction to executing for `sender`; only one caller can win. */
  async take(digest: string, sender: string): Promise<TakeResult> {
    const e = await this.bindings.get(digest);
    if (!e || e.operation !== "PUT" || !e.value.length) return { kind: "unknown" };
    const binding = e.json<SponsorBinding>();
    if (binding.sender !== sender) return { kind: "other_sender" };
    if (binding.state !== "bound") return { kind: "used" };
    try {
      const revision = await this.bindings.update(digest, withState(binding, "executing"), e.revision);
      return { kind: "taken", binding, revision };
    } catch (err) {
      if (isExistingKey(err)) return { kind: "used" };
      throw err;
    }
  }

  /** Execution failed: the transaction may be executed again while it is valid. */
  async release(digest: string, binding: SponsorBinding, revision: number): Promise<void> {
    await this.bindings.update(digest, withState(binding, "bound"), revision).catch(() => undefined);
  }

  async executed(digest: string, binding: SponsorBinding, revision: number): Promise<void> {
    await this.bindings.update(digest, withState(binding, "executed"), revision);
  }
}
