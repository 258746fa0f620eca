// The sidecar's operator variables (spec/relayer.md): SIDECAR_URL, SIDECAR_AUTH_TOKEN (required: the sidecar refuses
// to start without it), MEMORY_RELAYER_URL, the MCP_* session limits; MCP_SESSION_IDLE_SECS is this project's.
import { intVar, mcpSessionsFromEnv, type McpSessionConfig } from "../../config/env.ts";

export interface SidecarSettings {
  readonly url: URL;
  readonly authToken: string;
  readonly relayerUrl: string;
  readonly sessions: McpSessionConfig;
}

export class SidecarConfigError extends Error {}

/** From the operator variables; `given` wins (a stack that starts relayer and sidecar together knows both ends). */
export function sidecarSettings(env: Record<string, string | undefined>, given: { authToken?: string; relayerUrl?: string; sessions?: McpSessionConfig; url?: string } = {}): SidecarSettings {
  const authToken = given.authToken ?? env.SIDECAR_AUTH_TOKEN?.trim() ?? "";
  if (authToken.length < 16) throw new SidecarConfigError("SIDECAR_AUTH_TOKEN is required (at least 16 characters): the relayer and the MCP sidecar share it");
  let url: URL;
  try {
    url = new URL(given.url ?? (env.SIDECAR_URL?.trim() || "http://localhost:9000"));
  } catch {
    throw new SidecarConfigError(`SIDECAR_URL is not a URL: ${env.SIDECAR_URL}`);
  }
  return {
    url,
    authToken,
    relayerUrl: given.relayerUrl ?? (env.MEMORY_RELAYER_URL?.trim() || `http://127.0.0.1:${intVar(env, "PORT", 8000, 0, 65535)}`),
    sessions: given.sessions ?? mcpSessionsFromEnv(env),
  };
}
