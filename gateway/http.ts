// A thin layer over uWebSockets.js: routes with typed handlers, bounded body reading, JSON replies, streaming
// replies with backpressure, CORS by allow-list, and abort safety (a disconnected client never gets a write and
// the handler can see it left). Everything a handler needs from the request is copied before the first await,
// because uWS request objects are only valid synchronously.
import { createRequire } from "node:module";
import { Readable } from "node:stream";
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from "uWebSockets.js";
import { findUnsafeQuery, findUnsafeText } from "../schemas/text.ts";
import { HttpError } from "../schemas/http-error.ts";

const require = createRequire(import.meta.url);
type Uws = typeof import("uWebSockets.js");

/** Loads the native binding and fails loudly when it is missing (the start-up check DEVELOPERS.md asks for). */
export function loadUws(): Uws {
  try {
    const uws = require("uWebSockets.js") as Uws;
    if (typeof uws.App !== "function") throw new Error("uWebSockets.js loaded without App()");
    return uws;
  } catch (err) {
    throw new Error(`uWebSockets.js native binding did not load on Node ${process.version}: ${err instanceof Error ? err.message : err}`);
  }
}

export interface Request {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  /** Raw request target, path plus `?query`, exactly as sent (signed by clients). */
  readonly target: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly params: readonly string[];
  readonly remoteAddress: string;
  readonly body: Buffer;
  /** For stream-mode routes: the request body as it arrives (with backpressure). */
  readonly bodyStream?: Readable;
  readonly aborted: () => boolean;
}

export interface Reply {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
  readonly stream?: Readable;
  /** Known length of `stream`, sent as Content-Length. */
  readonly length?: number;
  /** A HEAD reply: no body, this Content-Length (the size a GET would send). */
  readonly headLength?: number;
  /** Called once uWS has taken `body` (it copies) or the reply was dropped: the body's memory may be reused. */
  readonly sent?: () => void;
}

export type Handler = (req: Request) => Promise<Reply> | Reply;

export { HttpError };

export const json = (status: number, body: unknown, headers: Record<string, string> = {}): Reply => ({
  status,
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(body),
});

export const errorReply = (status: number, error: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  json(status, { error, ...extra }, headers);

export interface RouteOptions {
  /** Largest accepted body in bytes; larger gets 413 with the limit in the error. */
  readonly bodyLimit?: number;
  /** "stream" hands the body to the handler as a Readable instead of buffering it. */
  readonly bodyMode?: "buffer" | "stream";
  /** Stream mode: copies a chunk out of uWS's receive buffer (reused after each callback); default a fresh Buffer. */
  readonly bodyChunk?: (chunk: ArrayBuffer) => Buffer;
}

export interface ServerOptions {
  readonly corsOrigins: readonly string[];
  readonly corsHeaders?: string;
  readonly onError?: (err: unknown, req: Request) => void;
  readonly defaultBodyLimit?: number;
}

const STATUS_TEXT: Record<number, string> = {
  200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 206: "Partial Content", 302: "Found", 304: "Not Modified",
  400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 409: "Conflict",
  412: "Precondition Failed", 413: "Payload Too Large", 416: "Range Not Satisfiable", 422: "Unprocessable Entity", 423: "Locked", 426: "Upgrade Required",
  429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
};
const statusLine = (s: number) => `${s} ${STATUS_TEXT[s] ?? "Unknown"}`;

/** A body answered before it was read (refused, or not needed) is still read and discarded up to this many bytes, or
 * until the client has sent nothing for this many milliseconds. */
const DRAIN_BYTES = 8 * 1024 * 1024;
const DRAIN_IDLE_MS = 1_000;

// uWebSockets.js binds with SO_REUSEPORT unless told otherwise: a second stack started on a port another process
// serves would bind it too and the kernel would split the traffic of two stacks between their gateways without a
// word. The exclusive flag makes that bind fail, so the error names the port (and the caller its variable). The
// typings lack the (host, port, options, cb) overload the native module takes.
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;
type ListenWithOptions = (host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void) => TemplatedApp;
function listenExclusive(app: TemplatedApp, host: string, port: number, cb: (socket: us_listen_socket | false) => void): void {
  (app.listen as unknown as ListenWithOptions).call(app, host, port, LIBUS_LISTEN_EXCLUSIVE_PORT, cb);
}

export class HttpServer {
  readonly app: TemplatedApp;
  private socket: us_listen_socket | null = null;
  private readonly uws: Uws;
  port = 0;

  constructor(private readonly opts: ServerOptions) {
    this.uws = loadUws();
    this.app = this.uws.App();
  }

  route(method: "get" | "post" | "put" | "del" | "patch" | "head" | "options" | "any", pattern: string, handler: Handler, ro: RouteOptions = {}): this {
    this.app[method](pattern, (res, req) => this.dispatch(res, req, pattern, handler, ro));
    return this;
  }

  /** Unknown routes and preflights; call after registering routes. */
  fallback(notFound: Handler = (req) => errorReply(404, `no route for ${req.method} ${req.path}`)): this {
    this.app.options("/*", (res, req) => {
      const origin = req.getHeader("origin");
      const allowed = this.allowedOrigin(origin);
      res.cork(() => {
        res.writeStatus(allowed ? "204 No Content" : "403 Forbidden");
        if (allowed) {
          res.writeHeader("access-control-allow-origin", allowed);
          res.writeHeader("vary", "origin");
          res.writeHeader("access-control-allow-methods", "GET, POST, PUT, DELETE, OPTIONS");
          res.writeHeader("access-control-allow-headers", this.opts.corsHeaders ?? "content-type, authorization");
          res.writeHeader("access-control-max-age", "600");
        }
        res.end();
      });
    });
    // Whatever body an unknown route carries is never read: it is drained (up to DRAIN_BYTES) and the 404 follows,
    // so a mistyped path answers "no route", not a body-limit error.
    this.app.any("/*", (res, req) => this.dispatch(res, req, "/*", notFound, { bodyMode: "stream", bodyLimit: Number.MAX_SAFE_INTEGER }));
    return this;
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      listenExclusive(this.app, host, port, (socket) => {
        if (!socket) return reject(new Error(`cannot listen on ${host}:${port} (in use by another process?)`));
        this.socket = socket;
        this.port = this.uws.us_socket_local_port(socket);
        resolve(this.port);
      });
    });
  }

  close(): void {
    if (this.socket) this.uws.us_listen_socket_close(this.socket);
    this.socket = null;
  }

  private allowedOrigin(origin: string): string | undefined {
    if (!origin) return undefined;
    return this.opts.corsOrigins.includes(origin) || this.opts.corsOrigins.includes("*") ? origin : undefined;
  }

  private dispatch(res: HttpResponse, req: HttpRequest, pattern: string, handler: Handler, ro: RouteOptions): void {
    let aborted = false;
    // A reply still streaming when the client leaves is destroyed, so its source (a file, an upstream) is released.
    let replyStream: Readable | undefined;
    res.onAborted(() => {
      aborted = true;
      bodyStream?.destroy(new Error("client disconnected"));
      replyStream?.destroy();
    });
    const method = req.getCaseSensitiveMethod?.() ?? req.getMethod().toUpperCase();
    const path = req.getUrl();
    const query = req.getQuery() ?? "";
    const headers: Record<string, string> = {};
    req.forEach((k, v) => (headers[k] = v));
    const params: string[] = [];
    const nParams = (pattern.match(/:/g) ?? []).length;
    for (let i = 0; i < nParams; i++) params.push(req.getParameter(i) ?? "");
    const remoteAddress = Buffer.from(res.getRemoteAddressAsText()).toString();
    const origin = headers["origin"];
    const limit = ro.bodyLimit ?? this.opts.defaultBodyLimit ?? 1_048_576;
    const base = { method, path, query, target: query ? `${path}?${query}` : path, headers, params, remoteAddress, aborted: () => aborted };

    const respond = (reply: Reply, closeConnection = false) => {
      if (aborted) return reply.sent?.();
      const allowed = this.allowedOrigin(origin ?? "");
      if (reply.stream) {
        replyStream = reply.stream;
        return this.streamReply(res, reply, allowed, () => aborted, (a) => (aborted = a));
      }
      res.cork(() => {
        res.writeStatus(statusLine(reply.status));
        if (allowed) {
          res.writeHeader("access-control-allow-origin", allowed);
          res.writeHeader("vary", "origin");
        }
        for (const [k, v] of Object.entries(reply.headers ?? {})) res.writeHeader(k, v);
        // HEAD: the Content-Length header written here, not passed to endWithoutBody — given a length, this uWS
        // waits for that many body bytes and breaks the keep-alive connection's next request ("socket hang up").
        if (reply.headLength !== undefined) res.writeHeader("content-length", String(reply.headLength)).endWithoutBody();
        else res.end(reply.body ?? "", closeConnection);
      });
      aborted = true;
      reply.sent?.();
    };
    // Answering while the client is still sending the body: closing a socket with unread data makes the kernel send
    // RST, and the client can lose the answer (ECONNRESET). So the rest of the body is read and discarded first —
    // until it ends, past DRAIN_BYTES, or after DRAIN_IDLE_MS without data — and only a body not read to its end
    // closes the connection (uWS's end(body, true): `Connection: close`, FIN). uWS forbids touching a response after
    // end(), so the answer waits for the drain.
    let bodyStream: Readable | undefined;
    let bodyEnded = false;
    let paused = false;
    let discarding: { bytes: number; timer: NodeJS.Timeout; finish: (complete: boolean) => void } | undefined;
    const discardThen = (answer: (complete: boolean) => void) => {
      let settled = false;
      const finish = (complete: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        answer(complete);
      };
      const timer = setTimeout(() => finish(false), DRAIN_IDLE_MS).unref();
      discarding = { bytes: 0, timer, finish };
      bodyStream?.destroy();
      if (paused && !aborted) {
        paused = false;
        res.resume();
      }
    };
    /** Takes the chunk when the body is being discarded. */
    const discarded = (chunk: ArrayBuffer, isLast: boolean): boolean => {
      if (!discarding) return false;
      discarding.bytes += chunk.byteLength;
      discarding.timer.refresh();
      if (isLast) discarding.finish(true);
      else if (discarding.bytes > DRAIN_BYTES) discarding.finish(false);
      return true;
    };
    const reply = (r: Reply) => (bodyStream && !bodyEnded ? discardThen((complete) => respond(r, !complete)) : respond(r));
    const run = (request: Request) => {
      Promise.resolve()
        .then(() => handler(request))
        .then(reply, (err) => {
          if (err instanceof HttpError) return reply(errorReply(err.status, err.message, err.extra, err.headers));
          this.opts.onError?.(err, request);
          reply(errorReply(500, "internal error"));
        });
    };

    const declared = Number(headers["content-length"] ?? "0");
    if (Number.isFinite(declared) && declared > limit) {
      // Refused by its Content-Length while the client may still be sending it (uWS has already sent `100 Continue`
      // to a client that asked for it): discard the body, then answer, always closing the connection.
      res.onData((chunk, isLast) => void discarded(chunk, isLast));
      discardThen(() => respond(errorReply(413, `body exceeds the limit of ${limit} bytes`, { limit }), true));
      return;
    }
    if (ro.bodyMode === "stream") {
      let received = 0;
      // Resume only a response we paused and that is still open: an unmatched resume() makes uWS reset the
      // keep-alive connection (every second streamed upload on a connection failed with ECONNRESET).
      bodyStream = new Readable({
        read: () => {
          if (paused && !aborted) {
            paused = false;
            res.resume();
          }
        },
      });
      // A disconnect or an oversized body destroys the stream with an error, possibly before the handler reads it
      // (a route checking credentials first): without a listener that error would be uncaught and end the process.
      // A handler that reads the stream still gets it from its iteration or pipeline.
      bodyStream.on("error", () => undefined);
      res.onData((chunk, isLast) => {
        if (isLast) bodyEnded = true;
        if (discarded(chunk, isLast)) return;
        received += chunk.byteLength;
        if (received > limit) {
          bodyStream!.destroy(new HttpError(413, `body exceeds the limit of ${limit} bytes`, { limit }));
          return;
        }
        // onData's buffer is reused by uWS after the callback: copy it.
        if (!bodyStream!.push(ro.bodyChunk ? ro.bodyChunk(chunk) : Buffer.from(chunk.slice(0))) && !isLast && !aborted) {
          paused = true;
          res.pause();
        }
        if (isLast) {
          bodyStream!.push(null);
          // Paused on an earlier chunk and the body ended within the same read: nothing will call read() again,
          // and a response written on a paused socket makes uWS reset the connection (streamed chunked uploads
          // under backpressure failed with ECONNRESET now and then). Resume what we paused.
          if (paused && !aborted) {
            paused = false;
            res.resume();
          }
        }
      });
      run({ ...base, body: Buffer.alloc(0), bodyStream });
      return;
    }
    if (!declared && !headers["transfer-encoding"]) {
      run({ ...base, body: Buffer.alloc(0) });
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    let tooLarge = false;
    res.onData((chunk, isLast) => {
      if (tooLarge) return;
      received += chunk.byteLength;
      if (received > limit) {
        tooLarge = true;
        respond(errorReply(413, `body exceeds the limit of ${limit} bytes`, { limit }));
        return;
      }
      chunks.push(Buffer.from(chunk.slice(0)));
      if (isLast) run({ ...base, body: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks) });
    });
  }

  private streamReply(res: HttpResponse, reply: Reply, allowed: string | undefined, isAborted: () => boolean, setDone: (d: boolean) => void): void {
    const stream = reply.stream!;
    const total = reply.length;
    res.cork(() => {
      res.writeStatus(statusLine(reply.status));
      if (allowed) res.writeHeader("access-control-allow-origin", allowed);
      for (const [k, v] of Object.entries(reply.headers ?? {})) res.writeHeader(k, v);
    });
    if (total === undefined) {
      // Unknown length: chunked transfer, write() with backpressure.
      stream.on("data", (chunk: Buffer) => {
        if (isAborted()) return stream.destroy();
        let ok = true;
        res.cork(() => (ok = res.write(chunk)));
        if (!ok) {
          stream.pause();
          res.onWritable(() => {
            stream.resume();
            return true;
          });
        }
      });
      stream.on("end", () => !isAborted() && res.cork(() => res.end()));
      stream.on("error", () => !isAborted() && res.close());
      return;
    }
    let pending: Buffer | undefined;
    let pendingOffset = 0;
    // Once every declared byte is sent (setDone) the source is left to end by itself rather than destroyed, so an
    // upstream response releases its keep-alive socket; a source with more bytes than it declared is destroyed.
    stream.on("data", (chunk: Buffer) => {
      if (isAborted()) return stream.destroy();
      const offset = res.getWriteOffset();
      let result: [boolean, boolean] = [true, false];
      res.cork(() => (result = res.tryEnd(chunk, total)));
      const [ok, done] = result;
      if (done) {
        setDone(true);
      } else if (!ok) {
        pending = chunk;
        pendingOffset = offset;
        stream.pause();
        res.onWritable((off) => {
          if (!pending) return true;
          let r: [boolean, boolean] = [true, false];
          res.cork(() => (r = res.tryEnd(pending!.subarray(off - pendingOffset), total)));
          if (r[1]) {
            setDone(true);
            pending = undefined;
            stream.resume();
          } else if (r[0]) {
            pending = undefined;
            stream.resume();
          }
          return r[0];
        });
      }
    });
    stream.on("error", () => !isAborted() && res.close());
    stream.on("end", () => {
      if (!isAborted() && !pending && total === 0) res.cork(() => res.end());
    });
    res.onAborted(() => stream.destroy());
  }
}

/** A percent-decoded path segment, or null when its encoding is malformed (for the caller to answer 404 or 400). */
export function decodePathParam(raw: string | undefined): string | null {
  try {
    return decodeURIComponent(raw ?? "");
  } catch {
    return null;
  }
}

/** The request's query parameters, answering 400 for a name or value that cannot be stored. */
export function queryParams(req: Request): URLSearchParams {
  const params = new URLSearchParams(req.query);
  const unsafe = findUnsafeQuery(params);
  if (unsafe) throw new HttpError(400, unsafe);
  return params;
}

/** Parses a JSON body, answering 400 for malformed JSON, a non-object, or a string that cannot be stored. */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  if (!body.length) throw new HttpError(400, "request body must be a JSON object");
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    throw new HttpError(400, "malformed JSON body");
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new HttpError(400, "request body must be a JSON object");
  const unsafe = findUnsafeText(parsed);
  if (unsafe) throw new HttpError(400, unsafe);
  return parsed as Record<string, unknown>;
}
