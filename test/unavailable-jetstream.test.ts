// JetStream's answers while a cluster elects leaders or a restarted node's JetStream starts are outages to retry, not
// defects: an actor host that took "JetStream system temporarily unavailable" for a bad command set 8 remember jobs
// aside as failed in a short chaos run (issue 32). Each error here is the class nats.js 3.4 throws (jserrors.js,
// jsbaseclient_api.js), and one comes from a real server whose JetStream is off.
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { JetStreamApiError, jetstreamManager } from "@nats-io/jetstream";
import { JetStreamStatusError, jserrors } from "@nats-io/jetstream/internal";
import { isUnavailable } from "../adapters/unavailable.ts";
import { freePort, waitForPort } from "./support/nats-server.ts";

describe("JetStream's transient cluster states", () => {
  it("are outages, by the server's code whatever the wording", () => {
    expect(isUnavailable(new JetStreamApiError({ err_code: 10008, code: 503, description: "JetStream system temporarily unavailable" }))).toBe(true);
    expect(isUnavailable(new JetStreamApiError({ err_code: 10008, code: 503, description: "meta leader not known yet" }))).toBe(true);
    // a direct get's or a pull's status answer
    expect(isUnavailable(new JetStreamStatusError("stream is offline", 503))).toBe(true);
  });

  it("while a bad request, or JetStream refused for the account, stays a failure of its own", () => {
    expect(isUnavailable(new JetStreamApiError({ err_code: 10060, code: 400, description: "expected stream does not match" }))).toBe(false);
    // how nats.js reports the server's 10039: configuration, which waiting does not mend
    const account = new JetStreamApiError({ err_code: 10039, code: 503, description: "jetstream not enabled for account" });
    expect(isUnavailable(new jserrors.JetStreamNotEnabled(account.message, { cause: account }))).toBe(false);
  });
});

describe("a server whose JetStream does not answer (still starting)", () => {
  let server: ReturnType<typeof spawn>;
  let nc: NatsConnection;
  beforeAll(async () => {
    const port = await freePort();
    server = spawn(process.env.NATS_SERVER_BIN ?? "nats-server", ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
    await waitForPort(port);
    nc = await connect({ servers: `127.0.0.1:${port}` });
  });
  afterAll(async () => {
    await nc?.close();
    server?.kill();
  });

  it("is an outage", async () => {
    const err = await jetstreamManager(nc).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(jserrors.JetStreamNotEnabled);
    expect(isUnavailable(err)).toBe(true);
  });
});
