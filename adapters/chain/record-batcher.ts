// Group commit of blob registrations: concurrent jobs' records share one transaction (one `record_blob` call each),
// so a transaction's signing, verification, gas and nonce are paid once per batch instead of once per memory. Batches
// form by arrival (../arrival-batcher.ts): a record waits only while an earlier batch is in flight, so an idle relayer
// adds no latency and a busy one makes bigger batches. Each batch is paid by the next wallet of the pool. A batch the
// chain refuses is retried one record at a time, so one bad record fails only its own job.
import type { BlobObject, BlobRecordInput, ChainPort } from "../ports.ts";
import { PortError } from "../ports.ts";
import type { Wallet, WalletPool } from "./wallet-pool.ts";
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
}

export class RecordBatcher {
  private readonly batches: ArrivalBatcher<BlobRecordInput, RecordedBlob | RecordFailed>;

  constructor(private readonly chain: ChainPort, private readonly wallets: WalletPool, opts: RecordBatcherOptions = {}) {
    this.batches = new ArrivalBatcher((inputs) => this.submit(inputs), opts.maxInFlight ?? 1, opts.maxBatch ?? 64);
  }

  async record(input: BlobRecordInput): Promise<RecordedBlob> {
    const outcome = await this.batches.submit(input);
    if (outcome instanceof RecordFailed) throw outcome;
    return outcome;
  }

  /** One transaction for the batch; each record's outcome, a failure included (one record's refusal is its own). */
  private async submit(inputs: readonly BlobRecordInput[]): Promise<(RecordedBlob | RecordFailed)[]> {
    const wallet = this.wallets.next();
    try {
      const objects = await this.chain.recordBlobs(inputs, wallet.secretKey);
      return inputs.map((_, i) => ({ object: objects[i]!, wallet }));
    } catch (err) {
      // An outage fails every record alike; a refusal may be one record's, so each is tried on its own.
      if (inputs.length > 1 && !(err instanceof PortError && err.kind === "unavailable")) return (await Promise.all(inputs.map((i) => this.submit([i])))).flat();
      return inputs.map(() => new RecordFailed(wallet, err));
    }
  }
}
