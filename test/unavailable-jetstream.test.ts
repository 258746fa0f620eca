// JetStream's answers while a cluster elects leaders or a restarted node's JetStream starts are outages to retry, not
// defects: an actor host that took "JetStream system temporarily unavailable" for a bad command set 8 remember jobs
// aside as failed in a short chaos run (issue 32).
import { describe, expect, it } from "vitest";
import { JetStreamApiError } from "@nats-io/jetstream";
import { isUnavailable } from "../adapters/unavailable.ts";

describe("JetStream's transient cluster states", () => {
  it("are outages", () => {
    expect(isUnavailable(new JetStreamApiError({ err_code: 10008, code: 503, description: "JetStream system temporarily unavailable" }))).toBe(true);
    expect(isUnavailable(new Error("jetstream is not enabled"))).toBe(true);
  });

  it("while a bad request stays a failure of its own", () => {
    expect(isUnavailable(new JetStreamApiError({ err_code: 10060, code: 400, description: "expected stream does not match" }))).toBe(false);
  });
});
