// Starts the relayer's alerting parts for the roles a process runs: the webhook poster (projections role, when
// ALERT_WEBHOOK_URL is set) and the balance monitor (actors role). The upload-failure alerts come from the alerts
// projection, which runs with the other projections (relayerProjections).
import type { EventLog } from "../eventlog/connection.ts";
import { KV_BUCKETS } from "../eventlog/subjects.ts";
import type { RelayerConfig } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import type { ChainPort } from "../adapters/ports.ts";
import { AlertWebhook } from "../adapters/alerts/webhook.ts";
import { BalanceMonitor, monitoredWallets } from "../actors/relayer/balance-monitor.ts";

export interface Alerting {
  readonly webhook?: AlertWebhook;
  readonly monitor?: BalanceMonitor;
  stop(): Promise<void>;
}

export async function startAlerting(opts: {
  config: RelayerConfig;
  log: EventLog;
  chain: ChainPort;
  logger: Logger;
  /** Uploader wallet addresses (the pool of SERVER_CHAIN_PRIVATE_KEYS), in pool order. */
  uploaders: readonly string[];
  webhook: boolean;
  monitor: boolean;
}): Promise<Alerting> {
  const { config, log, logger } = opts;
  let webhook: AlertWebhook | undefined;
  let monitor: BalanceMonitor | undefined;
  if (opts.webhook && config.alertWebhookUrl) {
    webhook = new AlertWebhook(
      log,
      { url: config.alertWebhookUrl, timeoutMs: config.alertWebhookTimeoutMs, maxAttempts: config.alertWebhookMaxAttempts, retryBaseMs: config.alertWebhookRetryBaseMs },
      logger.child({ component: "alert-webhook" }),
    );
    await webhook.start();
  }
  if (opts.monitor && config.balanceMonitorIntervalSecs > 0) {
    monitor = new BalanceMonitor({
      chain: opts.chain,
      js: log.js,
      dedup: await log.kvm.create(KV_BUCKETS.alertDedup, { history: 1 }),
      logger: logger.child({ component: "balance-monitor" }),
      wallets: monitoredWallets({
        uploaders: opts.uploaders,
        sponsor: config.sponsorWalletAddress,
        uploaderWal: config.walletBalanceLowThresholdWal,
        uploaderSui: config.walletBalanceLowThresholdSui,
        sponsorSui: config.sponsorBalanceLowThresholdSui,
      }),
      intervalSecs: config.balanceMonitorIntervalSecs,
      dedupWindowSecs: config.walletBalanceLowAlertDedupSecs,
    });
    monitor.start();
  }
  return {
    webhook,
    monitor,
    stop: async () => {
      await monitor?.stop();
      await webhook?.stop();
    },
  };
}
