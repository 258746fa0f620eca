// The six relayer tools on an MCP server (under memrelay's names; or the four MemWal's package knows, under its names),
// each a signed call to the relayer's own routes with the session's delegate key (client/memrelay-client.ts) — or,
// for memory_recall in a sidecar holding the relayer's ports, the route's own recall in process
// (sidecar/local-recall.ts): the same commands, encryption, blob and index paths as any client, no second
// implementation. Results are short texts an agent can read; a refused credential is reported, never retried.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { RelayerError, type MemrelayClient, type RecallResponse } from "../client/memrelay-client.ts";
import { TOOL, TOOL_DESCRIPTIONS, TOOL_INPUTS, clampRestoreLimit, type ToolNames } from "../schemas/mcp-tools.ts";

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
  /** The names the client expects (memrelay's `memory_*` or the MemWal package's `memwal_*`). */
  readonly names: ToolNames;
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
          return text(`The memory service refused this credential (401): the delegate key is unknown or was removed from the account. Sign in again (${session.names.login}) or ask the user to add a key.`, true);
        }
        const reason = typeof err.body === "object" && err.body && "error" in err.body ? String((err.body as { error: unknown }).error) : `status ${err.status}`;
        const retry = err.headers["retry-after"];
        return text(`The memory service answered ${err.status}: ${reason}${retry ? ` (retry after ${retry} s)` : ""}`, true);
      }
      return text(`The memory service could not be reached: ${err instanceof Error ? err.message : String(err)}`, true);
    }
  };
}

/** How the jobs of one call ended within the wait: done, failed (with why), or still running when the wait ended. */
interface JobsOutcome {
  readonly done: number;
  readonly failed: { readonly index: number; readonly jobId: string; readonly error: string }[];
  readonly pending: string[];
}

/** Waits for every job, at most `timeoutMs` in all; a job still running then is reported, not thrown. */
async function settleJobs(client: MemrelayClient, jobIds: readonly string[], timeoutMs: number): Promise<JobsOutcome> {
  // waitForJob throws a plain Error when its time is up; a relayer refusal (RelayerError) ends the call
  const jobs = await Promise.all(jobIds.map((id) => client.waitForJob(id, timeoutMs).catch((err) => (err instanceof RelayerError ? Promise.reject(err) : undefined))));
  const failed: JobsOutcome["failed"] = [];
  const pending: string[] = [];
  jobs.forEach((job, index) => {
    if (!job) pending.push(jobIds[index]);
    else if (job.status !== "done") failed.push({ index, jobId: job.job_id, error: job.error ?? job.status });
  });
  return { done: jobs.length - failed.length - pending.length, failed, pending };
}

const stillStoring = (pending: readonly string[]) =>
  pending.length ? [`${pending.length} still being stored, recallable shortly (jobs ${pending.join(", ")}).`] : [];

export function registerMemoryTools(server: McpServer, session: ToolSession): void {
  const { client, names } = session;
  const register = <S extends Record<string, unknown>>(name: string | undefined, key: string, inputSchema: S, body: (args: any) => Promise<CallToolResult>) =>
    name && server.registerTool(name, { description: TOOL_DESCRIPTIONS[key], inputSchema: inputSchema as never }, guarded(session, body) as never);

  register(names.remember, TOOL.remember, TOOL_INPUTS[TOOL.remember], async ({ text: fact, namespace }: { text: string; namespace?: string }) => {
    const job = await client.rememberAndWait(fact, namespace, session.rememberTimeoutMs);
    if (job.status !== "done") return text(`Not remembered: ${job.error ?? job.status} (job ${job.job_id}).`, true);
    return text(`Remembered in ${where(namespace)} (memory ${job.blob_id}, job ${job.job_id}).`);
  });

  register(names.rememberBulk, TOOL.rememberBulk, TOOL_INPUTS[TOOL.rememberBulk], async ({ facts, namespace }: { facts: string[]; namespace?: string }) => {
    const { job_ids } = await client.rememberBulk(facts.map((f) => ({ text: f, ...ns(namespace) })));
    const jobs = await settleJobs(client, job_ids, session.rememberTimeoutMs);
    const lines = jobs.failed.map((f) => `- fact ${f.index + 1}: ${f.error}`);
    return text([`Remembered ${jobs.done} of ${facts.length} facts in ${where(namespace)}.`, ...lines, ...stillStoring(jobs.pending)].join("\n"), jobs.failed.length === facts.length);
  });

  register(names.recall, TOOL.recall, TOOL_INPUTS[TOOL.recall], async ({ query, limit, namespace }: { query: string; limit: number; namespace?: string }) => {
    const r = await session.recall(query, { limit, ...ns(namespace) });
    if (!r.results.length) return text(`No memories in ${where(namespace)} match that query.`);
    const lines = r.results.map((m, i) => `${i + 1}. ${m.text} (relevance ${(1 - m.distance).toFixed(3)})`);
    if (r.dropped_count) lines.push(`(${r.dropped_count} more could not be opened with this credential)`);
    return text(lines.join("\n"));
  });

  // Waits for the facts' remember jobs like memory_remember does (bounded by the same timeout): a recall right after
  // the answer finds them. Jobs still running at the bound are named, so the agent knows to expect them shortly.
  register(names.analyze, TOOL.analyze, TOOL_INPUTS[TOOL.analyze], async ({ text: input, namespace }: { text: string; namespace?: string }) => {
    const r = await client.analyze(input, ns(namespace));
    const jobs = await settleJobs(client, r.job_ids, session.rememberTimeoutMs);
    const notStored = new Map(jobs.failed.map((f) => [f.jobId, f.error]));
    const lines = [`Extracted ${r.fact_count} new fact${r.fact_count === 1 ? "" : "s"}; ${jobs.done} stored in ${where(namespace)}.`];
    for (const f of r.facts) lines.push(`- ${f.text}${notStored.has(f.job_id) ? ` (not stored: ${notStored.get(f.job_id)})` : ""}`);
    lines.push(...stillStoring(jobs.pending));
    if (r.skipped?.length) {
      lines.push(`Already remembered (skipped): ${r.skipped.length}`);
      for (const s of r.skipped) lines.push(`- ${s.text}`);
    }
    return text(lines.join("\n"), r.fact_count > 0 && jobs.failed.length === r.fact_count);
  });

  register(names.restore, TOOL.restore, TOOL_INPUTS[TOOL.restore], async ({ namespace, limit }: { namespace: string; limit?: number }) => {
    const r = await client.restore(namespace, clampRestoreLimit(limit));
    const tail = r.truncated ? ` The index is still incomplete: call ${names.restore} again.` : "";
    return text(`Restore of ${where(namespace)}: restored ${r.restored}, skipped ${r.skipped}, failed ${r.failed}, total ${r.total}, truncated ${!!r.truncated}.${tail}`);
  });

  register(names.health, TOOL.health, TOOL_INPUTS[TOOL.health], async () => {
    const res = await fetch(new URL("/health", session.relayerUrl));
    const h = (await res.json()) as { status?: string; version?: string; relayerVersion?: string };
    return text(`Memory service ${h.status ?? `answered ${res.status}`}, version ${h.relayerVersion ?? h.version ?? "unknown"}.`, res.status >= 400);
  });
}
