// A nonce claim while the nonce bucket's stream has no leader (a NATS node killed or paused, issue 32): it is tried
// again within a budget instead of failing at once, and an attempt that timed out but was written counts as this
// claim's, never as a replay; a second arrival of the same signed request (same digest) is told apart from another
// request reusing the nonce. The KV is a unit-test fake that fails the way nats.js does.
import { describe, expect, it } from "vitest";
import type { KV } from "@nats-io/kv";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { KvNonceStore } from "../gateway/relayer/nonce-store.ts";
import { retryWithin } from "../eventlog/retry-within.ts";

const taken = () => new JetStreamApiError({ err_code: JetStreamApiCodes.StreamWrongLastSequence, code: 400, description: "wrong last sequence" });
const digest = Buffer.alloc(32, 7);
const otherDigest = Buffer.alloc(32, 9);
const timeout = () => Object.assign(new Error("TIMEOUT"), { name: "TimeoutError" });

/** A bucket whose `create` runs `script` per attempt: "ok", "timeout" (not written), "lost-ack" (written, then a timeout). */
function fakeKv(script: ("ok" | "timeout" | "lost-ack")[], held = new Map<string, Uint8Array>()) {
  let attempt = 0;
  const kv = {
    async create(key: string, value: Uint8Array) {
      const step = script[attempt++] ?? "ok";
      if (held.has(key)) throw taken();
      if (step === "timeout") throw timeout();
      held.set(key, value);
      if (step === "lost-ack") throw timeout();
      return 1;
    },
    async get(key: string) {
      const value = held.get(key);
      return value ? { value } : null;
    },
  };
  return { kv: kv as unknown as KV, attempts: () => attempt, held };
}

describe("nonce claims while the bucket's stream elects a leader", () => {
  it("claims the nonce once the bucket answers again", async () => {
    const f = fakeKv(["timeout", "timeout", "ok"]);
    expect(await new KvNonceStore(f.kv, 5_000).claim("a", digest)).toBe("fresh");
    expect(f.attempts()).toBe(3);
  });

  it("counts a create that was written but whose answer was lost as this claim's", async () => {
    const f = fakeKv(["lost-ack", "ok"]);
    expect(await new KvNonceStore(f.kv, 5_000).claim("a", digest)).toBe("fresh");
  });

  it("tells a reused nonce from the same request arriving again, at the first attempt or after a timeout", async () => {
    const held = new Map<string, Uint8Array>();
    expect(await new KvNonceStore(fakeKv([], held).kv, 5_000).claim("a", digest)).toBe("fresh");
    for (const script of [[], ["timeout"]] as const) {
      expect(await new KvNonceStore(fakeKv([...script], held).kv, 5_000).claim("a", otherDigest)).toBe("reused");
      expect(await new KvNonceStore(fakeKv([...script], held).kv, 5_000).claim("a", digest)).toBe("replayed");
    }
  });

  it("refuses a nonce recorded before records named their request (a bare mark)", async () => {
    const held = new Map([["n.a", new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])]]);
    expect(await new KvNonceStore(fakeKv([], held).kv, 5_000).claim("a", digest)).toBe("reused");
  });

  it("gives up with the last error once the budget is spent", async () => {
    const f = fakeKv(Array(100).fill("timeout"));
    const t0 = Date.now();
    await expect(new KvNonceStore(f.kv, 400).claim("a", digest)).rejects.toThrow("TIMEOUT");
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(f.attempts()).toBeGreaterThan(1);
  });

  it("does not retry what the caller says is final", async () => {
    let n = 0;
    await expect(retryWithin(5_000, async () => { n++; throw new Error("invalid"); }, () => false)).rejects.toThrow("invalid");
    expect(n).toBe(1);
  });
});
