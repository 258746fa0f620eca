// Black-box: the public account-existence check over HTTP against the started stack
// (test/support/relayer-maintenance-suite.ts); plus the shared rate limiter against its real Postgres and the
// client-address rule the check's limits key on.
import { describe, expect, it, vi } from "vitest";
import { request } from "undici";
import { randomUUID } from "node:crypto";
import { deactivate } from "../adapters/chain/local/accounts.ts";
import { PgRateLimiter, canonicalIp, clientIp, ipBucket } from "../gateway/rate-limit.ts";
import type { Request } from "../gateway/http.ts";
import { ORIGIN, newUser, t, useRelayerMaintenanceSuite, type Res } from "./support/relayer-maintenance-suite.ts";

useRelayerMaintenanceSuite();

describe("GET /api/accounts/{owner}/exists", () => {
  const exists = async (owner: string, ip: string, headers: Record<string, string> = {}) => {
    const res = await request(`${t.stack.relayerUrl}/api/accounts/${owner}/exists`, { headers: { "x-forwarded-for": ip, ...headers } });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };

  it("is true for any account ever created (also deactivated), false otherwise, whatever the case", async () => {
    const u = await newUser();
    expect(await exists(u.id.owner, "198.51.100.1")).toMatchObject({ status: 200, body: { exists: true } });
    expect((await exists("0x" + u.id.owner.slice(2).toUpperCase(), "198.51.100.1")).body).toEqual({ exists: true });
    expect((await exists("0X" + u.id.owner.slice(2), "198.51.100.1")).body).toEqual({ exists: true });
    expect((await exists("0x" + "ab".repeat(32), "198.51.100.1")).body).toEqual({ exists: false });
    // The delegate's own address is not an account owner.
    expect((await exists(u.id.delegateAddress, "198.51.100.1")).body).toEqual({ exists: false });
    await deactivate(t.stack.chain, { signerKey: u.id.ownerSecretKey, accountId: u.id.accountId });
    expect((await exists(u.id.owner, "198.51.100.1")).body).toEqual({ exists: true });
  });

  it("answers 400 to a malformed address without looking anything up", async () => {
    const spy = vi.spyOn(t.stack.chain, "accountExists");
    try {
      for (const bad of ["0x1234", "ab".repeat(32), "0x" + "g".repeat(64), "0x" + "a".repeat(65), "0x" + "a".repeat(63), "%zz", "0x%20" + "a".repeat(62)]) {
        const r = await exists(bad, "198.51.100.2");
        expect(r.status, bad).toBe(400);
        expect(typeof r.body.error).toBe("string");
      }
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  it("follows the origin allow-list for browsers", async () => {
    const owner = "0x" + "cd".repeat(32);
    const allowed = await exists(owner, "198.51.100.3", { origin: ORIGIN });
    expect(allowed.status).toBe(200);
    expect(allowed.headers["access-control-allow-origin"]).toBe(ORIGIN);
    const denied = await exists(owner, "198.51.100.3", { origin: "https://evil.example" });
    expect(denied.status).toBe(403);
    expect(denied.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("limits 20 per minute per client IP, taken from the right of X-Forwarded-For, with 429 and Retry-After", async () => {
    const owner = "0x" + "ef".repeat(32);
    for (let i = 0; i < 20; i++) {
      // Client-supplied entries to the left of the trusted one change nothing.
      expect((await exists(owner, `10.9.${i}.1, 203.0.113.7`)).status).toBe(200);
    }
    const r = await exists(owner, "203.0.113.7");
    expect(r.status).toBe(429);
    expect(r.body).toEqual({ error: expect.any(String), layer: "exists_ip_minute", limit: "20 requests/minute", retry_after_seconds: Number(r.headers["retry-after"]) });
    expect(Number(r.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect((await exists(owner, "spoofed, 203.0.113.7")).status).toBe(429);
    // Malformed requests count too, and another client is not affected.
    expect((await exists("0x12", "203.0.113.7")).status).toBe(429);
    expect((await exists(owner, "203.0.113.8")).status).toBe(200);
  });

  it("has a deployment-wide cap across client IPs", async () => {
    const owner = "0x" + "aa".repeat(32);
    let refused: Res | undefined;
    for (let i = 0; i < 80 && !refused; i++) {
      const r = await exists(owner, `192.0.2.${i}`);
      if (r.status === 429) refused = r;
      else expect(r.status).toBe(200);
    }
    expect(refused?.body).toMatchObject({ layer: "exists_global", limit: "60 requests/minute" });
    expect(Number(refused!.headers["retry-after"])).toBeGreaterThanOrEqual(1);
  });
});

describe("shared rate limiter (Postgres)", () => {
  const limiter = () => new PgRateLimiter(t.stack.db);
  const MIN = 60_000, HOUR = 3_600_000;

  it("holds 20 per minute and 120 per hour on one key, and refuses without recording", async () => {
    const rl = limiter();
    const key = `test:${randomUUID()}`;
    const limits = [
      { layer: "minute", key, limit: 20, windowMs: MIN },
      { layer: "hour", key, limit: 120, windowMs: HOUR },
    ];
    const t0 = 1_800_000_000_000;
    for (let m = 0; m < 6; m++) {
      for (let i = 0; i < 20; i++) expect((await rl.take(limits, t0 + m * MIN + i)).allowed).toBe(true);
      const over = await rl.take(limits, t0 + m * MIN + 500);
      // Refused by the limit that takes longest to admit again: the minute, until the hour is full as well.
      expect(over).toMatchObject({ allowed: false, layer: m < 5 ? "minute" : "hour" });
    }
    const hour = await rl.take(limits, t0 + 6 * MIN + 1_000);
    expect(hour).toMatchObject({ allowed: false, layer: "hour", limit: 120 });
    // The first minute's requests leave the hour window after an hour: allowed again then, not before.
    expect(hour.allowed === false && hour.retryAfterSeconds).toBeGreaterThan(3_000);
    expect((await rl.take(limits, t0 + HOUR - 2 * MIN)).allowed).toBe(false);
    expect((await rl.take(limits, t0 + HOUR + MIN)).allowed).toBe(true);
  });

  it("slides: a full window admits again as its oldest slots leave", async () => {
    const rl = limiter();
    const l = [{ layer: "x", key: `test:${randomUUID()}`, limit: 3, windowMs: MIN }];
    const t0 = 1_800_000_000_000;
    for (const dt of [0, 20_000, 40_000]) expect((await rl.take(l, t0 + dt)).allowed).toBe(true);
    const refused = await rl.take(l, t0 + 50_000);
    expect(refused).toMatchObject({ allowed: false, retryAfterSeconds: 10 });
    expect((await rl.take(l, t0 + 60_500)).allowed).toBe(true);
    expect((await rl.take(l, t0 + 61_000)).allowed).toBe(false);
  });

  it("is exact under concurrency and all-or-nothing across limits", async () => {
    const rl = limiter();
    const key = `test:${randomUUID()}`;
    const results = await Promise.all(Array.from({ length: 25 }, () => rl.take([{ layer: "c", key, limit: 10, windowMs: MIN }])));
    expect(results.filter((r) => r.allowed).length).toBe(10);
    const a = `test:${randomUUID()}`, b = `test:${randomUUID()}`;
    const now = Date.now();
    expect((await rl.take([{ layer: "b", key: b, limit: 1, windowMs: MIN }], now)).allowed).toBe(true);
    // Refused by b: a records nothing either.
    expect((await rl.take([{ layer: "a", key: a, limit: 1, windowMs: MIN }, { layer: "b", key: b, limit: 1, windowMs: MIN }], now)).allowed).toBe(false);
    expect((await rl.take([{ layer: "a", key: a, limit: 1, windowMs: MIN }], now)).allowed).toBe(true);
    // A limit of 0 is off.
    expect((await rl.take([{ layer: "z", key: a, limit: 0, windowMs: MIN }], now)).allowed).toBe(true);
  });
});

describe("client address per TRUSTED_PROXY_HOPS", () => {
  const req = (remoteAddress: string, xff?: string) => ({ remoteAddress, headers: xff === undefined ? {} : { "x-forwarded-for": xff } }) as unknown as Request;

  it("uses the TCP peer with 0 hops, whatever X-Forwarded-For says", () => {
    expect(clientIp(req("10.0.0.5", "198.51.100.7"), 0)).toBe("10.0.0.5");
    expect(clientIp(req("0000:0000:0000:0000:0000:ffff:0a00:0005"), 0)).toBe("10.0.0.5");
  });

  it("takes the N-th entry from the right and falls back to the peer, never to another entry", () => {
    expect(clientIp(req("10.0.0.5", "192.0.2.66, 192.0.2.67, 198.51.100.7"), 1)).toBe("198.51.100.7");
    expect(clientIp(req("10.0.0.5", "192.0.2.66, 198.51.100.7, 10.0.0.9"), 2)).toBe("198.51.100.7");
    expect(clientIp(req("10.0.0.5", "not-an-ip, 198.51.100.7"), 1)).toBe("198.51.100.7");
    expect(clientIp(req("10.0.0.5", "198.51.100.7, also-invalid"), 1)).toBe("10.0.0.5");
    expect(clientIp(req("10.0.0.5", "198.51.100.7"), 2)).toBe("10.0.0.5");
    expect(clientIp(req("10.0.0.5"), 1)).toBe("10.0.0.5");
  });

  it("canonicalises addresses and buckets IPv6 by /64", () => {
    expect(canonicalIp("2001:DB8::1")).toBe("2001:0db8:0000:0000:0000:0000:0000:0001");
    expect(canonicalIp("::ffff:192.0.2.1")).toBe("192.0.2.1");
    expect(canonicalIp("[2001:db8::1]")).toBe(canonicalIp("2001:0db8:0:0::1"));
    expect(canonicalIp("999.1.1.1")).toBeNull();
    expect(ipBucket(canonicalIp("2001:db8:0:1:aaaa::1")!)).toBe(ipBucket(canonicalIp("2001:db8:0:1:bbbb::2")!));
    expect(ipBucket("192.0.2.1")).toBe("192.0.2.1");
  });
});
