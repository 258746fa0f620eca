// Reading a node:http request body with a size bound (raw, or parsed as JSON), for the small node:http servers beside the uWS gateways (the
// MCP sidecar, the stdio package's login callback, the dashboard): the declared length is checked first, then what
// arrives; past the bound the read stops and the stream is released.
import type { IncomingMessage } from "node:http";

export class BodyTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`body exceeds ${maxBytes} bytes`);
  }
}

export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  if (Number(req.headers["content-length"] ?? 0) > maxBytes) throw new BodyTooLarge(maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new BodyTooLarge(maxBytes);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
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
