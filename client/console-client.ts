// A small TypeScript client of the console API (spec/console.md) for tests, benchmarks and scripts: bearer auth,
// streamed multipart uploads, the reserve → sign → finalize handshake, upload polling, sponsorship.
import { Readable } from "node:stream";
import { randomBytes } from "node:crypto";
import { Agent, request, type Dispatcher } from "undici";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";

export class ConsoleApiError extends Error {
  constructor(readonly status: number, readonly body: { error?: string; code?: string; [k: string]: unknown }, readonly headers: Record<string, unknown>) {
    super(`${status} ${body?.code ?? ""} ${body?.error ?? ""}`.trim());
  }
  get code(): string | undefined {
    return this.body?.code;
  }
}

export interface ApiResponse<T = any> {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: T;
  readonly raw: Buffer;
}

export interface UploadInput {
  readonly bytes?: Uint8Array;
  /** a stream of `size` bytes (sent with a Content-Length) */
  readonly stream?: AsyncIterable<Uint8Array>;
  readonly size?: number;
  readonly filename?: string;
  readonly name?: string;
  readonly metadata?: Record<string, unknown> | string;
  readonly contentType?: string;
}

/** Signs transaction bytes (base64) with a service key (`suiprivkey…`), as a Sui wallet would. */
export async function signTransactionBytes(bytes: string, serviceSecretKey: string): Promise<string> {
  const kp = Ed25519Keypair.fromSecretKey(serviceSecretKey);
  return (await kp.signTransaction(Uint8Array.from(Buffer.from(bytes, "base64")))).signature;
}

export function multipartBody(input: UploadInput): { contentType: string; length: number | undefined; body: Readable } {
  const boundary = "----memrelay" + randomBytes(12).toString("hex");
  const fields: Buffer[] = [];
  const field = (name: string, value: string) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  if (input.name !== undefined) fields.push(field("name", input.name));
  if (input.metadata !== undefined) fields.push(field("metadata", typeof input.metadata === "string" ? input.metadata : JSON.stringify(input.metadata)));
  const filename = (input.filename ?? "file.bin").replace(/"/g, "%22");
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${input.contentType ?? "application/octet-stream"}\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const pre = Buffer.concat([...fields, head]);
  const size = input.bytes ? input.bytes.length : input.size;
  async function* gen() {
    yield pre;
    if (input.bytes) yield input.bytes;
    else if (input.stream) for await (const c of input.stream) yield c;
    yield tail;
  }
  return { contentType: `multipart/form-data; boundary=${boundary}`, length: size === undefined ? undefined : pre.length + size + tail.length, body: Readable.from(gen(), { objectMode: false }) };
}

export class ConsoleClient {
  private readonly agent: Agent;
  constructor(readonly baseUrl: string, readonly apiKey: string | undefined, agent?: Agent) {
    this.agent = agent ?? new Agent({ connections: 16, keepAliveTimeout: 10_000 });
  }

  async call<T = any>(method: Dispatcher.HttpMethod, path: string, opts: { json?: unknown; body?: Readable | Buffer | string; headers?: Record<string, string>; throwOnError?: boolean } = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}), ...(opts.headers ?? {}) };
    let body = opts.body;
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers["content-type"] = "application/json";
    }
    const res = await request(this.baseUrl + path, { method, headers, body, dispatcher: this.agent });
    const raw = Buffer.from(await res.body.arrayBuffer());
    const ct = String(res.headers["content-type"] ?? "");
    const parsed = ct.includes("application/json") && raw.length ? JSON.parse(raw.toString("utf8")) : raw;
    const out = { status: res.statusCode, headers: res.headers, body: parsed as T, raw };
    if (opts.throwOnError !== false && res.statusCode >= 400) throw new ConsoleApiError(res.statusCode, parsed as never, res.headers);
    return out;
  }

  spaces(type?: "personal" | "team") {
    return this.call("GET", `/api/v1/spaces${type ? `?type=${type}` : ""}`).then((r) => r.body.data as any[]);
  }
  buckets(spaceId: string, query: Record<string, string | number> = {}) {
    const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)] as [string, string])).toString();
    return this.call("GET", `/api/v1/spaces/${spaceId}/buckets${qs ? `?${qs}` : ""}`).then((r) => r.body as { buckets: any[]; next_cursor: string | null });
  }
  reserveBucket(spaceId: string, name: string) {
    return this.call("POST", `/api/v1/spaces/${spaceId}/buckets`, { json: { name, scope: "private" } }).then((r) => r.body as { bucket_id: string; bytes: string; digest: string; state: string });
  }
  finalize(bucketId: string, signature: string) {
    return this.call("POST", `/api/v1/buckets/${bucketId}/finalize`, { json: { signature } }).then((r) => r.body as { bucket_id: string; encryption_policy_id: string; state: string });
  }
  /** reserve → sign with the service key → finalize */
  async createPrivateBucket(spaceId: string, name: string, serviceSecretKey: string) {
    const r = await this.reserveBucket(spaceId, name);
    return this.finalize(r.bucket_id, await signTransactionBytes(r.bytes, serviceSecretKey));
  }
  bucket(bucketId: string) {
    return this.call("GET", `/api/v1/buckets/${bucketId}`).then((r) => r.body.data);
  }
  files(scope: "spaces" | "buckets", id: string, query: Record<string, string | number> = {}) {
    const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)] as [string, string])).toString();
    return this.call("GET", `/api/v1/${scope}/${id}/files${qs ? `?${qs}` : ""}`).then((r) => r.body as { data: any[]; pagination: { limit: number; hasMore: boolean; nextCursor: string | null } });
  }
  upload(bucketId: string, input: UploadInput) {
    const mp = multipartBody(input);
    const headers: Record<string, string> = { "content-type": mp.contentType };
    if (mp.length !== undefined) headers["content-length"] = String(mp.length);
    return this.call("POST", `/api/v1/buckets/${bucketId}/files`, { body: mp.body, headers }).then((r) => r.body.data);
  }
  /** Retries while the access index has not mirrored the grant yet (403 mirror_missing_grant), every `everyMs`. */
  async uploadWithRetry(bucketId: string, input: () => UploadInput, opts: { everyMs?: number; timeoutMs?: number; onRetry?: () => void } = {}) {
    const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
    for (;;) {
      try {
        return await this.upload(bucketId, input());
      } catch (err) {
        if (!(err instanceof ConsoleApiError) || err.code !== "mirror_missing_grant" || Date.now() > deadline) throw err;
        opts.onRetry?.();
        await new Promise((r) => setTimeout(r, opts.everyMs ?? 3_000));
      }
    }
  }
  file(bucketId: string, fileId: string) {
    return this.call("GET", `/api/v1/buckets/${bucketId}/files/${fileId}`).then((r) => r.body.data);
  }
  status(bucketId: string, fileId: string) {
    return this.call("GET", `/api/v1/buckets/${bucketId}/files/${fileId}/status`, { throwOnError: false });
  }
  /** Polls the status route until the job leaves the queue (404) or finishes, then returns the file. */
  async waitForUpload(bucketId: string, fileId: string, opts: { everyMs?: number; timeoutMs?: number; seen?: string[] } = {}) {
    const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
    for (;;) {
      const s = await this.status(bucketId, fileId);
      if (s.status === 200) opts.seen?.push(s.body.data.state);
      if (s.status === 404 || (s.status === 200 && (s.body.data.state === "completed" || s.body.data.state === "failed"))) {
        const f = await this.file(bucketId, fileId);
        if (f.status !== "uploading") return f;
      } else if (s.status !== 200) throw new ConsoleApiError(s.status, s.body as never, s.headers);
      if (Date.now() > deadline) throw new Error(`upload ${fileId} did not finish in time`);
      await new Promise((r) => setTimeout(r, opts.everyMs ?? 20));
    }
  }
  download(bucketId: string, fileId: string) {
    return this.call("GET", `/api/v1/buckets/${bucketId}/files/${fileId}/download`);
  }
  deleteFile(bucketId: string, fileId: string) {
    return this.call("DELETE", `/api/v1/buckets/${bucketId}/files/${fileId}`);
  }
  deleteBucket(bucketId: string, confirm = true) {
    return this.call("DELETE", `/api/v1/buckets/${bucketId}${confirm ? "?confirm=true" : ""}`);
  }
  sponsor(body: Record<string, unknown>) {
    return this.call("POST", "/encryption/sponsor", { json: body }).then((r) => r.body as { bytes: string; digest: string });
  }
  execute(digest: string, signature: string) {
    return this.call("POST", `/encryption/sponsor/${digest}/execute`, { json: { signature } }).then((r) => r.body as { digest: string; objectChanges: { objectId: string; objectType: string; version: string }[] });
  }
  /** sponsor → sign with the service key → execute */
  async sponsored(body: Record<string, unknown>, serviceSecretKey: string) {
    const s = await this.sponsor(body);
    return this.execute(s.digest, await signTransactionBytes(s.bytes, serviceSecretKey));
  }
  close() {
    return this.agent.close();
  }
}
