// The client's session cache hands out no session in its last minute: a recall signed with a session about to expire
// reached the key servers after it had (a slow call, its retries), and was refused with 403 (issue 32's chaos run).
import { describe, expect, it } from "vitest";
import { cachedSessionProvider } from "../client/session-cache.ts";

const opts = { delegateSecretKey: new Uint8Array(32), packageId: "0x1", rpcUrl: "http://127.0.0.1:1" };

function clockAndSessions(lifeMs: number) {
  let t = 1_000_000;
  let made = 0;
  const create = async () => ({ header: `session ${++made}`, expiresAtMs: t + lifeMs });
  return { now: () => t, advance: (ms: number) => (t += ms), create };
}

describe("the client's encryption session cache", () => {
  it("reuses a five-minute session, and renews it a minute before it expires", async () => {
    const c = clockAndSessions(5 * 60_000 - 10_000);
    const get = cachedSessionProvider(opts, c.create, c.now);
    expect(await get()).toBe("session 1");
    c.advance(3 * 60_000);
    expect(await get()).toBe("session 1");
    c.advance(60_000); // 50 s of usable life left: a slow call with retries could carry it past its end
    expect(await get()).toBe("session 2");
  });

  it("keeps reusing a short session for half its life", async () => {
    const c = clockAndSessions(40_000);
    const get = cachedSessionProvider(opts, c.create, c.now);
    expect(await get()).toBe("session 1");
    c.advance(19_000);
    expect(await get()).toBe("session 1");
    c.advance(2_000);
    expect(await get()).toBe("session 2");
  });

  it("creates one session for concurrent callers", async () => {
    const c = clockAndSessions(5 * 60_000);
    const get = cachedSessionProvider(opts, c.create, c.now);
    expect(await Promise.all([get(), get(), get()])).toEqual(["session 1", "session 1", "session 1"]);
  });
});
