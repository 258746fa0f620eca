// Black-box tests of the HTTP layer's body limit (gateway/http.ts) over raw TCP: a body refused by its declared
// Content-Length is answered with a complete 413 and `Connection: close` once the client has sent it, never with a
// reset that would destroy the answer (ECONNRESET), and the server keeps serving fresh connections; a client leaving
// in the middle of a streamed body its handler has not started reading does not take the process down.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import net from "node:net";
import { HttpServer, json } from "../gateway/http.ts";

const LIMIT = 1024;
let server: HttpServer;
let port: number;
/** What the late-reading stream route saw when it finally read its body. */
const lateReads: string[] = [];

beforeAll(async () => {
  server = new HttpServer({ corsOrigins: [] });
  server
    .route("post", "/echo", (req) => json(200, { received: req.body.length }), { bodyLimit: LIMIT })
    // A streamed route that does other work (say, a credential check) before it reads the body.
    .route("post", "/late", async (req) => {
      await new Promise((r) => setTimeout(r, 300));
      let n = 0;
      try {
        for await (const c of req.bodyStream!) n += (c as Buffer).length;
        lateReads.push(`read ${n}`);
      } catch (err) {
        lateReads.push(`error: ${(err as Error).message}`);
      }
      return json(200, { received: n });
    }, { bodyMode: "stream", bodyLimit: 8 * 1024 * 1024 })
    .fallback();
  port = await server.listen("127.0.0.1", 0);
});

afterAll(() => server?.close());

interface RawExchange {
  status: number;
  headers: Record<string, string>;
  body: string;
  error?: NodeJS.ErrnoException;
}

/** Sends head and body on a fresh connection, writing all of the body, and reads until the server closes. */
function exchange(head: string, body: Buffer): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let error: NodeJS.ErrnoException | undefined;
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no close within 10 s; got ${JSON.stringify(Buffer.concat(chunks).toString())}`));
    }, 10_000);
    sock.on("connect", () => {
      sock.write(head);
      sock.write(body);
    });
    sock.on("data", (d: Buffer) => chunks.push(d));
    sock.on("error", (e: NodeJS.ErrnoException) => (error = e));
    sock.on("close", () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks).toString("latin1");
      const split = raw.indexOf("\r\n\r\n");
      const lines = (split >= 0 ? raw.slice(0, split) : raw).split("\r\n");
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) {
        const i = l.indexOf(":");
        if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      resolve({ status: Number(lines[0]?.split(" ")[1] ?? 0), headers, body: split >= 0 ? raw.slice(split + 4) : "", error });
    });
  });
}

describe("a body over the route's limit", () => {
  it.each([
    ["a few KiB", 8 * 1024],
    ["4 MiB", 4 * 1024 * 1024],
  ])("declared by Content-Length and fully sent (%s) gets the whole 413 with Connection: close, no reset", async (_, size) => {
    for (let i = 0; i < 3; i++) {
      const r = await exchange(`POST /echo HTTP/1.1\r\nHost: test\r\nContent-Type: application/octet-stream\r\nContent-Length: ${size}\r\n\r\n`, Buffer.alloc(size, 0x61));
      expect(r.error?.code).toBeUndefined();
      expect(r.status).toBe(413);
      expect(r.headers["connection"]?.toLowerCase()).toBe("close");
      expect(Number(r.headers["content-length"])).toBe(Buffer.byteLength(r.body));
      const j = JSON.parse(r.body);
      expect(j.error).toMatch(new RegExp(`limit of ${LIMIT} bytes`));
      expect(j.limit).toBe(LIMIT);
    }
  }, 60_000);

  it("declared but not all sent (the client stalls) still gets the whole 413 once the client goes quiet", async () => {
    const r = await exchange(`POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: ${64 * 1024 * 1024}\r\n\r\n`, Buffer.alloc(4096, 0x61));
    expect(r.error?.code).toBeUndefined();
    expect(r.status).toBe(413);
    expect(r.headers["connection"]?.toLowerCase()).toBe("close");
    expect(JSON.parse(r.body)).toEqual({ error: `body exceeds the limit of ${LIMIT} bytes`, limit: LIMIT });
  });

  it("leaves the server serving: a normal request on a fresh connection still works", async () => {
    const body = Buffer.from("x".repeat(LIMIT));
    const r = await exchange(`POST /echo HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n`, body);
    expect(r.error?.code).toBeUndefined();
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ received: LIMIT });
  });
});

describe("a streamed body the handler has not started reading", () => {
  it("survives the client disconnecting mid-body: the handler sees the error when it reads, the process keeps serving", async () => {
    await new Promise<void>((resolve) => {
      const sock = net.connect(port, "127.0.0.1", () => {
        sock.write(`POST /late HTTP/1.1\r\nHost: test\r\nContent-Length: ${1024 * 1024}\r\n\r\n`);
        // Less than the stream's high-water mark: the socket is not paused, so uWS sees the disconnect at once.
        sock.write(Buffer.alloc(4 * 1024, 0x61), () => setTimeout(() => {
          sock.destroy();
          resolve();
        }, 50));
      });
      sock.on("error", () => undefined);
    });
    await new Promise((r) => setTimeout(r, 600));
    expect(lateReads).toEqual(["error: client disconnected"]);
    const body = Buffer.from("y".repeat(100));
    const r = await exchange(`POST /late HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n`, body);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ received: 100 });
  });
});

describe("an unknown route that carries a body", () => {
  it.each([
    ["a small JSON body", Buffer.from(JSON.stringify({ text: "hello" }))],
    ["a 2 MiB body", Buffer.alloc(2 * 1024 * 1024, 0x61)],
  ])("answers 404 no route, not 413 (%s), and the connection stays usable", async (_, body) => {
    const r = await exchange(`POST /api/nope HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body);
    expect(r.error?.code).toBeUndefined();
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body)).toEqual({ error: "no route for POST /api/nope" });
  });

  it("answers 404 to a chunked body too", async () => {
    const r = await exchange(`PUT /nowhere HTTP/1.1\r\nHost: test\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n`, Buffer.from("5\r\nhello\r\n0\r\n\r\n"));
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body).error).toBe("no route for PUT /nowhere");
  });
});
