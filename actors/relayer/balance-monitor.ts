// The balance monitor: every BALANCE_MONITOR_INTERVAL_SECS it reads the uploader wallets' WAL and SUI balances and
// the sponsor wallet's SUI balance from the chain port, and publishes `alerts.wallet.low_balance` for each one below
// its threshold (WALLET_BALANCE_LOW_THRESHOLD_WAL / _SUI, SPONSOR_BALANCE_LOW_THRESHOLD_SUI).
//
// Dedup across replicas: before publishing, a replica claims the key (network, wallet type, token, address) in the
// `alert_dedup` KV bucket with a compare-and-set (create when absent, update at the read revision when the last
// claim is older than WALLET_BALANCE_LOW_ALERT_DEDUP_SECS). Only the replica whose CAS succeeds publishes, so one
// alert per key per window however many monitors run. A claim whose publish fails is rolled back, so the next round
// tries again. The window is strict: a wallet that recovers and drops again within it is not re-alerted.
import { Data, Effect, Schedule } from "effect";
import type { KV } from "@nats-io/kv";
import type { JetStreamClient } from "@nats-io/jetstream";
import type { ChainPort, WalletBalance } from "../../adapters/ports.ts";
import type { Logger } from "../../config/logger.ts";
import { alertId, publishAlert } from "../../eventlog/alert-stream.ts";
import { ALERT_SOURCE, ALERT_SUBJECTS, ALERT_VERSIONS, formatUnits, lowBalanceKey, type Token, type WalletLowBalanceAlert, type WalletType } from "../../schemas/alerts.ts";
import { isWrongLastSequence } from "../../eventlog/jetstream-errors.ts";

export class BalanceReadFailed extends Data.TaggedError("BalanceReadFailed")<{ readonly address: string; readonly message: string }> {}
export class DedupUnavailable extends Data.TaggedError("DedupUnavailable")<{ readonly key: string; readonly message: string }> {}
export class AlertPublishFailed extends Data.TaggedError("AlertPublishFailed")<{ readonly key: string; readonly message: string }> {}

export interface MonitoredWallet {
  readonly walletType: WalletType;
  readonly address: string;
  readonly walletIndex?: number;
  /** Token -> threshold in the smallest unit: an alert when the balance is strictly below it. */
  readonly thresholds: Partial<Record<Token, bigint>>;
}

export interface BalanceMonitorOptions {
  readonly chain: ChainPort;
  readonly js: JetStreamClient;
  readonly dedup: KV;
  readonly logger: Logger;
  readonly wallets: readonly MonitoredWallet[];
  readonly intervalSecs: number;
  readonly dedupWindowSecs: number;
  /** Per balance read, per KV operation and per publish. Default 10 s. */
  readonly opTimeoutMs?: number;
}

/** What one round did, per (wallet type, token, address): for logs and tests. */
export interface RoundReport {
  readonly alerted: string[];
  readonly deduplicated: string[];
  readonly failed: string[];
}

interface Claim {
  readonly key: string;
  readonly revision: number;
  /** The entry the claim replaced (to roll back to), if any. */
  readonly previous?: { readonly revision: number; readonly value: Uint8Array };
}

const encoder = new TextEncoder();
const retrySchedule = Schedule.exponential("200 millis", 2).pipe(Schedule.jittered);
const errText = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** Uploader and sponsor wallets with the spec's thresholds. */
export function monitoredWallets(input: {
  uploaders: readonly string[];
  sponsor?: string;
  uploaderWal: bigint;
  uploaderSui: bigint;
  sponsorSui: bigint;
}): MonitoredWallet[] {
  const out: MonitoredWallet[] = input.uploaders.map((address, walletIndex) => ({
    walletType: "uploader",
    address,
    walletIndex,
    thresholds: { WAL: input.uploaderWal, SUI: input.uploaderSui },
  }));
  if (input.sponsor) out.push({ walletType: "sponsor", address: input.sponsor, thresholds: { SUI: input.sponsorSui } });
  return out;
}

export class BalanceMonitor {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private stopped = false;
  private readonly timeout: number;

  constructor(private readonly opts: BalanceMonitorOptions) {
    this.timeout = opts.opTimeoutMs ?? 10_000;
  }

  /** Checks at once, then every interval (a round never overlaps the previous one). Interval 0 disables. */
  start(): void {
    if (this.opts.intervalSecs <= 0 || !this.opts.wallets.length) return;
    const loop = () => {
      if (this.stopped) return;
      this.running = this.round()
        .catch((err) => this.opts.logger.warn("balance monitor round failed", { error: errText(err) }))
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.timer = setTimeout(loop, this.opts.intervalSecs * 1000);
        });
    };
    loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** One round over every wallet. Never fails: a wallet whose balance cannot be read is logged and skipped. */
  round(now = new Date()): Promise<RoundReport> {
    const report: RoundReport = { alerted: [], deduplicated: [], failed: [] };
    const program = Effect.forEach(
      this.opts.wallets,
      (w) =>
        this.readBalance(w.address).pipe(
          Effect.flatMap((balance) =>
            Effect.forEach(
              Object.entries(w.thresholds) as [Token, bigint][],
              ([token, threshold]) => {
                const amount = balance.balances[token] ?? 0n;
                if (amount >= threshold) return Effect.void;
                const key = lowBalanceKey(this.opts.chain.network, w.walletType, token, w.address);
                return this.alertOnce(key, w, token, amount, threshold, now).pipe(
                  Effect.map((sent) => void (sent ? report.alerted : report.deduplicated).push(key)),
                  Effect.catch((e) =>
                    Effect.sync(() => {
                      report.failed.push(key);
                      this.opts.logger.warn("low-balance alert not published; next round retries", { key, error: e.message });
                    }),
                  ),
                );
              },
              { discard: true },
            ),
          ),
          Effect.catch((e) =>
            Effect.sync(() => {
              report.failed.push(`${w.walletType}.${w.address}`);
              this.opts.logger.warn("wallet balance not read", { wallet_type: w.walletType, address: w.address, error: e.message });
            }),
          ),
        ),
      { concurrency: 8, discard: true },
    );
    return Effect.runPromise(program).then(() => report);
  }

  private readBalance(address: string): Effect.Effect<WalletBalance, BalanceReadFailed> {
    return Effect.tryPromise({ try: () => this.opts.chain.balance(address), catch: (e) => new BalanceReadFailed({ address, message: errText(e) }) }).pipe(
      Effect.timeoutOrElse({ duration: this.timeout, orElse: () => Effect.fail(new BalanceReadFailed({ address, message: "balance read timed out" })) }),
      Effect.retry({ schedule: retrySchedule, times: 2 }),
    );
  }

  /** Claims the key for this window and publishes; false when another alert for the key is within the window. */
  private alertOnce(key: string, w: MonitoredWallet, token: Token, amount: bigint, threshold: bigint, now: Date): Effect.Effect<boolean, DedupUnavailable | AlertPublishFailed> {
    return this.claim(key, now).pipe(
      Effect.flatMap((claim) => {
        if (!claim) return Effect.succeed(false);
        const alert = this.alert(key, claim.revision, w, token, amount, threshold, now);
        return Effect.tryPromise({ try: () => publishAlert(this.opts.js, alert, this.timeout), catch: (e) => new AlertPublishFailed({ key, message: errText(e) }) }).pipe(
          Effect.retry({ schedule: retrySchedule, times: 3 }),
          Effect.as(true),
          // Give the window back, or no replica would alert on this wallet until it ends.
          Effect.tapError(() => this.release(claim).pipe(Effect.ignore)),
        );
      }),
    );
  }

  private kvOp<A>(key: string, op: () => Promise<A>): Effect.Effect<A, DedupUnavailable> {
    return Effect.tryPromise({ try: op, catch: (e) => new DedupUnavailable({ key, message: errText(e) }) }).pipe(
      Effect.timeoutOrElse({ duration: this.timeout, orElse: () => Effect.fail(new DedupUnavailable({ key, message: "dedup store timed out" })) }),
    );
  }

  /** Compare-and-set claim of the key for the window starting `now`; null when not ours to send. */
  private claim(key: string, now: Date): Effect.Effect<Claim | null, DedupUnavailable> {
    const { dedup } = this.opts;
    const windowMs = this.opts.dedupWindowSecs * 1000;
    const value = encoder.encode(JSON.stringify({ at: now.getTime() }));
    return this.kvOp(key, async (): Promise<Claim | null> => {
      const entry = await dedup.get(key);
      try {
        if (!entry || entry.operation !== "PUT") return { key, revision: await dedup.create(key, value) };
        const last = Number((entry.json() as { at?: number }).at ?? 0);
        if (now.getTime() - last < windowMs) return null;
        return { key, revision: await dedup.update(key, value, entry.revision), previous: { revision: entry.revision, value: entry.value } };
      } catch (err) {
        // Another replica claimed it between our read and write: it sends the alert.
        if (isWrongLastSequence(err)) return null;
        throw err;
      }
    });
  }

  private release(claim: Claim): Effect.Effect<void, DedupUnavailable> {
    const { dedup } = this.opts;
    return this.kvOp(claim.key, async () => {
      if (claim.previous) await dedup.update(claim.key, claim.previous.value, claim.revision);
      else await dedup.delete(claim.key, { previousSeq: claim.revision });
    });
  }

  private alert(key: string, revision: number, w: MonitoredWallet, token: Token, amount: bigint, threshold: bigint, now: Date): WalletLowBalanceAlert {
    const network = this.opts.chain.network;
    return {
      type: ALERT_SUBJECTS.walletLowBalance,
      version: ALERT_VERSIONS[ALERT_SUBJECTS.walletLowBalance],
      // The claim's KV revision is unique per claim: a retried publish of the same claim is a stream duplicate.
      id: alertId(`${key}:${revision}`),
      occurred_at: now.toISOString(),
      emitted_at: new Date().toISOString(),
      source: ALERT_SOURCE,
      network,
      severity: "warning",
      text: `[${network}] ${w.walletType} wallet ${w.address} ${token} balance ${formatUnits(amount)} is below ${formatUnits(threshold)} ${token}`,
      data: {
        wallet_type: w.walletType,
        token,
        address: w.address,
        balance: amount.toString(),
        threshold: threshold.toString(),
        ...(w.walletIndex !== undefined ? { wallet_index: w.walletIndex } : {}),
        dedup_window_secs: this.opts.dedupWindowSecs,
      },
    };
  }
}
