// The console's storage port: file bytes live in the blob storage service, reached over HTTP through its data API
// with the API key of an account the console owns (spec/blobstore.md). Each console bucket is one blob-store bucket
// (`storage_bucket_name`), each file one object keyed by the file id. Why the data API rather than the Walrus routes:
// it has real deletion (a reference-counted delete the blob store's collector turns into removed bytes), which the
// console's delete worker needs, objects by bucket and key (read and checked by their read route), and the same
// content-addressed blob ids.
import { Agent as HttpAgent, request as httpRequest, type ClientRequest } from "node:http";
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
  /**
   * Streams `body` into an object; a body that fails aborts the write (the blob store then keeps nothing).
   * `written` is told of each chunk once it is no longer needed (sent on, or dropped by a failed write).
   */
  put(bucket: string, key: string, body: AsyncIterable<Uint8Array>, contentType: string, written?: (chunk: Uint8Array) => void): Promise<StoredObject>;
  stat(bucket: string, key: string): Promise<StoredObject | null>;
  open(bucket: string, key: string): Promise<OpenedObject | null>;
  /** true when removed, false when it was already absent */
  remove(bucket: string, key: string): Promise<boolean>;
  close(): Promise<void>;
}

export class BlobStoreStorage implements StoragePort {
  private readonly agent: Agent;
  /** Uploads (see put) and stats go through node:http. */
  private readonly httpAgent: HttpAgent;
  private readonly base: string;

  constructor(opts: { url: string; apiKey: string; connections?: number }) {
    this.base = opts.url.replace(/\/+$/, "");
    this.agent = new Agent({ connections: opts.connections ?? 64, keepAliveTimeout: 30_000, pipelining: 1 });
    this.httpAgent = new HttpAgent({ keepAlive: true, keepAliveMsecs: 30_000, maxSockets: opts.connections ?? 64 });
    this.auth = { authorization: `Bearer ${opts.apiKey}` };
  }

  private readonly auth: Record<string, string>;

  private async call(method: Dispatcher.HttpMethod, path: string, opts: { body?: string; headers?: Record<string, string>; auth?: boolean } = {}) {
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

  /**
   * node:http rather than undici: the body's chunks are written to the socket as they come (one writev per chunk,
   * chunked encoding), where undici wraps a streamed body in its own stream machinery — measurably more CPU and
   * garbage per MiB on the console's hottest path.
   */
  put(bucket: string, key: string, body: AsyncIterable<Uint8Array>, contentType: string, written?: (chunk: Uint8Array) => void): Promise<StoredObject> {
    const what = `store ${bucket}/${key}`;
    return new Promise<StoredObject>((resolve, reject) => {
      let settled = false;
      const settle = (err: Error | null, o?: StoredObject) => {
        if (settled) return;
        settled = true;
        if (err) {
          req.destroy();
          reject(err);
        } else resolve(o!);
      };
      const req: ClientRequest = httpRequest(`${this.base}/api/v1/buckets/${bucket}/blobs/${encodeURIComponent(key)}`, {
        method: "PUT",
        agent: this.httpAgent,
        headers: { ...this.auth, "content-type": contentType },
      });
      req.setTimeout(120_000, () => settle(new StorageError(`${what}: blob store timed out`, 503, true)));
      req.on("error", (err) => settle(new StorageError(`blob store unreachable: ${err.message}`, 503, true)));
      req.on("response", (res) => {
        const parts: Buffer[] = [];
        res.on("data", (c: Buffer) => parts.push(c));
        res.on("error", (err) => settle(new StorageError(`${what}: ${err.message}`, 503, true)));
        res.on("end", () => {
          const text = Buffer.concat(parts).toString("utf8");
          const status = res.statusCode ?? 0;
          if (status !== 201) return settle(new StorageError(`${what}: blob store answered ${status} ${text.slice(0, 200)}`, status, status >= 500 || status === 429));
          try {
            const o = JSON.parse(text) as StoredObject;
            settle(null, storedObject(o));
          } catch {
            settle(new StorageError(`${what}: unreadable answer`, 502, true));
          }
        });
      });
      void (async () => {
        for await (const chunk of body) {
          if (settled) return;
          // the callback runs once the socket has taken the bytes (or with an error when it never will)
          if (!req.write(chunk, written && (() => written(chunk)))) await drained(req);
        }
        if (!settled) req.end();
      })().catch((err: Error) => settle(err));
    });
  }

  /**
   * A HEAD of the object's read route (public, as downloads are): its size, blob id and MD5 (the ETag) from the
   * headers. The listing answers the same from the same table, but pays the API key's check and a bucket lookup
   * besides, on every upload's completion. Through node:http: undici closes its connection after every HEAD.
   */
  stat(bucket: string, key: string): Promise<StoredObject | null> {
    const what = `stat ${bucket}/${key}`;
    return new Promise<StoredObject | null>((resolve, reject) => {
      const req = httpRequest(`${this.base}/api/v1/buckets/${bucket}/blobs/${encodeURIComponent(key)}`, { method: "HEAD", agent: this.httpAgent });
      req.setTimeout(60_000, () => req.destroy(new StorageError(`${what}: blob store timed out`, 503, true)));
      req.on("error", (err) => reject(err instanceof StorageError ? err : new StorageError(`blob store unreachable: ${err.message}`, 503, true)));
      req.on("response", (res) => {
        res.resume();
        res.on("error", (err) => reject(new StorageError(`${what}: ${err.message}`, 503, true)));
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          if (status === 404) return resolve(null);
          if (status !== 200) return reject(new StorageError(`${what}: blob store answered ${status}`, status, status >= 500 || status === 429));
          const blobId = res.headers["x-blob-id"];
          const size = Number(res.headers["content-length"]);
          const etag = /^"([0-9a-f]{32})"$/.exec(res.headers["etag"] ?? "");
          if (typeof blobId !== "string" || !Number.isSafeInteger(size) || !etag) return reject(new StorageError(`${what}: incomplete headers`, 502, true));
          resolve({ key, blob_id: blobId, size, md5: etag[1] });
        });
      });
      req.end();
    });
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
    this.httpAgent.destroy();
    await this.agent.close().catch(() => undefined);
  }
}

/** The fields of the blob store's object answer that the console keeps. */
const storedObject = (o: StoredObject): StoredObject => ({ key: o.key, blob_id: o.blob_id, size: o.size, md5: o.md5 });

/** Resolves when a request can take more body (or is gone). */
function drained(req: ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      req.off("drain", done);
      req.off("close", done);
      resolve();
    };
    req.on("drain", done);
    req.on("close", done);
  });
}

/** Name of the blob-store bucket holding a console bucket's files. */
export const storageBucketName = (bucketId: string) => `wc-${bucketId.replace(/-/g, "")}`;
