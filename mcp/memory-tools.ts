// The six relayer tools on an MCP server, each a signed call to the relayer's own routes with the session's delegate
// key (client/memrelay-client.ts) — or, for memory_recall in a sidecar holding the relayer's ports, the route's own
// recall in process (sidecar/local-recall.ts): the same commands, encryption, blob and index paths as any client, no
// second implementation. Results are short texts an agent can read; a refused credential is reported, never retried.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { RelayerError, type MemrelayClient, type RecallResponse } from "../client/memrelay-client.ts";
import { TOOL, TOOL_DESCRIPTIONS, TOOL_INPUTS, clampRestoreLimit } from "../schemas/mcp-tools.ts";

export interface ToolSession {
  readonly client: MemrelayClient;
  /** memory_recall: the client's signed POST /api/recall, or the same recall run in this process (sidecar/local-recall.ts). */
  readonly recall: (query: string, opts: { limit?: number; namespace?: string }) => Promise<RecallResponse>;
  /** The relayer's base URL, for the unsigned health route. */
  readonly relayerUrl: string;
  /** Called when the relayer refuses the credential (401): the session ends. */
  readonly onRefused: () => void;
  /** Longest wait for a remember job to store its memory. */
  readonly rememberTimeoutMs: number;
}

const text = (t: string, isError = false): CallToolResult => ({ content: [{ type: "text", text: t }], ...(isError ? { isError: true } : {}) });
const ns = (namespace: string | undefined) => (namespace ? { namespace } : {});
const where = (namespace: string | undefined) => `namespace "${namespace ?? "default"}"`;

/** Runs a tool body; relayer refusals become readable tool errors (the JSON-RPC call itself succeeds). */
function guarded<A>(session: ToolSession, body: (args: A) => Promise<CallToolResult>) {
  return async (args: A): Promise<CallToolResult> => {
    try {
      return await body(args);
    } catch (err) {
      if (err instanceof RelayerError) {
        if (err.status === 401) {
          session.onRefused();
          return text("The memory service refused this credential (401): the delegate key is unknown or was removed from the account. Sign in again (memory_login) or ask the user to add a key.", true);
        }
        const reason = typeof err.body === "object" && err.body && "error" in err.body ? String((err.body as { error: unknown }).error) : `status ${err.status}`;
        const retry = err.headers["retry-after"];
        return text(`The memory service answered ${err.status}: ${reason}${retry ? ` (retry after ${retry} s)` : ""}`, true);
      }
      return text(`The memory service could not be reached: ${err instanceof Error ? err.message : String(err)}`, true);
    }
  };
}

export function registerMemoryTools(server: McpServer, session: ToolSession): void {
  const { client } = session;
  const register = <S extends Record<string, unknown>>(name: string, inputSchema: S, body: (args: any) => Promise<CallToolResult>) =>
    server.registerTool(name, { description: TOOL_DESCRIPTIONS[name], inputSchema: inputSchema as never }, guarded(session, body) as never);

  register(TOOL.remember, TOOL_INPUTS[TOOL.remember], async ({ text: fact, namespace }: { text: string; namespace?: string }) => {
    const job = await client.rememberAndWait(fact, namespace, session.rememberTimeoutMs);
    if (job.status !== "done") return text(`Not remembered: ${job.error ?? job.status} (job ${job.job_id}).`, true);
    return text(`Remembered in ${where(namespace)} (memory ${job.blob_id}, job ${job.job_id}).`);
  });

  register(TOOL.rememberBulk, TOOL_INPUTS[TOOL.rememberBulk], async ({ facts, namespace }: { facts: string[]; namespace?: string }) => {
    const { job_ids } = await client.rememberBulk(facts.map((f) => ({ text: f, ...ns(namespace) })));
    const jobs = await Promise.all(job_ids.map((id) => client.waitForJob(id, session.rememberTimeoutMs)));
    const failed = jobs.filter((j) => j.status !== "done");
    const lines = failed.map((j) => `- fact ${job_ids.indexOf(j.job_id) + 1}: ${j.error ?? j.status}`);
    return text([`Remembered ${jobs.length - failed.length} of ${facts.length} facts in ${where(namespace)}.`, ...lines].join("\n"), failed.length === jobs.length);
  });

  register(TOOL.recall, TOOL_INPUTS[TOOL.recall], async ({ query, limit, namespace }: { query: string; limit: number; namespace?: string }) => {
    const r = await session.recall(query, { limit, ...ns(namespace) });
    if (!r.results.length) return text(`No memories in ${where(namespace)} match that query.`);
    const lines = r.results.map((m, i) => `${i + 1}. ${m.text} (relevance ${(1 - m.distance).toFixed(3)})`);
    if (r.dropped_count) lines.push(`(${r.dropped_count} more could not be opened with this credential)`);
    return text(lines.join("\n"));
  });

  register(TOOL.analyze, TOOL_INPUTS[TOOL.analyze], async ({ text: input, namespace }: { text: string; namespace?: string }) => {
    const r = await client.analyze(input, ns(namespace));
    const lines = [`Extracted ${r.fact_count} new fact${r.fact_count === 1 ? "" : "s"} into ${where(namespace)}; each is being stored.`];
    for (const f of r.facts) lines.push(`- ${f.text}`);
    if (r.skipped?.length) {
      lines.push(`Already remembered (skipped): ${r.skipped.length}`);
      for (const s of r.skipped) lines.push(`- ${s.text}`);
    }
    return text(lines.join("\n"));
  });

  register(TOOL.restore, TOOL_INPUTS[TOOL.restore], async ({ namespace, limit }: { namespace: string; limit?: number }) => {
    const r = await client.restore(namespace, clampRestoreLimit(limit));
    const tail = r.truncated ? " The index is still incomplete: call memory_restore again." : "";
    return text(`Restore of ${where(namespace)}: restored ${r.restored}, skipped ${r.skipped}, failed ${r.failed}, total ${r.total}, truncated ${!!r.truncated}.${tail}`);
  });

  register(TOOL.health, TOOL_INPUTS[TOOL.health], async () => {
    const res = await fetch(new URL("/health", session.relayerUrl));
    const h = (await res.json()) as { status?: string; version?: string; relayerVersion?: string };
    return text(`Memory service ${h.status ?? `answered ${res.status}`}, version ${h.relayerVersion ?? h.version ?? "unknown"}.`, res.status >= 400);
  });
}
