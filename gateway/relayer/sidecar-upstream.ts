// The relayer's connections to the MCP sidecar: one undici pool per sidecar origin (the sidecar's port may be known
// only once it started, and a restarted sidecar may listen elsewhere), kept alive across requests. A JSON answer is
// read whole, so its connection goes back to the pool at once; an event stream is handed on as it comes.
import { Pool, type Dispatcher } from "undici";
import type { Readable } from "node:stream";

/** What the sidecar answered: a whole body, or an event stream still open. */
export interface SidecarAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body?: Buffer;
  readonly stream?: Readable;
}

/** Open event streams hold a connection each (node:http's agent allowed as many). */
const MAX_CONNECTIONS = 256;

export class SidecarUpstream {
  private pool?: { origin: string; pool: Pool };

  private poolFor(origin: string): Pool {
    if (this.pool?.origin !== origin) {
      void this.pool?.pool.close().catch(() => undefined);
      // No timeouts: a tool call may take as long as its remember wait, and event streams stay open (as before).
      this.pool = { origin, pool: new Pool(origin, { connections: MAX_CONNECTIONS, headersTimeout: 0, bodyTimeout: 0 }) };
    }
    return this.pool.pool;
  }

  async send(url: URL, method: string, headers: Record<string, string>, body: Buffer): Promise<SidecarAnswer> {
    const r = await this.poolFor(url.origin).request({ path: url.pathname + url.search, method: method.toUpperCase() as Dispatcher.HttpMethod, headers, body: body.length ? body : null });
    if (String(r.headers["content-type"] ?? "").startsWith("text/event-stream")) return { status: r.statusCode, headers: r.headers, stream: r.body };
    return { status: r.statusCode, headers: r.headers, body: Buffer.from(await r.body.arrayBuffer()) };
  }
}
