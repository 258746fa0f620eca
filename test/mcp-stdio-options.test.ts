// The stdio package's command line (spec table): flags over variables, presets, explicit URLs over presets, modes,
// the tool-side variables' lower bounds; and the sidecar watchdog giving up after its consecutive failures.
import { describe, expect, it } from "vitest";
import { createServer } from "node:http";
import { PRESETS, UsageError, parseOptions } from "../mcp/stdio/options.ts";
import { startSidecarWatchdog } from "../gateway/relayer/mcp-routes.ts";
import { silentLogger } from "../config/logger.ts";

describe("memrelay-mcp options", () => {
  it("flags win over variables; explicit URLs win over presets", () => {
    const env = { MEMORY_SERVER_URL: "http://env-relayer:1", MEMORY_WEB_URL: "http://env-web:2", MEMORY_NAMESPACE: "env-ns", MEMORY_CLIENT_LABEL: "env label" };
    expect(parseOptions([], env)).toMatchObject({ mode: "serve", relayerUrl: "http://env-relayer:1", webUrl: "http://env-web:2", namespace: "env-ns", label: "env label" });
    expect(parseOptions(["--relayer", "http://flag:3", "--ns", "flag-ns", "--label=Cursor"], env)).toMatchObject({ relayerUrl: "http://flag:3", namespace: "flag-ns", label: "Cursor" });
    expect(parseOptions(["--local"], {})).toMatchObject({ relayerUrl: PRESETS.local.relayer, webUrl: PRESETS.local.web });
    expect(parseOptions(["--local", "--relayer", "http://other:9"], {})).toMatchObject({ relayerUrl: "http://other:9", webUrl: PRESETS.local.web });
    expect(parseOptions(["--prod"], {}).relayerUrl).toBe(PRESETS.prod.relayer);
    expect(parseOptions([], {})).toMatchObject({ relayerUrl: undefined, namespace: undefined, label: "memrelay MCP" });
  });

  it("modes and tool-side variables", () => {
    expect(parseOptions(["login"], {}).mode).toBe("login");
    expect(parseOptions(["--login"], {}).mode).toBe("login");
    expect(parseOptions(["--logout"], {}).mode).toBe("logout");
    expect(parseOptions(["-h"], {}).mode).toBe("help");
    expect(parseOptions([], { MEMORY_MCP_DEBUG: "1", MEMORY_MCP_SSE_IDLE_MS: "499", MEMORY_MCP_CALL_TIMEOUT_MS: "999" })).toMatchObject({ debug: true, idleMs: 30_000, callTimeoutMs: 240_000 });
    expect(parseOptions([], { MEMORY_MCP_SSE_IDLE_MS: "500", MEMORY_MCP_CALL_TIMEOUT_MS: "1000" })).toMatchObject({ idleMs: 500, callTimeoutMs: 1000 });
  });

  it("refuses unknown arguments, missing values and bad URLs", () => {
    expect(() => parseOptions(["--bogus"], {})).toThrow(UsageError);
    expect(() => parseOptions(["--relayer"], {})).toThrow(/needs a value/);
    expect(() => parseOptions(["--relayer", "not a url"], {})).toThrow(/not a URL/);
  });
});

describe("sidecar watchdog", () => {
  it("gives up once after the configured consecutive failures, and a healthy answer resets the count", async () => {
    let healthy = true;
    const server = createServer((_req, res) => {
      res.statusCode = healthy ? 200 : 503;
      res.end();
    }).listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    let lost = 0;
    const stop = startSidecarWatchdog({ url: () => url, token: "t" }, { url, authToken: "t", watchdogIntervalSecs: 1, watchdogTimeoutSecs: 1, watchdogMaxFailures: 2 }, silentLogger, () => lost++);
    try {
      await new Promise((r) => setTimeout(r, 1_500));
      expect(lost).toBe(0);
      healthy = false;
      await new Promise((r) => setTimeout(r, 3_500));
      expect(lost).toBe(1);
    } finally {
      stop();
      server.close();
    }
  }, 10_000);
});
