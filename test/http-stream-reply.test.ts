// A reply streamed from an upstream HTTP response of known length (gateway/http.ts streamReply): once every byte is
// sent, the upstream response is left to end rather than destroyed, so its keep-alive socket serves the next call
// (found by hand: every forwarded call opened a new connection); a source longer than it declared is cut off.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, request, Agent, type IncomingMessage, type Server } from "node:http";
import { HttpServer } from "../gateway/http.ts";

const BODY = Buffer.alloc(256 * 1024, 7);
let upstream: Server;
let upstreamPort: number;
let connections = 0;
let server: HttpServer;
let port: number;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

const fetchUpstream = (path: string) =>
  new Promise<IncomingMessage>((resolve, reject) => request({ host: "127.0.0.1", port: upstreamPort, path, agent }, resolve).on("error", reject).end());

beforeAll(async () => {
  upstream = createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": BODY.length });
    res.end(BODY);
  });
  upstream.on("connection", () => connections++);
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  upstreamPort = (upstream.address() as { port: number }).port;
  server = new HttpServer({ corsOrigins: [] });
  server
    .route("get", "/proxied", async () => {
      const up = await fetchUpstream("/");
      return { status: 200, headers: { "content-type": "application/octet-stream" }, stream: up, length: Number(up.headers["content-length"]) };
    })
    // declares fewer bytes than the source holds
    .route("get", "/short", async () => ({ status: 200, headers: {}, stream: await fetchUpstream("/"), length: 1000 }))
    .fallback();
  port = await server.listen("127.0.0.1", 0);
});

afterAll(async () => {
  server?.close();
  agent.destroy();
  await new Promise((r) => upstream.close(r));
});

describe("streamed replies of known length", () => {
  it("send every byte and give the upstream's keep-alive socket back for the next call", async () => {
    connections = 0;
    for (let i = 0; i < 5; i++) {
      const r = await fetch(`http://127.0.0.1:${port}/proxied`);
      expect(Buffer.from(await r.arrayBuffer()).equals(BODY)).toBe(true);
    }
    expect(connections).toBe(1);
  });

  it("stop at the declared length when the source holds more", async () => {
    const r = await fetch(`http://127.0.0.1:${port}/short`);
    expect((await r.arrayBuffer()).byteLength).toBe(1000);
  });
});
