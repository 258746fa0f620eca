// The chaos run's load: agents that remember, bulk-remember and recall without pause, each with its own text (so a
// memory can be found again by it), through signed clients on every gateway. A call is retried as a client SDK does:
// on a network error or a 5xx, up to RETRIES more times with doubling backoff, moving to the next gateway each time.
// A write is signed once and its retries send that same request: when the answer was lost after the relayer took it
// (a gateway killed after publishing, a publish that timed out yet landed), the relayer answers the retry with the
// same job ids instead of storing the memory again under new ones, which a re-signed retry would do unseen by the
// client (issue 32: one owner had 355 rows for 352 accepted memories).
// Every call is logged (start, end, kind, whether it failed after its retries) for the per-fault figures, and every
// 202 is kept with its texts for the accounting.
import { randomBytes } from "node:crypto";
import { Agent as UndiciAgent } from "undici";
import { MemrelayClient, RelayerError, type RememberAnswer, type RememberBulkAnswer } from "../../client/memrelay-client.ts";

const RETRIES = 4;

/**
 * Every call of the run gives up after 30 s without an answer (undici waits 5 minutes by default): a request the
 * relayer holds for good then counts as a failed call and the run goes on to report it, instead of hanging.
 */
export const boundedCalls = new UndiciAgent({ headersTimeout: 30_000, bodyTimeout: 30_000 });
const FIRST_BACKOFF_MS = 200;

export type CallKind = "write" | "read";
export interface CallRecord {
  readonly kind: CallKind;
  readonly start: number;
  readonly end: number;
  readonly failed: boolean;
  /** The last attempt's error, for a failed call (status and message, no memory text). */
  readonly reason?: string;
}
export interface Accepted {
  readonly jobId: string;
  readonly text: string;
  readonly owner: string;
}

export interface AgentIdentity {
  readonly owner: string;
  readonly accountId: string;
  readonly delegateSecretKey: Uint8Array;
  readonly session: () => Promise<string>;
}

const reasonOf = (err: unknown) => (err instanceof RelayerError ? `${err.status} ${err.message.slice(0, 120)}` : `${(err as Error).name}: ${(err as { code?: string }).code ?? (err as Error).message.slice(0, 80)}`);
const retryable = (err: unknown) => !(err instanceof RelayerError) || err.status >= 500;

/** Runs `fn` (given the attempt, from 0) as a client SDK retries it: on a network error or a 5xx, up to RETRIES more times with doubling backoff. */
export async function withClientRetries<T>(fn: (attempt: number) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (!retryable(err) || attempt === RETRIES) throw err;
      await new Promise((r) => setTimeout(r, FIRST_BACKOFF_MS * 2 ** attempt));
    }
  }
}

/** One agent: a client per gateway, starting at its own. */
export class Agent {
  private readonly clients: MemrelayClient[];
  private at: number;
  private n = 0;

  constructor(
    private readonly id: number,
    readonly who: AgentIdentity,
    gateways: readonly string[],
    private readonly calls: CallRecord[],
    private readonly accepted: Accepted[],
  ) {
    this.clients = gateways.map((baseUrl) => new MemrelayClient({ baseUrl, delegatePrivateKey: who.delegateSecretKey, accountId: who.accountId, encryptionSession: who.session, agent: boundedCalls }));
    this.at = id % gateways.length;
  }

  /** Retries on the next gateway; undefined when every attempt failed (logged as a failed call). */
  async withRetries<T>(kind: CallKind, fn: (c: MemrelayClient) => Promise<T>): Promise<T | undefined> {
    const start = Date.now();
    try {
      const out = await withClientRetries((attempt) => {
        if (attempt) this.at = (this.at + 1) % this.clients.length;
        return fn(this.clients[this.at]!);
      });
      this.calls.push({ kind, start, end: Date.now(), failed: false });
      return out;
    } catch (err) {
      this.calls.push({ kind, start, end: Date.now(), failed: true, reason: reasonOf(err) });
      return undefined;
    }
  }

  /** Words of its own (random tokens), so that no other memory is nearer to it than itself. */
  private nextText(): string {
    this.n++;
    const words = Array.from({ length: 6 }, () => randomBytes(4).readUInt32BE().toString(36));
    return `agent ${this.id} note ${this.n}: ${words.join(" ")}`;
  }

  /** One step of the loop: a remember, a bulk remember of three, or a recall of something it wrote. */
  async step(): Promise<void> {
    const pick = this.n % 5;
    if (pick === 3 && this.accepted.length > 0) {
      const mine = this.accepted.filter((a) => a.owner === this.who.owner);
      const query = mine.length ? mine[this.n % mine.length]!.text : this.nextText();
      this.n++;
      await this.withRetries("read", (c) => c.recall(query, { limit: 3 }));
      return;
    }
    if (pick === 4) {
      const texts = [this.nextText(), this.nextText(), this.nextText()];
      const signed = this.clients[0]!.rememberBulkRequest(texts.map((text) => ({ text })));
      const r = await this.withRetries("write", (c) => c.send<RememberBulkAnswer>(signed));
      r?.job_ids.forEach((jobId, i) => this.accepted.push({ jobId, text: texts[i]!, owner: this.who.owner }));
      return;
    }
    const text = this.nextText();
    const signed = this.clients[0]!.rememberRequest(text);
    const r = await this.withRetries("write", (c) => c.send<RememberAnswer>(signed));
    if (r) this.accepted.push({ jobId: r.job_id, text, owner: this.who.owner });
  }

  /** `pauseMs`: the agent's think time between calls (what sets the load). */
  async runUntil(stopped: () => boolean, pauseMs: number): Promise<void> {
    while (!stopped()) {
      await this.step();
      if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
    }
  }
}
