// Health and version bodies (spec/relayer.md, Versioning): one source for both routes.
export const RELAYER_VERSION = "0.1.0";
export const API_VERSION = "1.0.0";

// The compatibility baselines the released MemWal clients check against (TypeScript SDK 0.0.4, Python SDK 0.1.0,
// MCP package 0.0.1): a higher minimum makes them refuse the relayer before their first request.
export const MIN_SUPPORTED_SDK = { typescript: "0.0.4", python: "0.1.0", mcp: "0.0.1" } as const;

const compat = {
  relayerVersion: RELAYER_VERSION,
  apiVersion: API_VERSION,
  minSupportedSdk: MIN_SUPPORTED_SDK,
  featureFlags: { "auth.accountBoundNonce": false, "auth.encryptionSessionHeader": true, "runtime.versionEndpoint": true },
  deprecations: [
    { item: "header:x-delegate-key", replacement: "header:x-encryption-session", removal: "2.0.0" },
    { item: "env:ENCRYPTION_KEY_SERVERS", replacement: "env:ENCRYPTION_SERVER_CONFIGS", removal: "2.0.0" },
  ],
};

export function versionBody() {
  return { version: RELAYER_VERSION, ...compat };
}

export function healthBody(status: string, mode: string, dependencies: Record<string, boolean>, promptVersions: { readonly extract: string; readonly ask: string }) {
  return {
    status,
    version: RELAYER_VERSION,
    ...compat,
    build: { node: process.version },
    mode,
    prompt_versions: promptVersions,
    dependencies,
  };
}
