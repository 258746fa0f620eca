// Posts every alert on the ALERTS stream to ALERT_WEBHOOK_URL. A durable JetStream consumer (`alert-webhook`, shared
// by every relayer replica) delivers each alert to one replica; the POST has a timeout, and a failure is retried
// with exponential backoff (nak with delay, honouring Retry-After) up to ALERT_WEBHOOK_MAX_ATTEMPTS deliveries, then
// dropped with an error log. Alerts are posted concurrently and independently: a slow or dead webhook delays only
// its own deliveries, never another alert, and never anything outside this consumer (jobs, projections, the
// balance monitor publish to the stream whatever the webhook does).
//
// Request: POST, `content-type: application/json`, body = the alert envelope exactly as stored on the stream
// (schemas/alerts.ts), headers `idempotency-key` and `x-memrelay-alert-id` = alert id (delivery is at-least-once:
// receivers drop repeats by id), `x-memrelay-alert-type`, `x-memrelay-alert-version`. Any 2xx is success.
import { AckPolicy, DeliverPolicy, type JsMsg } from "@nats-io/jetstream";
import type { EventLog } from "../../eventlog/connection.ts";
import { STREAMS, SUBJECTS } from "../../eventlog/subjects.ts";
import type { Logger } from "../../config/logger.ts";
import { isConsumerExisting } from "../../eventlog/jetstream-errors.ts";

export const ALERT_WEBHOOK_CONSUMER = "alert-webhook";

export interface AlertWebhookOptions {
  readonly url: string;
  /** Per POST. Default 5 s. */
  readonly timeoutMs?: number;
  /** Deliveries before an alert is given up. Default 20 (with the default backoff, about two hours of retries). */
  readonly maxAttempts?: number;
  /** First retry delay, doubled per attempt up to `retryMaxMs` (default 1 s and 10 min), with jitter. */
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  /** Alerts posted at once per replica. Default 16. */
  readonly concurrency?: number;
}

class WebhookRejected extends Error {
  constructor(readonly status: number, readonly retryAfterMs: number | undefined) {
    super(`webhook answered ${status}`);
  }
}

function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const secs = Number(header);
  if (Number.isFinite(secs) && secs >= 0) return secs * 1000;
  const at = Date.parse(header);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

export class AlertWebhook {
  private stopped = false;
  private messages?: { stop(): void };
  private readonly inFlight = new Set<Promise<void>>();
  private loopDone?: Promise<void>;
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;
  private readonly concurrency: number;

  constructor(
    private readonly log: EventLog,
    private readonly opts: AlertWebhookOptions,
    private readonly logger: Logger,
  ) {
    this.timeoutMs = opts.timeoutMs ?? 5_000;
    this.maxAttempts = Math.max(1, opts.maxAttempts ?? 20);
    this.retryBaseMs = opts.retryBaseMs ?? 1_000;
    this.retryMaxMs = opts.retryMaxMs ?? 600_000;
    this.concurrency = opts.concurrency ?? 16;
  }

  /** Creates (or updates) the durable consumer, then posts in the background. New consumers start at new alerts. */
  async start(): Promise<void> {
    const ackWait = (this.timeoutMs + 10_000) * 1_000_000;
    const config = {
      durable_name: ALERT_WEBHOOK_CONSUMER,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.New,
      filter_subject: SUBJECTS.alerts,
      ack_wait: ackWait,
      max_deliver: this.maxAttempts,
      max_ack_pending: 1_000,
    };
    await this.log.jsm.consumers.add(STREAMS.alerts, config).catch(async (err) => {
      if (!isConsumerExisting(err)) throw err;
      await this.log.jsm.consumers.update(STREAMS.alerts, ALERT_WEBHOOK_CONSUMER, { ack_wait: ackWait, max_deliver: this.maxAttempts, max_ack_pending: 1_000 });
    });
    this.loopDone = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.messages?.stop();
    await this.loopDone;
    await Promise.allSettled([...this.inFlight]);
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        const consumer = await this.log.js.consumers.get(STREAMS.alerts, ALERT_WEBHOOK_CONSUMER);
        const messages = await consumer.consume({ max_messages: this.concurrency });
        this.messages = messages;
        if (this.stopped) messages.stop();
        for await (const m of messages) {
          while (this.inFlight.size >= this.concurrency) await Promise.race(this.inFlight);
          const p = this.deliver(m).finally(() => this.inFlight.delete(p));
          this.inFlight.add(p);
        }
      } catch (err) {
        if (this.stopped) break;
        this.logger.warn("alert webhook consumer interrupted; resubscribing", { error: err instanceof Error ? err.message : String(err) });
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  }

  private backoffMs(deliveries: number, floorMs = 0): number {
    const exp = Math.min(this.retryMaxMs, this.retryBaseMs * 2 ** Math.min(deliveries - 1, 20));
    return Math.min(this.retryMaxMs, Math.max(floorMs, Math.round(exp * (0.75 + Math.random() / 2))));
  }

  private async deliver(m: JsMsg): Promise<void> {
    const type = m.subject;
    let id = "";
    let version = "";
    try {
      const head = JSON.parse(new TextDecoder().decode(m.data)) as { id?: unknown; version?: unknown };
      id = typeof head.id === "string" ? head.id : "";
      version = String(head.version ?? "");
    } catch {
      this.logger.error("alert is not JSON; not posted", { subject: type, seq: m.seq });
      m.term();
      return;
    }
    try {
      await this.post(m.data, { id, type, version });
      m.ack();
    } catch (err) {
      const deliveries = m.info.deliveryCount;
      const reason = err instanceof Error ? err.message : String(err);
      if (deliveries >= this.maxAttempts) {
        this.logger.error("alert webhook gave up on an alert", { alert_id: id, type, attempts: deliveries, error: reason });
        m.term();
        return;
      }
      const delay = this.backoffMs(deliveries, err instanceof WebhookRejected ? err.retryAfterMs : 0);
      this.logger.warn("alert webhook post failed; will retry", { alert_id: id, type, attempt: deliveries, retry_in_ms: delay, error: reason });
      m.nak(delay);
    }
  }

  private async post(body: Uint8Array, alert: { id: string; type: string; version: string }): Promise<void> {
    const res = await fetch(this.opts.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": "memrelay-alerts/1",
        "idempotency-key": alert.id,
        "x-memrelay-alert-id": alert.id,
        "x-memrelay-alert-type": alert.type,
        "x-memrelay-alert-version": alert.version,
      },
      body,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    // Drain the body so the connection is reused (bounded by the same timeout).
    await res.arrayBuffer().catch(() => undefined);
    if (res.status < 200 || res.status >= 300) throw new WebhookRejected(res.status, retryAfterMs(res.headers.get("retry-after")));
  }
}
