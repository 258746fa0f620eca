// Reading a node:http request body with a size bound (raw, or parsed as JSON), for the small node:http servers beside the uWS gateways (the
// MCP sidecar, the stdio package's login callback, the dashboard): the declared length is checked first, then what
// arrives; past the bound the read stops and the stream is released.
import type { IncomingMessage } from "node:http";

export class BodyTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`body exceeds ${maxBytes} bytes`);
  }
}

/** Read with stream events rather than an async iterator: this runs once per request of the MCP sidecar. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  if (Number(req.headers["content-length"] ?? 0) > maxBytes) return Promise.reject(new BodyTooLarge(maxBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (err?: Error) => {
      req.off("data", onData).off("end", onEnd).off("error", settle).off("close", onClose);
      if (err) {
        req.destroy();
        reject(err);
      } else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) settle(new BodyTooLarge(maxBytes));
      else chunks.push(chunk);
    };
    const onEnd = () => settle();
    const onClose = () => settle(new Error("the request closed before its body ended"));
    req.on("data", onData).on("end", onEnd).on("error", settle).on("close", onClose);
  });
}

export class NotJson extends Error {
  constructor() {
    super("the body is not JSON");
  }
}

/** The body parsed as JSON: BodyTooLarge past `maxBytes`, NotJson when it does not parse. */
export async function readJson(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const body = await readBody(req, maxBytes);
  try {
    return JSON.parse(body.toString("utf8"));
  } catch {
    throw new NotJson();
  }
}
