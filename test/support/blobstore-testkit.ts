// A raw HTTP client for black-box tests and benchmarks of the blob store: node:http with keep-alive, the request
// target sent exactly as given (no URL normalisation, so `..` segments and odd escapes reach the server).
import http from "node:http";
import type { Readable } from "node:stream";

export interface RawResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
  text(): string;
  json<T = any>(): T;
}

export interface RequestOptions {
  readonly headers?: Record<string, string>;
  /** Buffer/string: sent with Content-Length; Readable: sent chunked; object: JSON */
  readonly body?: Buffer | string | Readable | Record<string, unknown> | unknown[];
  readonly bearer?: string;
}

export type HttpClient = ((method: string, target: string, opts?: RequestOptions) => Promise<RawResponse>) & { close(): void };

export function httpClient(baseUrl: string, maxSockets = 64): HttpClient {
  const u = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const fn = async (method: string, target: string, opts: RequestOptions = {}): Promise<RawResponse> => {
    // A keep-alive socket the server closed just as it was reused (Node's documented race): send again, on
    // another socket, when the body can be sent again.
    const replayable = opts.body === undefined || typeof opts.body === "string" || Buffer.isBuffer(opts.body) || typeof (opts.body as Readable).pipe !== "function";
    for (let attempt = 1; ; attempt++) {
      try {
        return await once(method, target, opts);
      } catch (err) {
        const e = err as NodeJS.ErrnoException & { reused?: boolean };
        const stale = e.reused && (e.code === "ECONNRESET" || e.code === "EPIPE" || /socket hang up/.test(e.message));
        if (!stale || !replayable || attempt >= maxSockets) throw err;
      }
    }
  };
  const once = (method: string, target: string, opts: RequestOptions) =>
    new Promise<RawResponse>((resolve, reject) => {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (opts.bearer) headers["authorization"] = `Bearer ${opts.bearer}`;
      let payload: Buffer | string | Readable | undefined;
      const b = opts.body;
      if (b === undefined) payload = undefined;
      else if (typeof b === "string" || Buffer.isBuffer(b)) payload = b;
      else if (typeof (b as Readable).pipe === "function") payload = b as Readable;
      else {
        payload = JSON.stringify(b);
        headers["content-type"] ??= "application/json";
      }
      if (payload !== undefined && typeof (payload as Readable).pipe !== "function") headers["content-length"] = String(Buffer.byteLength(payload as Buffer | string));
      const req = http.request({ host: u.hostname, port: Number(u.port), method, path: target, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => {
          const body = Buffer.concat(chunks);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            text: () => body.toString("utf8"),
            json: () => JSON.parse(body.toString("utf8")),
          });
        });
      });
      req.on("error", (err) => reject(Object.assign(err, { reused: req.reusedSocket })));
      if (payload === undefined) req.end();
      else if (typeof (payload as Readable).pipe === "function") (payload as Readable).pipe(req);
      else req.end(payload);
    });
  return Object.assign(fn, { close: () => agent.destroy() });
}
