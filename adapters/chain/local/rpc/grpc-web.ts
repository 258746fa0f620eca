// gRPC-web over HTTP/1.1 (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-WEB.md), unary calls only: what
// `@mysten/sui`'s SuiGrpcClient speaks through its fetch transport. A request is POST /<package>.<Service>/<Method>
// with content-type application/grpc-web(+proto) (binary frames) or application/grpc-web-text(+proto) (the same,
// base64); its body is one 5-byte framed message. The answer is one data frame and a trailer frame carrying
// grpc-status and grpc-message; a failure is a trailers-only answer (the status in the HTTP headers). Messages are
// encoded and decoded by the SDK's own generated protobuf types (the services' method descriptors).
import type { IncomingMessage, ServerResponse } from "node:http";

/** gRPC status codes used here (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
export const GrpcCode = { OK: 0, INVALID_ARGUMENT: 3, NOT_FOUND: 5, UNIMPLEMENTED: 12, INTERNAL: 13 } as const;

/** A failed call: answered with this status and message. */
export class GrpcStatusError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/** A protobuf-ts message type, as the SDK's generated descriptors provide it. */
interface ProtoType<T> {
  fromBinary(bytes: Uint8Array): T;
  toBinary(message: T): Uint8Array;
}

/** One served unary method: its path, its request and answer types, and its implementation. */
export interface GrpcMethod {
  readonly path: string;
  readonly input: ProtoType<unknown>;
  readonly output: ProtoType<unknown>;
  readonly call: (input: unknown) => Promise<unknown>;
}

/** A protobuf-ts service descriptor, e.g. `GrpcTypes.LedgerService` of `@mysten/sui/grpc`. */
interface ServiceDescriptor {
  readonly typeName: string;
  readonly methods: readonly { readonly name: string; readonly I: unknown; readonly O: unknown; readonly serverStreaming: boolean }[];
}

/**
 * `service`'s unary method `name`, answered by `call`; its messages are encoded by the descriptor's types, `I` and
 * `O` name them for the implementation.
 */
export function unary<I, O>(service: ServiceDescriptor, name: string, call: (input: I) => Promise<O>): GrpcMethod {
  const method = service.methods.find((m) => m.name === name && !m.serverStreaming);
  if (!method) throw new Error(`${service.typeName} has no unary method ${name}`);
  return { path: `/${service.typeName}/${name}`, input: method.I as ProtoType<unknown>, output: method.O as ProtoType<unknown>, call: call as (input: unknown) => Promise<unknown> };
}

const FRAME_DATA = 0x00;
const FRAME_TRAILER = 0x80;

/** Headers a browser client sends and reads; CORS must allow them. */
export const GRPC_WEB_CORS = {
  allowHeaders: "x-grpc-web, x-user-agent, grpc-timeout, x-sui-client-protocol-version",
  exposeHeaders: "grpc-status, grpc-message",
} as const;

function frame(kind: number, payload: Uint8Array): Buffer {
  const header = Buffer.alloc(5);
  header[0] = kind;
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

/** The grpc-web content type of a request, or null when it is not one: text (base64) or binary. */
export function grpcWebFormat(contentType: string | undefined): "binary" | "text" | null {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "application/grpc-web" || type === "application/grpc-web+proto") return "binary";
  if (type === "application/grpc-web-text" || type === "application/grpc-web-text+proto") return "text";
  return null;
}

/** The one message of a request body, unframed. */
function messageOf(body: Buffer): Uint8Array {
  if (body.length < 5) throw new GrpcStatusError(GrpcCode.INVALID_ARGUMENT, "request body is not a grpc-web message frame");
  if (body[0] !== FRAME_DATA) throw new GrpcStatusError(GrpcCode.UNIMPLEMENTED, "compressed or non-data request frames are not supported");
  const length = body.readUInt32BE(1);
  if (body.length !== 5 + length) throw new GrpcStatusError(GrpcCode.INVALID_ARGUMENT, "request body must be exactly one message frame");
  return new Uint8Array(body.subarray(5));
}

/**
 * An HTTP route answering gRPC-web requests (any request whose content type is grpc-web) with `methods`; other
 * requests are left to the caller (false). Unknown methods answer UNIMPLEMENTED.
 */
export function grpcWebRoute(methods: readonly GrpcMethod[], opts: { maxBodyBytes: number; cors: Record<string, string> }) {
  const byPath = new Map(methods.map((m) => [m.path, m]));
  const cors = { ...opts.cors, "access-control-expose-headers": GRPC_WEB_CORS.exposeHeaders };

  function answer(res: ServerResponse, format: "binary" | "text", body: Buffer | null, code: number, message: string): void {
    const contentType = format === "text" ? "application/grpc-web-text+proto" : "application/grpc-web+proto";
    const status = { "grpc-status": String(code), "grpc-message": encodeURIComponent(message) };
    if (!body) {
      // Trailers-only: the status travels in the HTTP headers.
      res.writeHead(200, { "content-type": contentType, "content-length": 0, ...status, ...cors });
      return void res.end();
    }
    const trailer = Buffer.from(Object.entries(status).map(([k, v]) => `${k}:${v}\r\n`).join(""), "ascii");
    const raw = Buffer.concat([frame(FRAME_DATA, body), frame(FRAME_TRAILER, trailer)]);
    const out = format === "text" ? Buffer.from(raw.toString("base64"), "ascii") : raw;
    res.writeHead(200, { "content-type": contentType, "content-length": out.length, ...cors });
    res.end(out);
  }

  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const format = req.method === "POST" ? grpcWebFormat(req.headers["content-type"]) : null;
    if (!format) return false;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > opts.maxBodyBytes) {
        answer(res, format, null, GrpcCode.INVALID_ARGUMENT, `request larger than ${opts.maxBodyBytes} bytes`);
        return true;
      }
      chunks.push(c as Buffer);
    }
    const path = (req.url ?? "").split("?")[0]!;
    const method = byPath.get(path);
    if (!method) {
      answer(res, format, null, GrpcCode.UNIMPLEMENTED, `method ${path.slice(1) || "(none)"} is not implemented by this ledger`);
      return true;
    }
    try {
      const raw = Buffer.concat(chunks);
      const message = messageOf(format === "text" ? Buffer.from(raw.toString("ascii"), "base64") : raw);
      let input: unknown;
      try {
        input = method.input.fromBinary(message);
      } catch {
        throw new GrpcStatusError(GrpcCode.INVALID_ARGUMENT, `request is not a ${path.slice(1)} request message`);
      }
      const output = await method.call(input);
      answer(res, format, Buffer.from(method.output.toBinary(output)), GrpcCode.OK, "");
    } catch (err) {
      if (err instanceof GrpcStatusError) answer(res, format, null, err.code, err.message);
      else answer(res, format, null, GrpcCode.INTERNAL, "internal error");
    }
    return true;
  };
}
