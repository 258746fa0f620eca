// Pure parts of the agent transports: session admission (total, per address, new per minute), bearer parsing, who may
// use an open session, and which tool names a session serves.
import { describe, expect, it } from "vitest";
import { SessionLimits } from "../mcp/sidecar/session-limits.ts";
import { BearerRefused, bearerOf, toolFamilyOf } from "../mcp/sidecar/bearer.ts";
import { bindingOf, checkBinding } from "../mcp/sidecar/session-binding.ts";
import { sidecarSettings, SidecarConfigError } from "../mcp/sidecar/settings.ts";
import { clampRestoreLimit, RESTORE_TOOL_LIMIT } from "../schemas/mcp-tools.ts";

describe("session limits", () => {
  it("caps the total and each address, and frees a slot on release (once)", () => {
    const l = new SessionLimits({ maxTotal: 3, maxPerIp: 2, newPerIpPerMinute: 100 });
    const a1 = l.admit("a"), a2 = l.admit("a");
    expect(a1.ok && a2.ok).toBe(true);
    expect(l.admit("a")).toMatchObject({ ok: false, reason: expect.stringMatching(/maximum of 2/) });
    expect(l.admit("b").ok).toBe(true);
    expect(l.admit("c")).toMatchObject({ ok: false, reason: expect.stringMatching(/maximum of 3/) });
    if (a1.ok) {
      a1.release();
      a1.release();
    }
    expect(l.open).toBe(2);
    expect(l.admit("c").ok).toBe(true);
  });

  it("limits new sessions per address per minute, with a Retry-After until the oldest start leaves the window", () => {
    let now = 0;
    const l = new SessionLimits({ maxTotal: 100, maxPerIp: 100, newPerIpPerMinute: 2 }, () => now);
    for (const at of [0, 10_000]) {
      now = at;
      const s = l.admit("a");
      if (s.ok) s.release();
    }
    now = 20_000;
    expect(l.admit("a")).toMatchObject({ ok: false, retryAfterSecs: 40 });
    now = 60_001;
    expect(l.admit("a").ok).toBe(true);
  });
});

describe("bearer credential", () => {
  const key = "ab".repeat(32);
  const account = "0x" + "cd".repeat(32);
  it("takes the delegate key (with or without 0x) and the account id, under either header name", () => {
    expect(bearerOf({ authorization: `Bearer ${key}`, "x-memory-account-id": account }).accountId).toBe(account);
    expect(bearerOf({ authorization: `bearer 0x${key}`, "x-memwal-account-id": account.toUpperCase().replace("0X", "0x") }).key).toHaveLength(32);
  });
  it("says what is wrong otherwise", () => {
    expect(() => bearerOf({})).toThrow(BearerRefused);
    expect(() => bearerOf({ authorization: "Basic abc" })).toThrow(/Bearer/);
    expect(() => bearerOf({ authorization: "Bearer 1234", "x-memory-account-id": account })).toThrow(/64 hexadecimal/);
    expect(() => bearerOf({ authorization: `Bearer ${key}` })).toThrow(/x-memory-account-id/);
  });
});

describe("sidecar settings", () => {
  it("refuses to start without SIDECAR_AUTH_TOKEN", () => {
    expect(() => sidecarSettings({})).toThrow(SidecarConfigError);
    expect(() => sidecarSettings({ SIDECAR_AUTH_TOKEN: "short" })).toThrow(/SIDECAR_AUTH_TOKEN/);
    const s = sidecarSettings({ SIDECAR_AUTH_TOKEN: "x".repeat(32), PORT: "8123", MCP_MAX_SESSIONS_PER_IP: "3" });
    expect(s.url.port).toBe("9000");
    expect(s.relayerUrl).toBe("http://127.0.0.1:8123");
    expect(s.sessions.maxPerIp).toBe(3);
  });
  it("clamps memory_restore's limit into 1..100, default 10", () => {
    expect([clampRestoreLimit(undefined), clampRestoreLimit(0), clampRestoreLimit(-5), clampRestoreLimit(50), clampRestoreLimit(10_000)]).toEqual([10, 1, 1, 50, 500]);
    expect(RESTORE_TOOL_LIMIT.max).toBe(500); // what MemWal's memwal_restore schema allows
  });
});

describe("who may use an open session", () => {
  const key = (c: string) => ({ authorization: `Bearer ${c.repeat(64)}`, "x-memory-account-id": "0x" + "ab".repeat(32) });
  const opened = bindingOf(key("a"), "10.0.0.1");

  it("accepts the opening credential from anywhere, on either transport", () => {
    expect(checkBinding(opened, "sse", key("a"), "10.0.0.9")).toEqual({ ok: true });
    expect(checkBinding(opened, "streamable", key("a"), "10.0.0.1")).toEqual({ ok: true });
    // the MemWal header for the same account is the same credential
    expect(checkBinding(opened, "sse", { authorization: key("a").authorization, "x-memwal-account-id": "0x" + "AB".repeat(32) }, "10.0.0.1")).toEqual({ ok: true });
  });

  it("accepts a legacy SSE message without a credential from the opening address only", () => {
    expect(checkBinding(opened, "sse", {}, "10.0.0.1")).toEqual({ ok: true });
    expect(checkBinding(opened, "sse", { "content-type": "application/json" }, "10.0.0.2")).toMatchObject({ ok: false, status: 403, message: expect.stringMatching(/opened from another address/) });
  });

  it("refuses a Streamable HTTP request without a credential, and a different credential on either transport, saying which", () => {
    expect(checkBinding(opened, "streamable", {}, "10.0.0.1")).toMatchObject({ ok: false, status: 401, message: expect.stringMatching(/^missing credential/) });
    for (const kind of ["sse", "streamable"] as const) {
      expect(checkBinding(opened, kind, key("b"), "10.0.0.1")).toMatchObject({ ok: false, status: 403, message: expect.stringMatching(/opened with another credential/) });
      expect(checkBinding(opened, kind, { ...key("a"), "x-memory-account-id": "0x" + "cd".repeat(32) }, "10.0.0.1")).toMatchObject({ ok: false, status: 403 });
    }
  });
});

describe("tool names per client", () => {
  it("serves memwal_* to a client that names the account in x-memwal-account-id only, memory_* otherwise", () => {
    const account = "0x" + "ab".repeat(32);
    expect(toolFamilyOf({ "x-memwal-account-id": account })).toBe("memwal");
    expect(toolFamilyOf({ "x-memory-account-id": account })).toBe("memory");
    expect(toolFamilyOf({ "x-memory-account-id": account, "x-memwal-account-id": account })).toBe("memory");
    expect(toolFamilyOf({})).toBe("memory");
  });
});
