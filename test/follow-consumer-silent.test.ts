// A follower of the event log whose node stops answering (paused with SIGSTOP, as a frozen host is): nats.js keeps
// asking that node for its consumer's info and pulling again for as long as the pause lasts, so a projection runner
// waited out the whole pause (issue 32's long chaos run: a 20 s pause of a NATS node). The follow ends instead, as an
// outage, after a few missed heartbeats, and the runner starts a new consumer from its checkpoints.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { ConsumerSilent, followConsumer } from "../eventlog/follow-consumer.ts";
import { EventStore } from "../eventlog/event-store.ts";
import { isUnavailable } from "../adapters/unavailable.ts";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";

let server: NatsServerHandle;
let log: EventLog;

beforeAll(async () => {
  server = await startNatsServer();
  log = await openEventLog({ servers: server.url, name: "follow-consumer-silent" });
  await new EventStore(log.js, log.jsm).append("job.silent", [{ type: "job.noted", version: 1, data: {} }], "any", { causationId: "c", correlationId: "c" });
});

afterAll(async () => {
  if (server?.pid) process.kill(server.pid, "SIGCONT");
  await log?.close();
  await server?.cleanup();
});

describe("a follower whose node stops answering", () => {
  it("ends as an outage within seconds of the pause, instead of waiting it out", async () => {
    const consumer = await followConsumer(log, "evt.job.>", 0, 16);
    const ended = (async () => {
      for await (const m of consumer.messages) consumer.check(m);
    })().then(
      () => "ended without an error",
      (err: unknown) => err,
    );
    // idle and caught up: heartbeats keep it alive
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await Promise.race([ended, new Promise((r) => setTimeout(() => r("following"), 0))])).toBe("following");

    const paused = Date.now();
    process.kill(server.pid!, "SIGSTOP");
    try {
      const err = await Promise.race([ended, new Promise((r) => setTimeout(() => r("still waiting after 10 s"), 10_000))]);
      expect(err).toBeInstanceOf(ConsumerSilent);
      expect(isUnavailable(err)).toBe(true);
      expect(Date.now() - paused).toBeLessThan(6_000);
    } finally {
      process.kill(server.pid!, "SIGCONT");
      await consumer.close();
    }
  }, 30_000);
});
