// The stdio package's connection to the relayer's agent transport (Streamable HTTP at /api/mcp) with the bearer
// credential of the local file. Opened on the first forwarded call, reopened when the credential file changes (a
// login in this process or another), closed after MEMORY_MCP_SSE_IDLE_MS counted from the last call to finish with
// none running: a connection is never closed under a running call (a failed call retires it, and it closes once the
// calls still on it end). A 401 is reported, and the credential file is never deleted for it.
import { statSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { readCredentials, type Credentials } from "../../cli/credentials.ts";
import { PRESETS } from "./options.ts";
import { TOOL } from "../../schemas/mcp-tools.ts";

export class NotSignedIn extends Error {}

export interface LinkOptions {
  readonly credentialsPath: string;
  /** --relayer / MEMORY_SERVER_URL / a preset: wins over the file's relayer, for this process only. */
  readonly relayerUrl?: string;
  readonly idleMs: number;
  readonly callTimeoutMs: number;
  readonly debug: (msg: string) => void;
}

const errorResult = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: true });

/** One MCP session with the relayer, and the calls running on it: it is closed only when none is. */
interface Connection {
  readonly client: Client;
  readonly version: string;
  calls: number;
  /** No new call goes here (it failed, or the credential changed); closed once its last call ends. */
  retired: boolean;
}

export class RelayerLink {
  private current?: { readonly version: string; readonly connection: Promise<Connection> };
  /** Calls running on any connection: the idle time counts only while this is zero. */
  private running = 0;
  private idle?: NodeJS.Timeout;

  constructor(private readonly o: LinkOptions) {}

  /** Where calls go: the flag's relayer, else the credential file's, else the prod preset. */
  relayerUrl(creds = this.credentials()): string {
    return this.o.relayerUrl ?? creds?.relayerUrl ?? PRESETS.prod.relayer;
  }

  credentials(): Credentials | undefined {
    try {
      return readCredentials(this.o.credentialsPath);
    } catch {
      return undefined;
    }
  }

  /** The file's identity (changes on every login or logout), so a new credential is picked up without a restart. */
  private version(): string {
    try {
      const s = statSync(this.o.credentialsPath);
      return `${s.mtimeMs}:${s.size}`;
    } catch {
      return "none";
    }
  }

  /** The connection for the credential file as it is now; calls arriving together share one connect. */
  private connection(): Promise<Connection> {
    const version = this.version();
    if (this.current?.version === version) return this.current.connection;
    this.retireCurrent();
    const connection = this.connect(version);
    this.current = { version, connection };
    connection.catch(() => {
      if (this.current?.connection === connection) this.current = undefined; // the next call tries again
    });
    return connection;
  }

  private async connect(version: string): Promise<Connection> {
    const creds = this.credentials();
    if (!creds) throw new NotSignedIn();
    const relayer = this.relayerUrl(creds);
    const transport = new StreamableHTTPClientTransport(new URL("/api/mcp", relayer), {
      requestInit: { headers: { authorization: `Bearer ${creds.delegatePrivateKey}`, "x-memory-account-id": creds.accountId } },
    });
    const client = new Client({ name: "memrelay-mcp", version: "1.0.0" });
    await client.connect(transport, { timeout: this.o.callTimeoutMs });
    this.o.debug(`connected to ${relayer} as account ${creds.accountId}`);
    return { client, version, calls: 0, retired: false };
  }

  /** Stops new calls on the current connection; it closes when its running calls have ended. */
  private retireCurrent(): void {
    const current = this.current;
    this.current = undefined;
    void current?.connection.then((c) => {
      c.retired = true;
      if (!c.calls) void c.client.close().catch(() => undefined);
    }, () => undefined);
  }

  /** Forwards one tool call; every failure becomes a tool error the agent can act on. */
  async call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    clearTimeout(this.idle);
    this.running++;
    let used: Connection | undefined;
    try {
      const pending = this.connection();
      used = await pending;
      used.calls++;
      try {
        return (await used.client.callTool({ name, arguments: args }, undefined, { timeout: this.o.callTimeoutMs })) as CallToolResult;
      } catch (err) {
        // this connection may be broken: the next call opens a new one (calls still running on it finish first)
        if (this.current?.connection === pending) this.retireCurrent();
        throw err;
      } finally {
        used.calls--;
      }
    } catch (err) {
      if (err instanceof NotSignedIn) return errorResult(`Not signed in to memrelay: call ${TOOL.login}, open the URL it returns and approve this agent with your wallet, then call this tool again (no restart needed).`);
      const message = err instanceof Error ? err.message : String(err);
      this.o.debug(`call ${name} failed: ${message}`);
      if (/\b401\b|unauthori[sz]ed|refused this credential/i.test(message)) {
        return errorResult(`The memory service refused this agent's credential (401): its key may have been revoked. Call ${TOOL.login} to sign in again; the credential file was kept.`);
      }
      return errorResult(`The memory service at ${this.relayerUrl()} could not complete the call: ${message}`);
    } finally {
      if (used?.retired && !used.calls) void used.client.close().catch(() => undefined);
      if (!--this.running) {
        this.idle = setTimeout(() => void this.close(), this.o.idleMs);
        this.idle.unref();
      }
    }
  }

  /** Closes the connection now (idle, sign-out, shutdown). */
  async close(): Promise<void> {
    clearTimeout(this.idle);
    const current = this.current;
    this.current = undefined;
    if (current) await current.connection.then((c) => c.client.close(), () => undefined).catch(() => undefined);
  }
}
