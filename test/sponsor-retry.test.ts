// Pure parts of sponsored execution: the backoff schedule, re-sponsoring while invalidated, and the sponsorship
// variables' parsing (the spec's defaults; a malformed value stops the start naming the variable).
import { describe, expect, it } from "vitest";
import { backoffDelay, retryWhileInvalidated } from "../adapters/sponsor/retry.ts";
import { PortError, SponsorshipInvalidated } from "../adapters/ports.ts";
import { ConfigError, sponsorFromEnv } from "../config/env.ts";

const policy = { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 8000 };

describe("backoff", () => {
  it("doubles from the base and stops at the max", () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(policy, n))).toEqual([1000, 2000, 4000, 8000, 8000, 8000]);
    expect(backoffDelay({ maxAttempts: 3, baseDelayMs: 300, maxDelayMs: 500 }, 2)).toBe(500);
  });
});

describe("retryWhileInvalidated", () => {
  it("sponsors again after an invalidation, pausing per the schedule, until it succeeds", async () => {
    const delays: number[] = [];
    let calls = 0;
    const result = await retryWhileInvalidated(policy, async (n) => {
      calls++;
      if (n < 3) throw new SponsorshipInvalidated("expired");
      return "digest";
    }, async (ms) => void delays.push(ms));
    expect(result).toBe("digest");
    expect(calls).toBe(3);
    expect(delays).toEqual([1000, 2000]);
  });

  it("gives up after maxAttempts invalidations with an error saying so", async () => {
    const delays: number[] = [];
    let calls = 0;
    const run = retryWhileInvalidated(policy, async () => {
      calls++;
      throw new SponsorshipInvalidated("Sponsored transaction has expired");
    }, async (ms) => void delays.push(ms));
    await expect(run).rejects.toBeInstanceOf(SponsorshipInvalidated);
    await expect(run).rejects.toThrow(/invalidated 4 times in a row \(SPONSOR_INVALIDATED_MAX_ATTEMPTS=4\): Sponsored transaction has expired/);
    expect(calls).toBe(4);
    expect(delays).toEqual([1000, 2000, 4000]);
  });

  it("does not retry other failures", async () => {
    let calls = 0;
    const down = new PortError("sponsor", "unavailable", "the sponsorship provider is unreachable");
    await expect(retryWhileInvalidated(policy, async () => {
      calls++;
      throw down;
    }, async () => undefined)).rejects.toBe(down);
    expect(calls).toBe(1);
  });
});

describe("sponsorship variables", () => {
  it("default as the spec says", () => {
    expect(sponsorFromEnv({})).toEqual({
      apiKey: undefined,
      apiUrl: undefined,
      network: undefined,
      fallbackToDirectSign: false,
      durableRegister: false,
      invalidatedRetry: { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 8000 },
    });
  });

  it("reads well-formed values", () => {
    const s = sponsorFromEnv({
      SPONSOR_API_KEY: "enoki_private_abc123",
      SPONSOR_API_URL: "https://sponsor.example/",
      SPONSOR_NETWORK: "testnet",
      SPONSOR_FALLBACK_TO_DIRECT_SIGN: "true",
      SPONSOR_DURABLE_REGISTER_ENABLED: "1",
      SPONSOR_INVALIDATED_MAX_ATTEMPTS: "6",
      SPONSOR_INVALIDATED_BASE_DELAY_MS: "250",
      SPONSOR_INVALIDATED_MAX_DELAY_MS: "2000",
    });
    expect(s).toEqual({
      apiKey: "enoki_private_abc123",
      apiUrl: "https://sponsor.example/",
      network: "testnet",
      fallbackToDirectSign: true,
      durableRegister: true,
      invalidatedRetry: { maxAttempts: 6, baseDelayMs: 250, maxDelayMs: 2000 },
    });
  });

  it.each([
    [{ SPONSOR_FALLBACK_TO_DIRECT_SIGN: "yes" }, /SPONSOR_FALLBACK_TO_DIRECT_SIGN must be true or false/],
    [{ SPONSOR_DURABLE_REGISTER_ENABLED: "on" }, /SPONSOR_DURABLE_REGISTER_ENABLED must be true or false/],
    [{ SPONSOR_INVALIDATED_MAX_ATTEMPTS: "0" }, /SPONSOR_INVALIDATED_MAX_ATTEMPTS must be .* from 1 to 20/],
    [{ SPONSOR_INVALIDATED_BASE_DELAY_MS: "1s" }, /SPONSOR_INVALIDATED_BASE_DELAY_MS must be/],
    [{ SPONSOR_INVALIDATED_BASE_DELAY_MS: "5000", SPONSOR_INVALIDATED_MAX_DELAY_MS: "100" }, /must not be below SPONSOR_INVALIDATED_BASE_DELAY_MS/],
    [{ SPONSOR_NETWORK: "Main Net" }, /SPONSOR_NETWORK must be a network name/],
    [{ SPONSOR_API_URL: "ftp://x" }, /SPONSOR_API_URL must be an http\(s\) URL/],
  ])("refuses %o", (env, message) => {
    expect(() => sponsorFromEnv(env)).toThrow(ConfigError);
    expect(() => sponsorFromEnv(env)).toThrow(message);
  });

  it("names SPONSOR_API_KEY without echoing a malformed key", () => {
    const bad = "two words secret";
    expect(() => sponsorFromEnv({ SPONSOR_API_KEY: bad })).toThrow(/SPONSOR_API_KEY must be/);
    try {
      sponsorFromEnv({ SPONSOR_API_KEY: bad });
    } catch (err) {
      expect((err as Error).message).not.toContain("secret");
    }
  });
});
