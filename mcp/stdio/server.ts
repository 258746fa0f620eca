// The stdio tool server an agent host starts (`memrelay-mcp`): eight tools, six forwarded to the relayer with the
// session's default namespace injected, and memory_login / memory_logout handled here. It starts without a
// credential (auth-required mode): `initialize` and the tool list work, memory tools say how to sign in, and once the
// dashboard approves the key the next call uses it.
import { rmSync } from "node:fs";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { LIMITS } from "../../schemas/relayer/http.ts";
import { TOOL, TOOL_DESCRIPTIONS, TOOL_INPUTS } from "../../schemas/mcp-tools.ts";
import { RelayerLink } from "./relayer-link.ts";
import { startLogin, type LoginRequest } from "./login.ts";
import { PRESETS, type PackageOptions } from "./options.ts";

const text = (t: string, isError = false): CallToolResult => ({ content: [{ type: "text", text: t }], ...(isError ? { isError: true } : {}) });

/** Here a namespace may be empty: an empty one is replaced by the default before forwarding (spec precedence). */
const localNamespace = z.string().max(LIMITS.namespaceBytes);

export function createStdioServer(o: PackageOptions & { credentialsPath: string }, log: (msg: string) => void): { server: McpServer; link: RelayerLink } {
  const link = new RelayerLink({ credentialsPath: o.credentialsPath, relayerUrl: o.relayerUrl, idleMs: o.idleMs, callTimeoutMs: o.callTimeoutMs, debug: log });
  const server = new McpServer({ name: "memrelay-mcp", version: "1.0.0" }, { capabilities: { tools: {} } });
  let login: LoginRequest | undefined;

  /** (1) a non-empty namespace in the call, (2) --namespace, (3) MEMORY_NAMESPACE, (4) none: the relayer's default. */
  const withNamespace = (args: Record<string, unknown>) => {
    const given = typeof args.namespace === "string" && args.namespace !== "" ? args.namespace : o.namespace;
    const { namespace: _dropped, ...rest } = args;
    return given ? { ...rest, namespace: given } : rest;
  };

  const forward = (name: string, shape: Record<string, z.ZodTypeAny>) =>
    server.registerTool(name, { description: TOOL_DESCRIPTIONS[name], inputSchema: shape as never }, (async (args: Record<string, unknown>) => link.call(name, withNamespace(args))) as never);

  forward(TOOL.remember, { ...TOOL_INPUTS[TOOL.remember], namespace: localNamespace.optional() });
  forward(TOOL.rememberBulk, { ...TOOL_INPUTS[TOOL.rememberBulk], namespace: localNamespace.optional() });
  forward(TOOL.recall, { ...TOOL_INPUTS[TOOL.recall], namespace: localNamespace.optional() });
  forward(TOOL.analyze, { ...TOOL_INPUTS[TOOL.analyze], namespace: localNamespace.optional() });
  forward(TOOL.restore, { ...TOOL_INPUTS[TOOL.restore], namespace: localNamespace.describe("Namespace to re-index (empty: the session's default).") });
  forward(TOOL.health, TOOL_INPUTS[TOOL.health]);

  server.registerTool(TOOL.login, { description: TOOL_DESCRIPTIONS[TOOL.login], inputSchema: {} }, async () => {
    login?.cancel();
    const relayerUrl = link.relayerUrl();
    const webUrl = o.webUrl ?? (relayerUrl === PRESETS.local.relayer ? PRESETS.local.web : PRESETS.prod.web);
    const request = await startLogin({ webUrl, relayerUrl, label: o.label, credentialsPath: o.credentialsPath });
    login = request;
    request.completed.then(
      (c) => log(`signed in: account ${c.accountId}, key "${c.label}"`),
      (err) => log(`login ended: ${(err as Error).message}`),
    );
    return text(
      `Open this URL in a browser and approve the new key with your wallet (valid 5 minutes, one use):\n${request.url}\n` +
        `When the page says it is done, memory tools work right away. Call ${TOOL.login} again for a fresh URL.`,
    );
  });

  server.registerTool(TOOL.logout, { description: TOOL_DESCRIPTIONS[TOOL.logout], inputSchema: {} }, async () => {
    rmSync(o.credentialsPath, { force: true });
    await link.close();
    return text(`Signed out: ${o.credentialsPath} was deleted. The key stays on the account until revoked in the dashboard.`);
  });

  return { server, link };
}
