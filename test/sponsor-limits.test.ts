// Black-box: the guards in front of POST /sponsor and /sponsor/execute, as MemWal's server tests
// (services/server/tests/test_sponsor_rate_limit.py) expect them. Every request counts toward its client address's
// limit (both routes share one bucket), whatever its body; a body over MemWal's per-route limit (10 KiB, 4 KiB) answers
// 413 before its JSON is parsed. The client address comes from X-Forwarded-For (TRUSTED_PROXY_HOPS=1), so each test
// has addresses of its own.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "undici";
import { startTestStack, type TestStack } from "./support/stack.ts";

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack({ TRUSTED_PROXY_HOPS: "1" });
}, 120_000);
afterAll(async () => t?.teardown());

async function post(path: string, body: string, ip: string) {
  const res = await request(t.stack.relayerUrl + path, { method: "POST", headers: { "content-type": "application/json", "x-forwarded-for": ip }, body });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** A /sponsor body of the right shape whose authorisation is no signature of it (the sidecar refuses it with 401). */
const validShape = () =>
  JSON.stringify({
    sender: `0x${"a".repeat(64)}`,
    transactionBlockKindBytes: Buffer.alloc(12).toString("base64"),
    authTimestamp: Math.floor(Date.now() / 1000),
    authNonce: crypto.randomUUID(),
    authSignature: Buffer.alloc(97, 1).toString("base64"),
  });

describe("sponsor body limits (MemWal's: 10 KiB /sponsor, 4 KiB /sponsor/execute)", () => {
  it("answers 413 with the limit for a body one byte over, before parsing it (not 400 'malformed JSON body')", async () => {
    const sponsor = await post("/sponsor", "x".repeat(10 * 1024 + 1), "203.0.113.1");
    expect(sponsor.status).toBe(413);
    expect(sponsor.body).toMatchObject({ error: "body exceeds the limit of 10240 bytes", limit: 10240 });
    const execute = await post("/sponsor/execute", "x".repeat(4 * 1024 + 1), "203.0.113.2");
    expect(execute.status).toBe(413);
    expect(execute.body).toMatchObject({ limit: 4096 });
    // well-formed JSON over the limit too: the size decides, not the content
    const padded = JSON.stringify({ sender: `0x${"a".repeat(64)}`, pad: "p".repeat(5000) });
    expect((await post("/sponsor/execute", padded, "203.0.113.2")).status).toBe(413);
  });

  it("at the limit the body is parsed and validated: malformed JSON is a 400, a field at fault is named", async () => {
    expect(await post("/sponsor", "x".repeat(10 * 1024), "203.0.113.3")).toMatchObject({ status: 400, body: { error: "malformed JSON body" } });
    const noSender = await post("/sponsor", JSON.stringify({ transactionBlockKindBytes: "AAAAAAAAAAAAAAAA" }), "203.0.113.3");
    expect(noSender).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^sender/) } });
    // the relayer's stricter checks stay: a signature field is required on /sponsor/execute beside MemWal's digest
    const noSig = await post("/sponsor/execute", JSON.stringify({ digest: "1".repeat(43), sender: `0x${"a".repeat(64)}` }), "203.0.113.3");
    expect(noSig).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^signature/) } });
  });
});

describe("the per-address limit (SPONSOR_RATE_LIMIT_PER_MINUTE, default 10)", () => {
  it("counts every request, valid or not: ten bad bodies pass the limiter, the eleventh is refused with 429", async () => {
    const ip = "198.51.100.10";
    const bodies = ["{}", "not json", "x".repeat(10 * 1024 + 1), JSON.stringify({ sender: "0xBAD" }), validShape()];
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await post("/sponsor", bodies[i % bodies.length]!, ip)).status);
    expect(statuses).not.toContain(429);
    expect(statuses).toContain(413);
    expect(statuses).toContain(400);
    const refused = await post("/sponsor", validShape(), ip);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: "rate limit exceeded", layer: "sponsor_ip_burst", limit: "10 requests/minute" });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    // another address is not affected
    expect((await post("/sponsor", "{}", "198.51.100.11")).status).toBe(400);
  });

  it("/sponsor and /sponsor/execute share the bucket", async () => {
    const ip = "198.51.100.20";
    for (let i = 0; i < 5; i++) {
      expect((await post("/sponsor", "{}", ip)).status).toBe(400);
      expect((await post("/sponsor/execute", "{}", ip)).status).toBe(400);
    }
    expect((await post("/sponsor/execute", "{}", ip)).status).toBe(429);
    expect((await post("/sponsor", "{}", ip)).status).toBe(429);
  });
});
