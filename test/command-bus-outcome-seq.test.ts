// dispatchAndAwait answers a stream sequence at or after its outcome's commit: routes wait for read models up to it
// before they answer (the console's reserve, then finalize). nats-server 2.10 hands a JetStream publish to core
// subscribers before its stream has stored it, so the sequence read right after the subscription saw the outcome
// could still be the one before it: the console's reserve then answered before its read model held the bucket, and
// the next call got 404 (test/console-admission.test.ts, about 1 run in 10). 2,000 dispatches against an actor that
// answers at once, each answer's sequence checked against the commit's own: before the fix, 53 of them named the
// sequence before their outcome on this machine with three busy loops beside it (none with the machine idle).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { command, dispatchAndAwait } from "../eventlog/command-bus.ts";
import { EventStore } from "../eventlog/event-store.ts";

let nats: NatsServerHandle;
let log: EventLog;
beforeAll(async () => {
  nats = await startNatsServer();
  log = await openEventLog({ servers: nats.url, name: "command-bus-outcome-seq" });
});
afterAll(async () => {
  await log?.close();
  await nats?.cleanup();
});

describe("dispatchAndAwait", () => {
  it("answers a sequence at or after the outcome's commit, however soon the outcome follows the command", async () => {
    const store = new EventStore(log.js, log.jsm);
    /** The outcome commit's sequence per aggregate id, as its append's acknowledgement gave it. */
    const appended = new Map<string, number>();
    // The actor: every command on cmd.probe.* is answered at once by an outcome event on its aggregate.
    const commands = log.nc.subscribe("cmd.probe.*");
    void (async () => {
      for await (const m of commands) {
        const id = m.subject.slice("cmd.probe.".length);
        const { seq } = await store.append(`probe.${id}`, [{ type: "probe.done", version: 1, data: {} } as never], "any", { causationId: id, correlationId: id, commitId: `probe:${id}` });
        appended.set(id, seq);
      }
    })();
    const early: string[] = [];
    for (let i = 0; i < 2000; i++) {
      const id = randomUUID();
      const r = await dispatchAndAwait(log, {
        commandSubject: `cmd.probe.${id}`,
        eventSubject: `evt.probe.${id}`,
        command: command("probe.start", "probe", id, {}),
        until: (e) => (e.type === "probe.done" ? true : undefined),
        timeoutMs: 5_000,
      });
      expect(r?.value).toBe(true);
      for (let k = 0; !appended.has(id) && k < 100; k++) await new Promise((res) => setTimeout(res, 5));
      if (r!.seq < appended.get(id)!) early.push(`${r!.seq} < ${appended.get(id)}`);
    }
    commands.unsubscribe();
    expect(early, "answers naming a sequence before their outcome's commit").toEqual([]);
  }, 60_000);
});
