// The stdio package's connection to the relayer's agent transport (Streamable HTTP at /api/mcp) with the bearer
// credential of the local file. Opened on the first forwarded call, reopened when the credential file changes (a
// login in this process or another), closed after MEMORY_MCP_SSE_IDLE_MS without calls. A 401 is reported, and the
// credential file is never deleted for it.
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

export class RelayerLink {
  private open?: { client: Client; version: string; relayer: string };
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

  private async client(): Promise<Client> {
    const version = this.version();
    if (this.open && this.open.version === version) return this.open.client;
    await this.close();
    const creds = this.credentials();
    if (!creds) throw new NotSignedIn();
    const relayer = this.relayerUrl(creds);
    const transport = new StreamableHTTPClientTransport(new URL("/api/mcp", relayer), {
      requestInit: { headers: { authorization: `Bearer ${creds.delegatePrivateKey}`, "x-memory-account-id": creds.accountId } },
    });
    const client = new Client({ name: "memrelay-mcp", version: "1.0.0" });
    await client.connect(transport, { timeout: this.o.callTimeoutMs });
    this.open = { client, version, relayer };
    this.o.debug(`connected to ${relayer} as account ${creds.accountId}`);
    return client;
  }

  /** Forwards one tool call; every failure becomes a tool error the agent can act on. */
  async call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    clearTimeout(this.idle);
    try {
      const client = await this.client();
      return (await client.callTool({ name, arguments: args }, undefined, { timeout: this.o.callTimeoutMs })) as CallToolResult;
    } catch (err) {
      await this.close();
      if (err instanceof NotSignedIn) return errorResult(`Not signed in to memrelay: call ${TOOL.login}, open the URL it returns and approve this agent with your wallet, then call this tool again (no restart needed).`);
      const message = err instanceof Error ? err.message : String(err);
      this.o.debug(`call ${name} failed: ${message}`);
      if (/\b401\b|unauthori[sz]ed|refused this credential/i.test(message)) {
        return errorResult(`The memory service refused this agent's credential (401): its key may have been revoked. Call ${TOOL.login} to sign in again; the credential file was kept.`);
      }
      return errorResult(`The memory service at ${this.relayerUrl()} could not complete the call: ${message}`);
    } finally {
      this.idle = setTimeout(() => void this.close(), this.o.idleMs);
      this.idle.unref();
    }
  }

  async close(): Promise<void> {
    const open = this.open;
    this.open = undefined;
    if (open) await open.client.close().catch(() => undefined);
  }
}
