// The console's use of the chain port: sponsored transactions the client signs with its service key (the console
// builds the bytes naming the caller as sender and its sponsor as gas owner, then co-signs at execution), and
// reading bucket policies and access groups back for the access checks. Signatures follow Sui, so the client can
// sign the bytes with `Ed25519Keypair.signTransaction` from @mysten/sui.
import type { SponsoredChainPort } from "../../adapters/ports.ts";
import type { CallKind, TxArgs } from "../../adapters/chain/local/model.ts";
import type { ChainTarget } from "../../schemas/chain.ts";
import { buildTransactionBytes } from "../../adapters/chain/local/tx.ts";
import { txDigest } from "../../adapters/chain/sui/digest.ts";
import { transactionValidUntil } from "../../adapters/chain/local/transaction-data.ts";
import { accessGroupType, bucketPolicyType, type AccessGroupFields, type AccessScope, type BucketPolicyFields } from "../../schemas/chain.ts";

export interface UnsignedTx {
  /** base64 of the transaction bytes */
  readonly bytes: string;
  readonly digest: string;
}

/** Builds the Sui `TransactionData` for `sender`, with the sponsor paying the gas. Nothing is signed yet. */
export function buildSponsoredTx<K extends CallKind>(input: { target: ChainTarget; kind: K; args: TxArgs[K]; sender: string; sponsorAddress: string; timestampMs?: number }): UnsignedTx {
  const txBytes = buildTransactionBytes({ target: input.target, kind: input.kind, args: input.args, sender: input.sender, gasOwner: input.sponsorAddress, timestampMs: input.timestampMs });
  return { bytes: Buffer.from(txBytes).toString("base64"), digest: txDigest(txBytes) };
}

/** When the sponsored bytes stop being executable (ms); 0 for bytes that are not a ledger transaction. */
export function txValidUntil(bytes: string): number {
  return transactionValidUntil(Buffer.from(bytes, "base64")) ?? 0;
}

const satisfies = (have: AccessScope, need: AccessScope) => have === "readwrite" || need === "read";

export class PolicyReader {
  constructor(private readonly chain: SponsoredChainPort) {}

  private get pkg() {
    return this.chain.packageId;
  }

  async policy(policyId: string): Promise<BucketPolicyFields | null> {
    const o = await this.chain.getObject(policyId);
    if (!o || o.type !== bucketPolicyType(this.pkg)) return null;
    return o.fields as BucketPolicyFields;
  }

  async group(groupId: string): Promise<AccessGroupFields | null> {
    const o = await this.chain.getObject(groupId);
    if (!o || o.type !== accessGroupType(this.pkg)) return null;
    return o.fields as AccessGroupFields;
  }

  /** Whether the chain (the source of truth) grants `address` at least `need` through the policy. */
  async grants(policyId: string, addresses: readonly string[], need: AccessScope): Promise<boolean> {
    const p = await this.policy(policyId);
    if (!p) return false;
    if (p.admins.some((a) => addresses.includes(a))) return true;
    const groups = await Promise.all(p.groups.map((g) => this.group(g)));
    for (const g of groups) {
      if (!g) continue;
      if (g.admins.some((a) => addresses.includes(a))) return true;
      if (g.members.some((m) => addresses.includes(m.address) && satisfies(m.scope, need))) return true;
    }
    return false;
  }
}
