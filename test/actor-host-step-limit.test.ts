// The actor host runs at most 16 effects for one delivery. A machine still naming an effect after them has not
// finished its work: the host must not acknowledge the command as if it had (the work would be lost without a word).
// DESIGN: an actor that cannot apply a message sets it aside — a dead letter, an alert, the aggregate's failure. Real
// nats-server, a machine that never rests (each effect's event names the effect again).
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { randomUUID } from "node:crypto";
import { Effect } from "effect";
import { setup } from "xstate";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { EventStore } from "../eventlog/event-store.ts";
import { STREAMS, commandSubject } from "../eventlog/subjects.ts";
import { ActorHost, type ActorDefinition } from "../actors/host.ts";
import { silentLogger } from "../config/logger.ts";
import { parseAlert, ALERT_SUBJECTS, type DeadLetterV1 } from "../schemas/alerts.ts";
import type { CommandEnvelope, NewEvent } from "../schemas/envelope.ts";

const spinning = setup({ types: { events: {} as { type: "spin.started" } | { type: "spin.turned" } | { type: "spin.failed" } } }).createMachine({
  id: "spin",
  initial: "idle",
  states: {
    idle: { on: { "spin.started": "turning" } },
    turning: { meta: { effect: "turn" }, on: { "spin.turned": { target: "turning", reenter: true }, "spin.failed": "failed" } },
    failed: { type: "final" },
  },
});

const event = (type: string): NewEvent => ({ type, version: 1, data: {} });

let nats: NatsServerHandle;
let log: EventLog;
let host: ActorHost<CommandEnvelope, typeof spinning>;
let turns = 0;

beforeAll(async () => {
  nats = await startNatsServer();
  log = await openEventLog({ servers: nats.url, name: "step-limit-test" });
  const def: ActorDefinition<CommandEnvelope, typeof spinning> = {
    aggregateType: "spin",
    machine: spinning,
    snapshotVersion: 1,
    decide: (snapshot, command) => (command.type === "spin.start" && snapshot.value === "idle" ? [event("spin.started")] : []),
    effects: { turn: () => Effect.sync(() => (turns++, [event("spin.turned")])) },
    setAside: () => [event("spin.failed")],
  };
  host = new ActorHost(log, def, silentLogger, { concurrency: 1 });
  await host.start();
}, 60_000);
afterAll(async () => {
  await host?.stop();
  await log?.close();
  await nats?.cleanup();
});

async function lastOn(stream: string, subject: string): Promise<unknown | undefined> {
  const m = await log.jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(() => null);
  return m ? m.json() : undefined;
}

/** The last message on `subject`, once there is one. */
const eventually = (stream: string, subject: string) =>
  vi.waitFor(
    async () => {
      const m = await lastOn(stream, subject);
      if (m === undefined) throw new Error(`nothing on ${subject} yet`);
      return m;
    },
    { timeout: 20_000, interval: 100 },
  );

describe("a machine that still names an effect after the host's step limit", () => {
  it("is set aside with a dead letter and an alert, and its aggregate records the failure, instead of a silent acknowledgement", async () => {
    const id = randomUUID();
    const command: CommandEnvelope = { type: "spin.start", version: 1, id, aggregate: `spin.${id}`, issued_at: new Date().toISOString(), correlation_id: id, data: {} };
    await log.js.publish(commandSubject("spin", id), JSON.stringify(command), { msgID: id });

    const dead = (await eventually(STREAMS.deadLetters, "dlq.actor.spin")) as DeadLetterV1;
    expect(dead).toMatchObject({ source: "actor", name: "spin", aggregate: `spin.${id}`, types: ["spin.start"] });
    expect(dead.error).toMatch(/turn.*16|16.*turn/);
    const alert = parseAlert(JSON.stringify(await eventually(STREAMS.alerts, ALERT_SUBJECTS.deadLetterActor)));
    expect(alert).toMatchObject({ type: ALERT_SUBJECTS.deadLetterActor, severity: "critical" });
    // The effects that did run are facts and stay recorded; the failure follows them.
    const { events } = await new EventStore(log.js, log.jsm).load(`spin.${id}`);
    const types = events.map((e) => e.event.type);
    expect(types[0]).toBe("spin.started");
    expect(types.filter((t) => t === "spin.turned")).toHaveLength(16);
    expect(types.at(-1)).toBe("spin.failed");
    // Set aside, not retried: it turned once per step of one delivery, and the queue no longer holds it.
    expect(turns).toBe(16);
    expect(await lastOn(STREAMS.commands, commandSubject("spin", id))).toBeUndefined();
  }, 60_000);
});
