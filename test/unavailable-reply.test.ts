// The relayer's 503 names the backing service that failed (bench 2d saw "a backing service is unavailable" on recalls
// beside long remembers, with nothing to say which), and never the failure's own text.
import { describe, expect, it } from "vitest";
import { errors } from "@nats-io/transport-node";
import { PortError } from "../adapters/ports.ts";
import { toReply } from "../gateway/relayer/routes.ts";

const errorOf = (err: unknown) => {
  const reply = toReply(err);
  expect(reply?.status).toBe(503);
  return (JSON.parse(String(reply!.body)) as { error: string }).error;
};

describe("a 503 from the relayer", () => {
  it("names the port whose service did not answer", () => {
    expect(errorOf(new PortError("encryption", "unavailable", "seal decrypt: TimeoutError"))).toBe("the key servers (encryption) are unavailable; retry shortly");
    expect(errorOf(new PortError("blobs", "unavailable", "read 0xabc: ECONNRESET"))).toBe("the blob store is unavailable; retry shortly");
    expect(errorOf(new PortError("embeddings", "unavailable", "USE-lite worker stopped"))).toBe("the embedder is unavailable; retry shortly");
  });

  it("names Postgres for the pool's and the server's connection failures", () => {
    expect(errorOf(new Error("timeout exceeded when trying to connect"))).toBe("the database (Postgres) is unavailable; retry shortly");
    expect(errorOf(Object.assign(new Error("the database system is shutting down"), { code: "57P03" }))).toBe("the database (Postgres) is unavailable; retry shortly");
  });

  it("names NATS for nats.js's failures, also as the cause of another error", () => {
    expect(errorOf(new errors.TimeoutError())).toBe("the event log (NATS) is unavailable; retry shortly");
    expect(errorOf(new Error("publish failed", { cause: new errors.ClosedConnectionError() }))).toBe("the event log (NATS) is unavailable; retry shortly");
  });

  it("keeps the general wording for an outage it cannot place, and never repeats the failure's text", () => {
    const err = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1 secret-note"), { code: "ECONNREFUSED" });
    expect(errorOf(err)).toBe("a backing service is unavailable; retry shortly");
  });
});
