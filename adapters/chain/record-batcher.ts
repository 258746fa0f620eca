// Group commit of blob registrations: concurrent jobs' records share one transaction (one `record_blob` call each),
// so a transaction's signing, verification, gas and nonce are paid once per batch instead of once per memory. No
// timer: a record waits only while earlier batches are in flight, so an idle relayer adds no latency and a busy one
// makes bigger batches. Each batch is paid by the next wallet of the pool. A batch the chain refuses is retried one
// record at a time, so one bad record fails only its own job.
import type { BlobObject, BlobRecordInput, ChainPort } from "../ports.ts";
import { PortError } from "../ports.ts";
import type { Wallet, WalletPool } from "./wallet-pool.ts";

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

interface Waiting {
  readonly input: BlobRecordInput;
  readonly resolve: (r: RecordedBlob) => void;
  readonly reject: (e: RecordFailed) => void;
}

export interface RecordBatcherOptions {
  /** Most records per transaction. */
  readonly maxBatch?: number;
  /** Transactions in flight at once (1: records arriving meanwhile make the next batch; measured faster than 2). */
  readonly maxInFlight?: number;
}

export class RecordBatcher {
  private readonly queue: Waiting[] = [];
  private inFlight = 0;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;

  constructor(private readonly chain: ChainPort, private readonly wallets: WalletPool, opts: RecordBatcherOptions = {}) {
    this.maxBatch = opts.maxBatch ?? 64;
    this.maxInFlight = opts.maxInFlight ?? 1;
  }

  record(input: BlobRecordInput): Promise<RecordedBlob> {
    return new Promise((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      void this.submit(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async submit(batch: readonly Waiting[]): Promise<void> {
    const wallet = this.wallets.next();
    try {
      const objects = await this.chain.recordBlobs(batch.map((w) => w.input), wallet.secretKey);
      batch.forEach((w, i) => w.resolve({ object: objects[i]!, wallet }));
    } catch (err) {
      // An outage fails every record alike; a refusal may be one record's, so each is tried on its own.
      if (batch.length > 1 && !(err instanceof PortError && err.kind === "unavailable")) {
        await Promise.all(batch.map((w) => this.submit([w])));
        return;
      }
      for (const w of batch) w.reject(new RecordFailed(wallet, err));
    }
  }
}
