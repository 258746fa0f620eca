// Operator alerts: the messages on the ALERTS stream (DESIGN.md 2.1; spec/relayer.md, Events). Pure contract, no I/O.
//
// Subjects (one per alert type; subscribe to `alerts.>` for all of them):
//   alerts.upload.failed        a remember job exhausted its MAX_WALLET_ATTEMPTS (5) wallet attempts and failed
//   alerts.wallet.low_balance   an uploader or sponsor wallet is below its threshold (deduplicated per
//                               (network, wallet type, token, address) within WALLET_BALANCE_LOW_ALERT_DEDUP_SECS)
//   alerts.deadletter.projection  a projection could not apply an event after bounded retries and set it aside
//   alerts.deadletter.actor       an actor could not handle a command after bounded retries and set it aside
//
// Every message body is one JSON object, the alert envelope below. `version` is the version of `data` for that
// `type`: additive changes (new optional fields) keep the version; anything else bumps it, and `upcastAlert` is the
// one place that turns older versions into the current shape. Each message carries `Nats-Msg-Id` = `id`, so a
// publisher that retries cannot store an alert twice, and consumers that see an alert twice (at-least-once
// delivery) can drop it by `id`. Alerts carry addresses, ids, amounts and error classes: never memory text, keys or
// credentials.

export const ALERT_SUBJECTS = {
  uploadFailed: "alerts.upload.failed",
  walletLowBalance: "alerts.wallet.low_balance",
  deadLetterProjection: "alerts.deadletter.projection",
  deadLetterActor: "alerts.deadletter.actor",
} as const;

export type AlertType = (typeof ALERT_SUBJECTS)[keyof typeof ALERT_SUBJECTS];

export const ALERT_SOURCE = "memrelay";

export type AlertSeverity = "critical" | "warning";

export interface AlertEnvelope<T extends AlertType = AlertType, D = unknown> {
  /** Equal to the subject the alert is published on. */
  readonly type: T;
  /** Version of `data` for this type. */
  readonly version: number;
  /** Unique and stable: also the message's Nats-Msg-Id and the webhook's Idempotency-Key. */
  readonly id: string;
  /** When the condition happened (the job failed, the balance was read). RFC 3339. */
  readonly occurred_at: string;
  /** When the alert was published. RFC 3339. */
  readonly emitted_at: string;
  readonly source: typeof ALERT_SOURCE;
  /** Chain network of the deployment (CHAIN_NETWORK). */
  readonly network: string;
  readonly severity: AlertSeverity;
  /** One line for humans; also makes the body a valid Slack incoming-webhook message. */
  readonly text: string;
  readonly data: D;
}

/** One failed wallet attempt of a job. */
export interface UploadAttempt {
  readonly attempt: number;
  /** Uploader wallet address (0x + 64 hex). */
  readonly wallet: string;
  readonly error: string;
}

/** `alerts.upload.failed`, version 1. */
export interface UploadFailedV1 {
  readonly job_id: string;
  readonly owner: string;
  readonly namespace: string;
  /** Which step exhausted the attempts: `store` (blob upload) or `record` (on-chain blob object). */
  readonly stage: "store" | "record";
  /** Present when the ciphertext was uploaded before the chain record failed. */
  readonly blob_id?: string;
  readonly attempts: number;
  readonly max_attempts: number;
  /** The last error, as recorded on the job (also what GET /api/remember/{job_id} reports). */
  readonly error: string;
  /** Every failed wallet attempt of the job, in order. */
  readonly wallet_attempts: readonly UploadAttempt[];
  readonly accepted_at?: string;
  /** Id of the `job.failed` event this alert was derived from, and its EVT stream sequence. */
  readonly event_id: string;
  readonly event_seq: number;
  readonly correlation_id: string;
}

export type WalletType = "uploader" | "sponsor";
export type Token = "SUI" | "WAL";

/** `alerts.wallet.low_balance`, version 1. Amounts are decimal strings in the token's smallest unit. */
export interface WalletLowBalanceV1 {
  readonly wallet_type: WalletType;
  readonly token: Token;
  readonly address: string;
  readonly balance: string;
  readonly threshold: string;
  /** Position of an uploader wallet in SERVER_CHAIN_PRIVATE_KEYS; absent for the sponsor wallet. */
  readonly wallet_index?: number;
  /** The dedup window in force: no other alert for this (network, wallet_type, token, address) within it. */
  readonly dedup_window_secs: number;
}

/**
 * A message set aside on the DLQ stream (`dlq.<source>.<name>`), and the data of `alerts.deadletter.<source>`,
 * version 1. It names the message (stream, sequence, subject, types) and why it failed; it never copies the payload
 * (a command's payload is the memory text): a projection's event stays on EVT at `stream_seq`.
 */
export interface DeadLetterV1 {
  readonly id: string;
  readonly source: "projection" | "actor";
  /** Projection name, or the actor's aggregate type. */
  readonly name: string;
  readonly stream: string;
  readonly stream_seq: number;
  readonly subject: string;
  readonly aggregate: string;
  /** Event types of the commit, or the command type. */
  readonly types: readonly string[];
  readonly error: string;
  readonly attempts: number;
  readonly dead_lettered_at: string;
}

export type UploadFailedAlert = AlertEnvelope<typeof ALERT_SUBJECTS.uploadFailed, UploadFailedV1>;
export type WalletLowBalanceAlert = AlertEnvelope<typeof ALERT_SUBJECTS.walletLowBalance, WalletLowBalanceV1>;
export type DeadLetterAlert = AlertEnvelope<typeof ALERT_SUBJECTS.deadLetterProjection | typeof ALERT_SUBJECTS.deadLetterActor, DeadLetterV1>;
export type Alert = UploadFailedAlert | WalletLowBalanceAlert | DeadLetterAlert;

export const ALERT_VERSIONS: Readonly<Record<AlertType, number>> = {
  [ALERT_SUBJECTS.uploadFailed]: 1,
  [ALERT_SUBJECTS.walletLowBalance]: 1,
  [ALERT_SUBJECTS.deadLetterProjection]: 1,
  [ALERT_SUBJECTS.deadLetterActor]: 1,
};

/** Old alert versions to the current shape. Version 1 is current for every type. */
export function upcastAlert(a: AlertEnvelope): AlertEnvelope {
  return a;
}

const ALERT_TYPES = new Set<string>(Object.values(ALERT_SUBJECTS));

/** Parses an ALERTS message body; throws on anything that is not an alert envelope. */
export function parseAlert(body: Uint8Array | string): Alert {
  const text = typeof body === "string" ? body : new TextDecoder().decode(body);
  const v = JSON.parse(text) as Partial<AlertEnvelope>;
  if (!v || typeof v !== "object" || typeof v.type !== "string" || !ALERT_TYPES.has(v.type) || typeof v.id !== "string" || typeof v.version !== "number" || typeof v.data !== "object" || v.data === null) {
    throw new Error("not an alert envelope");
  }
  return upcastAlert(v as AlertEnvelope) as Alert;
}

/**
 * Dedup key of a low-balance alert: (network, wallet type, token, address), as one NATS KV key. Network names are
 * reduced to KV-safe characters.
 */
export function lowBalanceKey(network: string, walletType: WalletType, token: Token, address: string): string {
  const net = network.replace(/[^A-Za-z0-9_-]/g, "_") || "_";
  return `low_balance.${net}.${walletType}.${token}.${address.toLowerCase()}`;
}

/** A UUID-shaped id derived from a name (SHA-256 based, version nibble 8 per RFC 9562 custom). Pure: callers hash. */
export function uuidFromDigest(digest: Uint8Array): string {
  const b = Buffer.from(digest.subarray(0, 16));
  b[6] = (b[6] & 0x0f) | 0x80;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Text of an amount in the token's smallest unit, in whole units for humans (9 decimals for SUI and WAL). */
export function formatUnits(amount: bigint, decimals = 9): string {
  const neg = amount < 0n;
  const abs = neg ? -amount : amount;
  const base = 10n ** BigInt(decimals);
  const frac = (abs % base).toString().padStart(decimals, "0").replace(/0+$/, "");
  return `${neg ? "-" : ""}${abs / base}${frac ? "." + frac : ""}`;
}
