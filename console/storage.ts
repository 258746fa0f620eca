// The console's storage port: file bytes live in the blob storage service, reached over HTTP through its data API
// with the API key of an account the console owns (spec/blobstore.md). Each console bucket is one blob-store bucket
// (`storage_bucket_name`), each file one object keyed by the file id. Why the data API rather than the Walrus routes:
// it has real deletion (a reference-counted delete the blob store's collector turns into removed bytes), which the
// console's delete worker needs, per-bucket listing for verification, and the same content-addressed blob ids.
import type { Readable } from "node:stream";
import { Agent, request, type Dispatcher } from "undici";

export interface StoredObject {
  readonly key: string;
  readonly blob_id: string;
  readonly size: number;
  readonly md5: string;
}

export interface OpenedObject {
  readonly stream: Readable;
  readonly size: number;
}

export class StorageError extends Error {
  constructor(message: string, readonly status: number, readonly transient: boolean) {
    super(message);
  }
}

export interface StoragePort {
  ensureBucket(name: string): Promise<void>;
  deleteBucket(name: string): Promise<void>;
  put(bucket: string, key: string, body: Readable, contentType: string): Promise<StoredObject>;
  stat(bucket: string, key: string): Promise<StoredObject | null>;
  open(bucket: string, key: string): Promise<OpenedObject | null>;
  /** true when removed, false when it was already absent */
  remove(bucket: string, key: string): Promise<boolean>;
  close(): Promise<void>;
}

export class BlobStoreStorage implements StoragePort {
  private readonly agent: Agent;
  private readonly base: string;

  constructor(opts: { url: string; apiKey: string; connections?: number }) {
    this.base = opts.url.replace(/\/+$/, "");
    this.agent = new Agent({ connections: opts.connections ?? 64, keepAliveTimeout: 30_000, pipelining: 1 });
    this.auth = { authorization: `Bearer ${opts.apiKey}` };
  }

  private readonly auth: Record<string, string>;

  private async call(method: Dispatcher.HttpMethod, path: string, opts: { body?: string | Readable; headers?: Record<string, string>; auth?: boolean } = {}) {
    try {
      return await request(this.base + path, {
        method,
        dispatcher: this.agent,
        headers: { ...(opts.auth === false ? {} : this.auth), ...(opts.headers ?? {}) },
        body: opts.body,
        headersTimeout: 60_000,
        bodyTimeout: 120_000,
      });
    } catch (err) {
      throw new StorageError(`blob store unreachable: ${(err as Error).message}`, 503, true);
    }
  }

  private async fail(res: Dispatcher.ResponseData, what: string): Promise<never> {
    const text = await res.body.text().catch(() => "");
    throw new StorageError(`${what}: blob store answered ${res.statusCode} ${text.slice(0, 200)}`, res.statusCode, res.statusCode >= 500 || res.statusCode === 429);
  }

  async ensureBucket(name: string): Promise<void> {
    const res = await this.call("POST", "/api/v1/buckets", { body: JSON.stringify({ name, description: "memrelay console bucket" }), headers: { "content-type": "application/json" } });
    if (res.statusCode === 201) return void (await res.body.dump());
    if (res.statusCode === 409) {
      await res.body.dump();
      const own = await this.call("GET", `/api/v1/buckets/${name}`);
      await own.body.dump();
      if (own.statusCode === 200) return;
      throw new StorageError(`storage bucket ${name} belongs to another account`, 409, false);
    }
    return this.fail(res, `create storage bucket ${name}`);
  }

  async deleteBucket(name: string): Promise<void> {
    const res = await this.call("DELETE", `/api/v1/buckets/${name}?force=true`);
    if (res.statusCode === 204 || res.statusCode === 404) return void (await res.body.dump());
    return this.fail(res, `delete storage bucket ${name}`);
  }

  async put(bucket: string, key: string, body: Readable, contentType: string): Promise<StoredObject> {
    const res = await this.call("PUT", `/api/v1/buckets/${bucket}/blobs/${encodeURIComponent(key)}`, { body, headers: { "content-type": contentType } });
    if (res.statusCode !== 201) return this.fail(res, `store ${bucket}/${key}`);
    const o = (await res.body.json()) as StoredObject;
    return { key: o.key, blob_id: o.blob_id, size: o.size, md5: o.md5 };
  }

  async stat(bucket: string, key: string): Promise<StoredObject | null> {
    const res = await this.call("GET", `/api/v1/buckets/${bucket}/blobs?prefix=${encodeURIComponent(key)}&limit=1`);
    if (res.statusCode === 404) return (await res.body.dump(), null);
    if (res.statusCode !== 200) return this.fail(res, `stat ${bucket}/${key}`);
    const page = (await res.body.json()) as { data: StoredObject[] };
    const o = page.data.find((x) => x.key === key);
    return o ? { key: o.key, blob_id: o.blob_id, size: o.size, md5: o.md5 } : null;
  }

  async open(bucket: string, key: string): Promise<OpenedObject | null> {
    const res = await this.call("GET", `/api/v1/buckets/${bucket}/blobs/${encodeURIComponent(key)}`, { auth: false });
    if (res.statusCode === 404) return (await res.body.dump(), null);
    if (res.statusCode !== 200) return this.fail(res, `read ${bucket}/${key}`);
    const size = Number(res.headers["content-length"]);
    if (!Number.isFinite(size)) {
      res.body.destroy();
      throw new StorageError(`read ${bucket}/${key}: no content length`, 502, true);
    }
    return { stream: res.body as unknown as Readable, size };
  }

  async remove(bucket: string, key: string): Promise<boolean> {
    const res = await this.call("DELETE", `/api/v1/buckets/${bucket}/blobs/${encodeURIComponent(key)}`);
    if (res.statusCode === 204) return (await res.body.dump(), true);
    if (res.statusCode === 404) return (await res.body.dump(), false);
    return this.fail(res, `delete ${bucket}/${key}`);
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }
}

/** Name of the blob-store bucket holding a console bucket's files. */
export const storageBucketName = (bucketId: string) => `wc-${bucketId.replace(/-/g, "")}`;
