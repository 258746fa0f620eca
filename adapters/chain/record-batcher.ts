// Group commit of blob registrations: concurrent jobs' records share one transaction (one `record_blob` call each),
// so a transaction's signing, verification, gas and nonce are paid once per batch instead of once per memory. Batches
// form by arrival (../arrival-batcher.ts): a record waits only while an earlier batch is in flight, so an idle relayer
// adds no latency and a busy one makes bigger batches. Each batch is paid by a wallet of the pool with no transaction
// in flight (its gas coin is an owned object: ./wallet-pool.ts). A batch that fails for its wallet's sake (the coin
// locked, no funds, the chain not answering) or stalls (the pool's judgement, from its recent calls: ./stall-bound.ts)
// goes out again on another wallet, and that wallet leaves the rotation for a while; records are idempotent per
// (owner, blob id), so a stalled transaction that lands after all changes nothing. A batch the chain refuses is retried one record at a time, so one bad record
// fails only its own job.
import type { BlobObject, BlobRecordInput, ChainPort } from "../ports.ts";
import { callOnLease, isWalletFault, type Wallet, type WalletLease, type WalletPool } from "./wallet-pool.ts";
import { ArrivalBatcher } from "../arrival-batcher.ts";

export interface RecordedBlob {
  readonly object: BlobObject;
  /** The wallet that paid for the transaction. */
  readonly wallet: Wallet;
}

/** A failed registration, naming the wallet whose transaction failed. */
export class RecordFailed extends Error {
  constructor(readonly wallet: Wallet, cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
  }
}

export interface RecordBatcherOptions {
  /** Most records per transaction. */
  readonly maxBatch?: number;
  /** Transactions in flight at once (1: records arriving meanwhile make the next batch; measured faster than 2). */
  readonly maxInFlight?: number;
  /** How long a batch's first record waits for others before its transaction goes (ms; default 0). */
  readonly gatherMs?: number;
}

export class RecordBatcher {
  private readonly batches: ArrivalBatcher<BlobRecordInput, RecordedBlob | RecordFailed>;

  constructor(private readonly chain: ChainPort, private readonly wallets: WalletPool, opts: RecordBatcherOptions = {}) {
    this.batches = new ArrivalBatcher((inputs) => this.submit(inputs), opts.maxInFlight ?? 1, opts.maxBatch ?? 64, { gatherMs: opts.gatherMs ?? 0 });
  }

  async record(input: BlobRecordInput): Promise<RecordedBlob> {
    const outcome = await this.batches.submit(input);
    if (outcome instanceof RecordFailed) throw outcome;
    return outcome;
  }

  /** One transaction for the batch; each record's outcome, a failure included (one record's refusal is its own). */
  private async submit(inputs: readonly BlobRecordInput[]): Promise<(RecordedBlob | RecordFailed)[]> {
    const tried = new Set<string>();
    let failure: RecordFailed | undefined;
    while (tried.size < this.wallets.size) {
      // At once when a wallet is free (a lone record goes out in this tick), else the first to come free.
      const lease = this.wallets.tryAcquire("record_batch", tried) ?? (await this.wallets.acquire("record_batch", tried));
      const { wallet } = lease;
      if (tried.has(wallet.address)) {
        // every wallet still in rotation has failed this batch already
        lease.release("ok");
        break;
      }
      tried.add(wallet.address);
      const outcome = await this.attempt(inputs, lease);
      if (!(outcome instanceof Error)) return outcome.map((object) => ({ object, wallet }));
      if (!isWalletFault(outcome)) {
        // A refusal may be one record's, so each is tried on its own.
        if (inputs.length > 1) return (await Promise.all(inputs.map((i) => this.submit([i])))).flat();
        return [new RecordFailed(wallet, outcome)];
      }
      failure = new RecordFailed(wallet, outcome);
    }
    return inputs.map(() => failure!);
  }

  /** The batch's transaction on the leased wallet: its objects, or its error (WalletStalled once the pool judges it stalled). */
  private attempt(inputs: readonly BlobRecordInput[], lease: WalletLease): Promise<BlobObject[] | Error> {
    return callOnLease(lease, (key) => this.chain.recordBlobs(inputs, key)).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
  }
}
