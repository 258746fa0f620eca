// Sponsorship state shared by every sidecar: used request nonces and the one-time binding of a sponsored
// transaction to its sender, in JetStream KV buckets whose entries expire on their own (the nonce after the clock
// window has passed, the binding after the sponsored transaction's validity). Compare-and-set on the revision makes a
// binding executable once, across processes. The local sponsorship provider keeps its sponsored transactions the same
// way, in buckets of its own and without nonces.
import type { KV } from "@nats-io/kv";
import type { EventLog } from "../../eventlog/connection.ts";
import { isWrongLastSequence } from "../../eventlog/jetstream-errors.ts";

/** The sidecar's buckets; the local provider's are `sponsor_provider_bindings`. */
const DEFAULT_PREFIX = "sponsor";

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

export class SponsorBindings {
  private constructor(private readonly nonces: KV | undefined, private readonly bindings: KV) {}

  /** Without `nonceTtlMs` there is no nonce bucket (claimNonce throws). */
  static async open(log: EventLog, opts: { nonceTtlMs?: number; bindingTtlMs: number; prefix?: string }): Promise<SponsorBindings> {
    const prefix = opts.prefix ?? DEFAULT_PREFIX;
    const [nonces, bindings] = await Promise.all([
      opts.nonceTtlMs === undefined ? undefined : log.kvm.create(`${prefix}_nonces`, { history: 1, ttl: opts.nonceTtlMs }),
      log.kvm.create(`${prefix}_bindings`, { history: 1, ttl: opts.bindingTtlMs }),
    ]);
    return new SponsorBindings(nonces, bindings);
  }

  /** true the first time `nonce` is claimed within its lifetime. */
  async claimNonce(nonce: string, sender: string): Promise<boolean> {
    if (!this.nonces) throw new Error("these sponsor bindings were opened without nonces");
    try {
      await this.nonces.create(nonce, sender);
      return true;
    } catch (err) {
      if (isWrongLastSequence(err)) return false;
      throw err;
    }
  }

  async bind(digest: string, binding: Omit<SponsorBinding, "state">): Promise<void> {
    await this.bindings.put(digest, withState(binding, "bound"));
  }

  /** Moves a bound transaction to executing for `sender` (any sender when undefined); only one caller can win. */
  async take(digest: string, sender?: string): Promise<TakeResult> {
    const e = await this.bindings.get(digest);
    if (!e || e.operation !== "PUT" || !e.value.length) return { kind: "unknown" };
    const binding = e.json<SponsorBinding>();
    if (sender !== undefined && binding.sender !== sender) return { kind: "other_sender" };
    if (binding.state !== "bound") return { kind: "used" };
    try {
      const revision = await this.bindings.update(digest, withState(binding, "executing"), e.revision);
      return { kind: "taken", binding, revision };
    } catch (err) {
      if (isWrongLastSequence(err)) return { kind: "used" };
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
