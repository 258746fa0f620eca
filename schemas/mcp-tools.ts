// The agent tools (spec/relayer.md, Tool server): names, descriptions and input schemas, shared by the sidecar that
// serves them over SSE and Streamable HTTP and by the stdio package that forwards them. Pure (zod schemas only).
import { z } from "zod";
import { LIMITS } from "./relayer/http.ts";

export const TOOL = {
  remember: "memory_remember",
  rememberBulk: "memory_remember_bulk",
  recall: "memory_recall",
  analyze: "memory_analyze",
  restore: "memory_restore",
  health: "memory_health",
  login: "memory_login",
  logout: "memory_logout",
} as const;

/**
 * The names the MemWal MCP package (`@mysten-incubation/memwal-mcp`) expects: MemWal's relayer serves these four, the
 * package adds its own memwal_login / memwal_logout, and it injects its default namespace (`--namespace`,
 * MEMWAL_NAMESPACE) only into calls of these four. memory_remember_bulk and memory_health have no MemWal name: served
 * to that package they would be calls its default namespace never reaches.
 */
export const MEMWAL_TOOL = {
  remember: "memwal_remember",
  recall: "memwal_recall",
  analyze: "memwal_analyze",
  restore: "memwal_restore",
  login: "memwal_login",
} as const;

/** Which names a session's tools carry: memrelay's own (`memory_*`) or the MemWal package's (`memwal_*`). */
export type ToolFamily = "memory" | "memwal";

/** The relayer tools a session serves, under its family's names (a tool without a name is not served). */
export interface ToolNames {
  readonly remember: string;
  readonly recall: string;
  readonly analyze: string;
  readonly restore: string;
  readonly rememberBulk?: string;
  readonly health?: string;
  /** The sign-in tool the client's package offers, named in messages. */
  readonly login: string;
}

export const TOOL_NAMES: Readonly<Record<ToolFamily, ToolNames>> = { memory: TOOL, memwal: MEMWAL_TOOL };

/**
 * memory_restore's limit: default and upper bound; values outside 1..max are clamped, not refused. The bound is the
 * restore route's own (POST /api/restore), which is also what MemWal's memwal_restore schema allows (500).
 */
export const RESTORE_TOOL_LIMIT = { default: LIMITS.restoreDefault, max: LIMITS.restoreMax } as const;
export const BULK_FACTS = { min: 1, max: LIMITS.bulkItems } as const;

const namespace = z.string().min(1).max(LIMITS.namespaceBytes).optional().describe("Namespace of the memories; defaults to the session's namespace, else `default`.");
const text = z.string().min(1).max(LIMITS.textBytes);

export const TOOL_INPUTS = {
  [TOOL.remember]: { text: text.describe("One complete fact to remember, in plain words."), namespace },
  [TOOL.rememberBulk]: { facts: z.array(text).min(BULK_FACTS.min).max(BULK_FACTS.max).describe(`Between ${BULK_FACTS.min} and ${BULK_FACTS.max} facts, each remembered on its own.`), namespace },
  [TOOL.recall]: {
    query: text.describe("What to look for, in natural language."),
    limit: z.number().int().min(1).max(LIMITS.recallMax).default(LIMITS.recallDefault).describe(`How many memories to return (1-${LIMITS.recallMax}, default ${LIMITS.recallDefault}).`),
    namespace,
  },
  [TOOL.analyze]: { text: text.describe("Conversation or notes to extract facts from; each fact is remembered."), namespace },
  [TOOL.restore]: {
    namespace: z.string().min(1).max(LIMITS.namespaceBytes).describe("Namespace to re-index from the memories stored on chain."),
    limit: z.number().int().optional().describe(`Most memories to restore (default ${RESTORE_TOOL_LIMIT.default}, clamped to 1-${RESTORE_TOOL_LIMIT.max}).`),
  },
  [TOOL.health]: {},
} as const;

export const TOOL_DESCRIPTIONS: Readonly<Record<string, string>> = {
  [TOOL.remember]: "Save one fact to the user's encrypted memory. Waits until it is stored, then returns.",
  [TOOL.rememberBulk]: "Save several facts at once (1 to 20), each as its own memory.",
  [TOOL.recall]: "Search the user's memory for what is relevant to a query. Returns the matching memories, most relevant first.",
  [TOOL.analyze]: "Extract the facts stated in a text and save each one as a memory (facts already remembered are skipped). Waits until they are stored, so a recall right after finds them.",
  [TOOL.restore]: "Re-index a namespace from the memories stored on chain, when the search index is missing some. Returns counts, never memory text.",
  [TOOL.health]: "Check that the memory service is up, and its version.",
  [TOOL.login]: "Sign in: returns a one-time URL (valid 5 minutes) to open in a browser, where the user approves this agent with their wallet.",
  [TOOL.logout]: "Forget this machine's memory credential (the delegate key stays on the account until revoked in the dashboard).",
};

export const clampRestoreLimit = (limit: number | undefined) => Math.min(RESTORE_TOOL_LIMIT.max, Math.max(1, limit ?? RESTORE_TOOL_LIMIT.default));

/** Largest JSON-RPC message the sidecar accepts: a full bulk remember plus envelope. */
export const MAX_MESSAGE_BYTES = LIMITS.bulkBodyBytes + 65_536;

/** Headers between the relayer and its MCP sidecar (loopback only; the sidecar refuses requests without the token). */
export const SIDECAR_HEADERS = { token: "x-sidecar-token", clientIp: "x-memrelay-client-ip" } as const;

/** JSON-RPC error codes the agent transports answer with (beside the SDK's own). */
export const RPC_ERROR = {
  parse: -32700,
  invalidRequest: -32600,
  /** Credential missing, wrong or revoked; also a session that cannot be found (the client must initialize again). */
  unauthorized: -32001,
  sessionNotFound: -32001,
  rateLimited: -32000,
  internal: -32603,
} as const;
