// A TypeScript client of the relayer: signed requests, remember, job polling with backoff, recall.
// Used by the CLI, the tests and the benchmarks.
import { request, Agent } from "undici";
import { RequestSigner } from "./signer.ts";

export interface ClientOptions {
  readonly baseUrl: string;
  readonly delegatePrivateKey: Uint8Array;
  readonly accountId?: string;
  /** Exported Seal session key (base64) for x-encryption-session; a function lets callers refresh it. */
  readonly encryptionSession?: string | (() => Promise<string>);
  readonly agent?: Agent;
}

export class RelayerError extends Error {
  constructor(readonly status: number, readonly body: unknown, readonly headers: Record<string, string | string[] | undefined>) {
    super(`relayer answered ${status}: ${typeof body === "object" && body && "error" in body ? (body as { error: string }).error : JSON.stringify(body)}`);
  }
}

export interface RememberAnswer { job_id: string; status: string }
export interface RememberBulkAnswer { job_ids: string[]; total: number; status: string }
export interface Job { job_id: string; status: string; owner?: string; namespace?: string; blob_id?: string; error?: string }
export interface RecallResponse { results: { blob_id: string; text: string; distance: number; score?: number }[]; total: number; dropped_count?: number }

/**
 * A request signed once: sent again as it is (to this relayer or another of the deployment), it is the same request,
 * which the relayer answers as the first time for remembers (a retry after a lost answer stores nothing twice).
 */
export interface SignedRequest {
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly raw: string;
  readonly headers: Record<string, string>;
}

export class MemrelayClient {
  readonly signer: RequestSigner;

  constructor(private readonly opts: ClientOptions) {
    this.signer = new RequestSigner(opts.delegatePrivateKey, opts.accountId ?? "");
  }

  call<T>(method: "GET" | "POST", path: string, body?: unknown, extra: Record<string, string> = {}): Promise<T> {
    return this.send(this.sign(method, path, body, extra));
  }

  sign(method: "GET" | "POST", path: string, body?: unknown, extra: Record<string, string> = {}): SignedRequest {
    const raw = body === undefined ? "" : JSON.stringify(body);
    const headers: Record<string, string> = { ...this.signer.headers(method, path, raw), ...extra };
    if (raw) headers["content-type"] = "application/json";
    return { method, path, raw, headers };
  }

  async send<T>({ method, path, raw, headers }: SignedRequest): Promise<T> {
    const res = await request(this.opts.baseUrl + path, { method, headers, body: raw || undefined, dispatcher: this.opts.agent });
    const text = await res.body.text();
    const parsed = text ? JSON.parse(text) : {};
    if (res.statusCode >= 400) throw new RelayerError(res.statusCode, parsed, res.headers);
    return parsed as T;
  }

  remember(text: string, namespace?: string) {
    return this.send<RememberAnswer>(this.rememberRequest(text, namespace));
  }

  /** The signed request `remember` sends, for a caller that may send it again (`send`) after a lost answer. */
  rememberRequest(text: string, namespace?: string): SignedRequest {
    return this.sign("POST", "/api/remember", { text, ...(namespace ? { namespace } : {}) });
  }

  /**
   * Remembers and waits until the memory is recallable (or failed): one request that the relayer holds
   * (`POST /api/remember?wait=`), then long polls if it was not done within that wait.
   */
  async rememberAndWait(text: string, namespace?: string, timeoutMs = 60_000): Promise<Job> {
    const deadline = Date.now() + timeoutMs;
    const wait = Math.max(1, Math.min(20, Math.floor(timeoutMs / 1000)));
    const j = await this.call<Job>("POST", `/api/remember?wait=${wait}`, { text, ...(namespace ? { namespace } : {}) });
    if (j.status === "done" || j.status === "failed") return j;
    return this.waitForJob(j.job_id, Math.max(0, deadline - Date.now()));
  }

  rememberBulk(items: { text: string; namespace?: string }[]) {
    return this.send<RememberBulkAnswer>(this.rememberBulkRequest(items));
  }

  rememberBulkRequest(items: { text: string; namespace?: string }[]): SignedRequest {
    return this.sign("POST", "/api/remember/bulk", { items });
  }

  /** The job's status; with `waitSecs`, the relayer answers once it is done or failed, or after that long. */
  job(jobId: string, waitSecs = 0) {
    return this.call<Job>("GET", `/api/remember/${jobId}${waitSecs ? `?wait=${waitSecs}` : ""}`);
  }

  bulkStatus(jobIds: string[]) {
    return this.call<{ results: Job[] }>("POST", "/api/remember/bulk/status", { job_ids: jobIds });
  }

  /** Long-polls (`?wait=`) until the job is done or failed. */
  async waitForJob(jobId: string, timeoutMs = 60_000): Promise<Job> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const left = Math.ceil((deadline - Date.now()) / 1000);
      const j = await this.job(jobId, Math.max(0, Math.min(20, left)));
      if (j.status === "done" || j.status === "failed") return j;
      if (Date.now() >= deadline) throw new Error(`job ${jobId} still ${j.status} after ${timeoutMs} ms`);
    }
  }

  async recall(query: string, opts: { limit?: number; namespace?: string; scoring_weights?: Record<string, number> } = {}) {
    return this.call<RecallResponse>("POST", "/api/recall", { query, ...opts }, await this.decryptHeaders());
  }

  /** Extracts facts from the text and remembers each one the namespace does not already hold. */
  analyze(text: string, opts: { namespace?: string; occurred_at?: string } = {}) {
    return this.call<{ job_ids: string[]; facts: { text: string; id: string; job_id: string }[]; fact_count: number; status: string; owner: string; skipped: { text: string; duplicate_of: string; distance: number }[] }>("POST", "/api/analyze", { text, ...opts });
  }

  /** Answers the question from the recalled memories. */
  async ask(question: string, opts: { limit?: number; namespace?: string; scoring_weights?: Record<string, number> } = {}) {
    return this.call<{ answer: string; memories_used: number; memories: { blob_id: string; text: string; distance: number }[] }>("POST", "/api/ask", { question, ...opts }, await this.decryptHeaders());
  }

  /** Re-indexes the namespace's memories that the index is missing (re-embedded by the relayer's embedder). */
  async restore(namespace: string, limit = 10) {
    return this.call<{ restored: number; skipped: number; failed: number; total: number; truncated?: boolean }>("POST", "/api/restore", { namespace, limit }, await this.decryptHeaders());
  }

  private async decryptHeaders(): Promise<Record<string, string>> {
    const s = this.opts.encryptionSession;
    if (!s) return {};
    return { "x-encryption-session": typeof s === "string" ? s : await s() };
  }
}
