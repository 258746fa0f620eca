// Black-box: an agent signs requests, remembers text, polls its job and recalls it by meaning, over HTTP
// against the started stack (real NATS JetStream, Postgres with pgvector, key servers, blob store).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "undici";
import { randomUUID } from "node:crypto";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { RelayerError, type MemrelayClient } from "../client/memrelay-client.ts";
import { RequestSigner } from "../client/signer.ts";
import { removeDelegateKey } from "../adapters/chain/local/accounts.ts";
import { createConnection } from "node:net";
import { storedBlobId } from "./support/blob-ids.ts";

let t: TestStack;
let alice: MemrelayClient;
let bob: MemrelayClient;

beforeAll(async () => {
  t = await startTestStack({ CORS_ALLOWED_ORIGINS: "https://app.example" });
  [alice, bob] = await Promise.all([t.client(), t.client()]);
}, 120_000);
afterAll(async () => t?.teardown());

const raw = async (method: string, path: string, headers: Record<string, string> = {}, body?: string) => {
  const res = await request(t.stack.relayerUrl + path, { method: method as "GET", headers, body });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : undefined };
};

describe("remember → poll → recall", () => {
  it("remembers, reports running then done, and recalls by meaning", async () => {
    const texts = ["My cat Luna loves sardines", "I work as a marine biologist in Lisbon", "Our wedding anniversary is on June 3rd"];
    const accepted = await Promise.all(texts.map((x) => alice.remember(x, "personal")));
    for (const a of accepted) expect(a.status).toBe("running");
    // Read-your-writes: a poll right after the 202 is never a 404 for the owner.
    const first = await alice.job(accepted[0].job_id);
    expect(["running", "uploaded", "done"]).toContain(first.status);
    const done = await Promise.all(accepted.map((a) => alice.waitForJob(a.job_id)));
    for (const j of done) {
      expect(j.status).toBe("done");
      expect(storedBlobId(j.blob_id!), j.blob_id).toBe(true);
    }
    const r = await alice.recall("which food does my cat love?", { namespace: "personal", limit: 2 });
    expect(r.total).toBe(2);
    expect(r.results[0].text).toBe(texts[0]);
    expect(r.results[0].score).toBeUndefined();
    expect(r.results[0].distance).toBeLessThan(r.results[1].distance);
  });

  it("remembers and waits in one request (POST /api/remember?wait=): 200 once recallable", async () => {
    const j = await alice.call<{ job_id: string; status: string; blob_id?: string; namespace: string }>("POST", "/api/remember?wait=20", { text: "My bike is a green Bianchi", namespace: "waited" });
    expect(j).toMatchObject({ status: "done", namespace: "waited" });
    expect(storedBlobId(j.blob_id!), j.blob_id).toBe(true);
    const r = await alice.recall("what bike do I ride?", { namespace: "waited", limit: 1 });
    expect(r.results[0].text).toBe("My bike is a green Bianchi");
    expect((await alice.rememberAndWait("My bike's name is Verde", "waited")).status).toBe("done");
  });

  it("never answers 404 to the owner between the 202 and done, however early and often it polls", async () => {
    const accepted = await Promise.all(Array.from({ length: 40 }, (_, i) => alice.remember(`poll test fact number ${i}`, "polling")));
    const seen = new Set<string>();
    await Promise.all(
      accepted.map(async ({ job_id }) => {
        for (;;) {
          const j = await alice.job(job_id); // throws RelayerError on a 404
          seen.add(j.status);
          if (j.status === "done") return;
          expect(j.status).not.toBe("failed");
        }
      }),
    );
    expect(seen.has("done")).toBe(true);
  }, 60_000);

  it("isolates owners and namespaces: another owner's job is a 404 and recall never crosses owners", async () => {
    const a = await alice.remember("alice's secret: the vault code is 4711", "vault");
    await alice.waitForJob(a.job_id);
    await expect(bob.job(a.job_id)).rejects.toMatchObject({ status: 404 });
    await expect(bob.job(randomUUID())).rejects.toMatchObject({ status: 404 });
    const r = await bob.recall("vault code", { namespace: "vault" });
    expect(r.total).toBe(0);
    const other = await alice.recall("vault code", { namespace: "elsewhere" });
    expect(other.total).toBe(0);
  });

  it("bulk remember keeps order and bulk status reports not_found for unknown ids", async () => {
    const res = await alice.rememberBulk([{ text: "one fact" }, { text: "two facts", namespace: "b" }]);
    expect(res.total).toBe(2);
    await Promise.all(res.job_ids.map((id) => alice.waitForJob(id)));
    const unknown = randomUUID();
    const st = await alice.bulkStatus([res.job_ids[1], unknown, res.job_ids[0], res.job_ids[1]]);
    expect(st.results.map((x) => x.job_id)).toEqual([res.job_ids[1], unknown, res.job_ids[0], res.job_ids[1]]);
    expect(st.results.map((x) => x.status)).toEqual(["done", "not_found", "done", "done"]);
    const foreign = await bob.bulkStatus([res.job_ids[0]]);
    expect(foreign.results[0].status).toBe("not_found");
  });

  it("composite scoring returns a score and ranks by importance and recency", async () => {
    const r = await alice.recall("cat", { namespace: "personal", limit: 3, scoring_weights: { semantic: 1, recency: 1, recency_half_life_days: 7, importance: 0.5 } });
    expect(r.results.length).toBe(3);
    for (const x of r.results) expect(typeof x.score).toBe("number");
    const scores = r.results.map((x) => x.score!);
    expect([...scores].sort((p, q) => q - p)).toEqual(scores);
  });
});

describe("authentication", () => {
  const body = JSON.stringify({ text: "hello" });

  it("refuses missing, malformed and wrong signatures with 401 and a JSON error", async () => {
    expect((await raw("POST", "/api/remember", { "content-type": "application/json" }, body)).status).toBe(401);
    const h = alice.signer.headers("POST", "/api/remember", body);
    const bad = { ...h, "x-signature": h["x-signature"].replace(/^./, (c) => (c === "0" ? "1" : "0")) };
    const r = await raw("POST", "/api/remember", bad, body);
    expect(r.status).toBe(401);
    expect(typeof r.body.error).toBe("string");
    expect((await raw("POST", "/api/remember", { ...h, "x-public-key": "zz" }, body)).status).toBe(401);
    expect((await raw("POST", "/api/remember", { ...h, "x-nonce": "not-a-uuid" }, body)).status).toBe(401);
    // The signature covers the body: a different body with the same headers fails.
    expect((await raw("POST", "/api/remember", alice.signer.headers("POST", "/api/remember", body), JSON.stringify({ text: "other" }))).status).toBe(401);
  });

  it("refuses a stale timestamp with x-auth-error ERR_TIMESTAMP_OUT_OF_BOUNDS", async () => {
    const h = alice.signer.headers("POST", "/api/remember", body, { timestamp: Math.floor(Date.now() / 1000) - 301 });
    const r = await raw("POST", "/api/remember", h, body);
    expect(r.status).toBe(401);
    expect(r.headers["x-auth-error"]).toBe("ERR_TIMESTAMP_OUT_OF_BOUNDS");
  });

  it("refuses a reused nonce", async () => {
    const h = alice.signer.headers("POST", "/api/remember", body);
    expect((await raw("POST", "/api/remember", h, body)).status).toBe(202);
    // another request under the same nonce, correctly signed
    const other = JSON.stringify({ text: "hello again" });
    const again = await raw("POST", "/api/remember", alice.signer.headers("POST", "/api/remember", other, { nonce: h["x-nonce"] }), other);
    expect(again.status).toBe(401);
    expect(again.headers["x-auth-error"]).toBe("ERR_NONCE_REUSED");
    // the same on a route whose nonce is claimed in the nonce store, where even the very same request is refused
    const path = `/api/remember/${randomUUID()}`;
    const g = alice.signer.headers("GET", path);
    expect((await raw("GET", path, g)).status).toBe(404);
    expect((await raw("GET", path, g)).headers["x-auth-error"]).toBe("ERR_NONCE_REUSED");
  });

  // A client whose answer was lost (a gateway killed after publishing, a publish that timed out yet landed) sends the
  // same signed request again: it gets the first answer's job ids, and the memory is stored once (issue 32).
  it("answers the very same signed remember or bulk remember again with its job ids and stores each memory once", async () => {
    const ns = `replayed-${randomUUID()}`;
    const one = JSON.stringify({ text: "The spare key is under the blue flowerpot", namespace: ns });
    const h = alice.signer.headers("POST", "/api/remember", one);
    const first = await raw("POST", "/api/remember", h, one);
    expect(first.status).toBe(202);
    const again = await raw("POST", "/api/remember", h, one);
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(again.body.job_id).toBe(first.body.job_id);

    const bulk = JSON.stringify({ items: [{ text: "The boat is moored at pier seven", namespace: ns }, { text: "The boat's engine was serviced in March", namespace: ns }] });
    const b = alice.signer.headers("POST", "/api/remember/bulk", bulk);
    const firstBulk = await raw("POST", "/api/remember/bulk", b, bulk);
    expect(firstBulk.status).toBe(202);
    const [bulkAgain, otherBulk] = await Promise.all([
      raw("POST", "/api/remember/bulk", b, bulk),
      (async () => {
        const other = JSON.stringify({ items: [{ text: "The boat is called Aurora", namespace: ns }] });
        return raw("POST", "/api/remember/bulk", alice.signer.headers("POST", "/api/remember/bulk", other, { nonce: b["x-nonce"] }), other);
      })(),
    ]);
    expect(bulkAgain.status, JSON.stringify(bulkAgain.body)).toBe(202);
    expect(bulkAgain.body.job_ids).toEqual(firstBulk.body.job_ids);
    expect(otherBulk.status).toBe(401);
    expect(otherBulk.headers["x-auth-error"]).toBe("ERR_NONCE_REUSED");
    const jobIds: string[] = [first.body.job_id, ...firstBulk.body.job_ids];
    for (const j of await Promise.all(jobIds.map((id) => alice.waitForJob(id)))) expect(j.status).toBe("done");
    const r = await alice.recall("where is the spare key and the boat?", { namespace: ns, limit: 10 });
    expect(r.results.map((x) => x.text).sort()).toEqual(["The boat is moored at pier seven", "The boat's engine was serviced in March", "The spare key is under the blue flowerpot"]);
  });

  it("signs GET requests over the empty body and the raw path with query", async () => {
    const path = `/api/remember/${randomUUID()}?x=1`;
    const r = await raw("GET", path, alice.signer.headers("GET", path));
    expect(r.status).toBe(404);
  });

  it("refuses an unknown key, and a removed key on the very next request", async () => {
    const stranger = new RequestSigner(new Uint8Array(32).fill(7));
    expect((await raw("POST", "/api/remember", stranger.headers("POST", "/api/remember", body), body)).status).toBe(401);
    const carol = await t.stack.createIdentity();
    const client = await t.client(carol);
    await client.remember("still allowed");
    await removeDelegateKey(t.stack.chain, { ownerKey: carol.ownerSecretKey, publicKey: carol.delegatePublicKeyHex, accountId: carol.accountId });
    await expect(client.remember("now refused")).rejects.toMatchObject({ status: 401 });
  });
});

describe("bad input", () => {
  const post = async (path: string, payload: string) => raw("POST", path, { ...alice.signer.headers("POST", path, payload), "content-type": "application/json" }, payload);

  it.each([
    ["malformed JSON", "/api/remember", "{not json"],
    ["wrong type", "/api/remember", JSON.stringify({ text: 5 })],
    ["empty text", "/api/remember", JSON.stringify({ text: "  " })],
    ["namespace over 255 bytes", "/api/remember", JSON.stringify({ text: "x", namespace: "é".repeat(128) })],
    ["limit zero", "/api/recall", JSON.stringify({ query: "x", limit: 0 })],
    ["limit fractional", "/api/recall", JSON.stringify({ query: "x", limit: 1.5 })],
    ["bulk with 0 items", "/api/remember/bulk", JSON.stringify({ items: [] })],
    ["bulk with 21 items", "/api/remember/bulk", JSON.stringify({ items: Array.from({ length: 21 }, () => ({ text: "x" })) })],
    ["negative weight", "/api/recall", JSON.stringify({ query: "x", scoring_weights: { recency: -1 } })],
    ["half-life zero", "/api/recall", JSON.stringify({ query: "x", scoring_weights: { recency: 1, recency_half_life_days: 0 } })],
    ["non-finite weight", "/api/recall", '{"query":"x","scoring_weights":{"semantic":1e999}}'],
  ])("%s → 400 with {error}", async (_name, path, payload) => {
    const r = await post(path, payload);
    expect(r.status).toBe(400);
    expect(typeof r.body.error).toBe("string");
  });

  it("answers 413 for a body over the limit and 404 for an unknown route", async () => {
    const big = JSON.stringify({ items: [{ text: "x".repeat(2_100_000) }] });
    const r = await raw("POST", "/api/remember/bulk", { ...alice.signer.headers("POST", "/api/remember/bulk", big), "content-type": "application/json" }, big);
    expect(r.status).toBe(413);
    expect(r.body.error).toMatch(/2000000/);
    const nf = await raw("GET", "/nope");
    expect(nf.status).toBe(404);
    expect(nf.body.error).toBeTruthy();
  });

  it("keeps 202 namespace default and exposes health, version, config and metrics", async () => {
    const h = await raw("GET", "/health");
    expect(h.status).toBe(200);
    expect(h.body.apiVersion).toBe("1.0.0");
    expect((await raw("GET", "/version")).body.featureFlags["auth.encryptionSessionHeader"]).toBe(true);
    const c = await raw("GET", "/config");
    expect(c.body.packageId).toMatch(/^0x/);
    const m = await request(t.stack.relayerUrl + "/metrics");
    expect(await m.body.text()).toMatch(/memrelay_http_requests_total/);
  });

  it("RelayerError carries the status", () => {
    expect(new RelayerError(400, { error: "x" }, {}).status).toBe(400);
  });
});

describe("transport", () => {
  it("allows only configured browser origins (deny by default)", async () => {
    const pre = (origin: string) => request(t.stack.relayerUrl + "/api/recall", { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST" } });
    const ok = await pre("https://app.example");
    expect(ok.statusCode).toBe(204);
    expect(ok.headers["access-control-allow-origin"]).toBe("https://app.example");
    await ok.body.dump();
    const denied = await pre("https://evil.example");
    expect(denied.statusCode).toBe(403);
    expect(denied.headers["access-control-allow-origin"]).toBeUndefined();
    await denied.body.dump();
    const simple = await request(t.stack.relayerUrl + "/health", { headers: { origin: "https://evil.example" } });
    expect(simple.headers["access-control-allow-origin"]).toBeUndefined();
    await simple.body.dump();
  });

  it("leaves nothing written when the client disconnects mid-request", async () => {
    // Only the gateway publishes commands: an unchanged CMD sequence means nothing was accepted or written.
    const cmdInfo = async () => (await t.stack.log.jsm.streams.info("CMD")).state.last_seq;
    const seqBefore = await cmdInfo();
    const body = JSON.stringify({ text: "half of this never arrives" });
    const headers = { ...alice.signer.headers("POST", "/api/remember", body), "content-type": "application/json", "content-length": String(body.length) };
    const url = new URL(t.stack.relayerUrl);
    await new Promise<void>((resolve) => {
      const sock = createConnection({ host: url.hostname, port: Number(url.port) }, () => {
        sock.write(`POST /api/remember HTTP/1.1\r\nhost: x\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join("\r\n")}\r\n\r\n${body.slice(0, 10)}`);
        setTimeout(() => { sock.destroy(); resolve(); }, 100);
      });
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(await cmdInfo()).toBe(seqBefore);
  });
});
