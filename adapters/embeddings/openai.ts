// Real embeddings: any OpenAI-compatible `/embeddings` endpoint through the `openai` SDK. Retries (429, 5xx,
// connection errors, with backoff) and per-request timeouts are the SDK's, declared here, not hand-rolled.
import OpenAI from "openai";
import { PortError, type EmbeddingPort, type PortErrorKind } from "../ports.ts";

export interface OpenAIEmbedderOptions {
  /** EMBEDDING_API_BASE, including the version path (e.g. https://api.openai.com/v1). */
  readonly apiBase?: string;
  /** EMBEDDING_API_KEY; keyless local servers ignore the placeholder sent when it is absent. */
  readonly apiKey?: string;
  readonly model?: string;
  /** Vector length the model returns (checked on every response). */
  readonly dims?: number;
  /** Send `dimensions` so the model shortens its vectors (text-embedding-3-*; others may reject the field). */
  readonly sendDimensions?: boolean;
  /** Inputs per request (OpenAI accepts ≤ 2048 inputs and ≤ 300k tokens per request). */
  readonly batchSize?: number;
  /** Requests in flight for one large embed call. */
  readonly concurrency?: number;
  readonly timeoutMs?: number;
  readonly maxRetries?: number;
  /** "float" is the most widely supported; "base64" is smaller on the wire. Either response shape is decoded. */
  readonly encoding?: "float" | "base64";
}

export const DEFAULT_OPENAI_MODEL = "text-embedding-3-small";
const DEFAULT_OPENAI_DIMS = 1536;

/** Maps SDK failures to port failure classes. Upstream messages are left out: they can echo a masked key or input. */
export function toPortError(e: unknown, port = "embeddings"): PortError {
  if (e instanceof PortError) return e;
  if (e instanceof OpenAI.APIConnectionTimeoutError) return new PortError(port, "unavailable", "request timed out");
  if (e instanceof OpenAI.APIConnectionError) return new PortError(port, "unavailable", "connection failed");
  if (e instanceof OpenAI.APIError && e.status !== undefined) {
    const s = e.status;
    const kind: PortErrorKind =
      s === 401 || s === 403 ? "forbidden"
      : s === 402 || e.code === "insufficient_quota" ? "insufficient_funds"
      : s === 404 ? "not_found"
      : s === 408 || s === 409 || s === 429 || s >= 500 ? "unavailable"
      : s === 400 || s === 413 || s === 422 ? "invalid"
      : "rejected";
    return new PortError(port, kind, `HTTP ${s}${e.code ? ` ${e.code}` : ""}${e.type ? ` (${e.type})` : ""}`);
  }
  return new PortError(port, "unavailable", e instanceof Error ? e.name : "unknown error");
}

function decode(embedding: unknown): Float32Array {
  if (typeof embedding === "string") {
    const bytes = Buffer.from(embedding, "base64");
    // Copy: the Buffer may sit at an offset of the shared pool that is not 4-byte aligned.
    return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  }
  if (Array.isArray(embedding)) return Float32Array.from(embedding as number[]);
  throw new PortError("embeddings", "invalid", "response embedding is neither a float array nor base64");
}

export class OpenAIEmbedder implements EmbeddingPort {
  readonly name: string;
  readonly dims: number;
  private readonly client: OpenAI;
  private readonly model: string;
  private readonly sendDimensions: boolean;
  private readonly batchSize: number;
  private readonly concurrency: number;
  private readonly encoding: "float" | "base64";

  constructor(opts: OpenAIEmbedderOptions = {}) {
    this.model = opts.model ?? DEFAULT_OPENAI_MODEL;
    this.dims = opts.dims ?? DEFAULT_OPENAI_DIMS;
    this.name = `openai:${this.model}:${this.dims}`;
    this.sendDimensions = opts.sendDimensions ?? (opts.dims !== undefined && this.model.startsWith("text-embedding-3"));
    this.batchSize = Math.min(2048, Math.max(1, opts.batchSize ?? 256));
    this.concurrency = Math.max(1, opts.concurrency ?? 2);
    this.encoding = opts.encoding ?? "float";
    // Explicit values, so OPENAI_API_KEY / OPENAI_BASE_URL in the environment never redirect this adapter.
    this.client = new OpenAI({
      apiKey: opts.apiKey || "unused",
      baseURL: opts.apiBase || "https://api.openai.com/v1",
      timeout: opts.timeoutMs ?? 30_000,
      maxRetries: opts.maxRetries ?? 2,
    });
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = new Array(texts.length);
    let next = 0;
    const worker = async () => {
      for (let start = next; start < texts.length; start = next) {
        next += this.batchSize;
        const chunk = texts.slice(start, start + this.batchSize);
        const vecs = await this.request(chunk);
        for (let i = 0; i < vecs.length; i++) out[start + i] = vecs[i];
      }
    };
    const workers = Math.min(this.concurrency, Math.ceil(texts.length / this.batchSize));
    await Promise.all(Array.from({ length: workers }, worker));
    return out;
  }

  private async request(chunk: string[]): Promise<Float32Array[]> {
    let res: OpenAI.Embeddings.CreateEmbeddingResponse;
    try {
      res = await this.client.embeddings.create({
        model: this.model,
        // The API rejects empty strings; a space embeds as "nothing said".
        input: chunk.map((t) => (t === "" ? " " : t)),
        encoding_format: this.encoding,
        ...(this.sendDimensions ? { dimensions: this.dims } : {}),
      });
    } catch (e) {
      throw toPortError(e);
    }
    const data = res?.data;
    if (!Array.isArray(data) || data.length !== chunk.length)
      throw new PortError("embeddings", "invalid", `expected ${chunk.length} embeddings, got ${Array.isArray(data) ? data.length : "none"}`);
    const vecs: Float32Array[] = new Array(chunk.length);
    for (const item of data) {
      const v = decode(item.embedding);
      if (v.length !== this.dims) throw new PortError("embeddings", "invalid", `model returned ${v.length} dims, configured ${this.dims}`);
      let sum = 0;
      for (let i = 0; i < v.length; i++) sum += v[i] * v[i];
      if (!(sum > 0) || !Number.isFinite(sum)) throw new PortError("embeddings", "invalid", "model returned a zero or non-finite vector");
      const inv = 1 / Math.sqrt(sum); // OpenAI's vectors are unit length already; compatible servers' may not be
      for (let i = 0; i < v.length; i++) v[i] *= inv;
      const idx = item.index ?? -1;
      if (!(idx >= 0 && idx < chunk.length) || vecs[idx]) throw new PortError("embeddings", "invalid", "response indexes do not match the inputs");
      vecs[idx] = v;
    }
    return vecs;
  }
}
