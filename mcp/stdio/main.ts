// `memrelay-mcp`: the stdio tool package (spec/relayer.md, Tool package command line). Serves MCP on stdin/stdout
// (stdout carries only protocol messages; diagnostics go to stderr), or signs in / out and exits.
import { rmSync } from "node:fs";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { credentialsPath, readCredentials } from "../../cli/credentials.ts";
import { USAGE, UsageError, parseOptions, PRESETS } from "./options.ts";
import { createStdioServer } from "./server.ts";
import { startLogin } from "./login.ts";

export async function main(argv: readonly string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  let o;
  try {
    o = parseOptions(argv, env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`memrelay-mcp: ${err.message}\n`);
    return 2;
  }
  const path = credentialsPath(env);
  const log = (msg: string) => o.debug && process.stderr.write(`[memrelay-mcp] ${msg}\n`);
  switch (o.mode) {
    case "help":
      process.stdout.write(USAGE + "\n");
      return 0;
    case "logout":
      rmSync(path, { force: true });
      process.stderr.write(`Signed out: ${path} deleted (the key stays on the account until revoked in the dashboard).\n`);
      return 0;
    case "login": {
      const relayerUrl = o.relayerUrl ?? readCredentials(path)?.relayerUrl ?? PRESETS.prod.relayer;
      const webUrl = o.webUrl ?? (relayerUrl === PRESETS.local.relayer ? PRESETS.local.web : PRESETS.prod.web);
      const request = await startLogin({ webUrl, relayerUrl, label: o.label, credentialsPath: path });
      process.stderr.write(`Open this URL to approve this machine's key (valid 5 minutes):\n${request.url}\n`);
      try {
        const c = await request.completed;
        process.stderr.write(`Signed in: account ${c.accountId}; credentials saved to ${path}\n`);
        return 0;
      } catch (err) {
        process.stderr.write(`Login failed: ${(err as Error).message}\n`);
        return 1;
      }
    }
    case "serve": {
      const { server, link } = createStdioServer({ ...o, credentialsPath: path }, log);
      const transport = new StdioServerTransport();
      const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
      await server.connect(transport);
      const drained = answeredAll(transport);
      log(readCredentials(path) ? `serving; relayer ${link.relayerUrl()}` : "serving without credentials: memory_login signs in");
      // A host that closes stdin after its last request still gets every answer before the server closes.
      process.stdin.once("end", () => void drained().then(() => server.close()));
      await closed;
      await link.close();
      return 0;
    }
  }
}

/** Tracks the requests the transport received and the answers it sent; resolves once every request is answered. */
function answeredAll(transport: StdioServerTransport): () => Promise<void> {
  const open = new Set<string | number>();
  let wake: () => void = () => undefined;
  const receive = transport.onmessage;
  transport.onmessage = (message: JSONRPCMessage) => {
    if ("id" in message && "method" in message) open.add(message.id);
    receive?.(message);
  };
  const send = transport.send.bind(transport);
  transport.send = async (message: JSONRPCMessage) => {
    await send(message);
    if ("id" in message && !("method" in message)) {
      open.delete(message.id as string | number);
      if (!open.size) wake();
    }
  };
  return () => (open.size ? new Promise<void>((resolve) => (wake = resolve)) : Promise.resolve());
}
