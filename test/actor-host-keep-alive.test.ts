// The actor host keeps every command it holds alive while it lives, so the commands consumer's ack wait (ACK_WAIT_MS)
// can be short: it bounds how long a dead host's command waits before another host takes it, never how long an effect
// may run. Two hosts on their own connections to a real nats-server share one consumer; one "dies" by losing its
// connection with a command in flight (no ack, no nak: what kill -9 leaves behind).
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { randomUUID } from "node:crypto";
import { Effect } from "effect";
import { setup } from "xstate";
import { AckPolicy, DeliverPolicy } from "@nats-io/jetstream";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { EventStore } from "../eventlog/event-store.ts";
import { STREAMS, commandFilter, commandSubject } from "../eventlog/subjects.ts";
import { ACK_WAIT_MS, ActorHost, type ActorDefinition } from "../actors/host.ts";
import { silentLogger } from "../config/logger.ts";
import type { CommandEnvelope, NewEvent } from "../schemas/envelope.ts";

const chore = setup({ types: { events: {} as { type: "chore.started" } | { type: "chore.done" } } }).createMachine({
  id: "chore",
  initial: "idle",
  states: {
    idle: { on: { "chore.started": "working" } },
    working: { meta: { effect: "work" }, on: { "chore.done": "done" } },
    done: { type: "final" },
  },
});

const event = (type: string): NewEvent => ({ type, version: 1, data: {} });

/** When each host started the effect. */
interface Start {
  readonly host: string;
  readonly at: number;
}

/** An actor of `aggregateType` whose effect records its start in `starts`, then takes as long as `work`. */
function choreActor(aggregateType: string, host: string, starts: Start[], work: () => Promise<void>): ActorDefinition<CommandEnvelope, typeof chore> {
  return {
    aggregateType,
    machine: chore,
    snapshotVersion: 1,
    decide: (snapshot, command) => (command.type === "chore.start" && snapshot.value === "idle" ? [event("chore.started")] : []),
    effects: { work: () => Effect.promise(async () => (starts.push({ host, at: Date.now() }), await work(), [event("chore.done")])) },
  };
}

let nats: NatsServerHandle;
const logs: EventLog[] = [];
const hosts: ActorHost<CommandEnvelope, typeof chore>[] = [];

async function connection(name: string): Promise<EventLog> {
  const log = await openEventLog({ servers: nats.url, name });
  logs.push(log);
  return log;
}

async function startHost(log: EventLog, def: ActorDefinition<CommandEnvelope, typeof chore>) {
  const host = new ActorHost(log, def, silentLogger, { concurrency: 2 });
  hosts.push(host);
  await host.start();
  return host;
}

async function send(log: EventLog, aggregateType: string): Promise<string> {
  const id = randomUUID();
  const command: CommandEnvelope = { type: "chore.start", version: 1, id, aggregate: `${aggregateType}.${id}`, issued_at: new Date().toISOString(), correlation_id: id, data: {} };
  await log.js.publish(commandSubject(aggregateType, id), JSON.stringify(command), { msgID: id });
  return id;
}

async function eventTypes(log: EventLog, aggregate: string): Promise<string[]> {
  const { events } = await new EventStore(log.js, log.jsm).load(aggregate);
  return events.map((e) => e.event.type);
}

const never = () => new Promise<void>(() => undefined);

/** How soon a dead host's command is taken by another. */
const RESUMED_WITHIN_MS = 6_000;

beforeAll(async () => {
  nats = await startNatsServer();
}, 60_000);
afterAll(async () => {
  await Promise.all(hosts.map((h) => h.stop(0)));
  await Promise.all(logs.map((l) => l.close().catch(() => undefined)));
  await nats?.cleanup();
});

describe("an actor host's commands and the ack wait", () => {
  it("a command held by a host that dies is handled by another host within the ack wait, on a consumer an older host created with 30 s", async () => {
    const type = "chore";
    const starts: Start[] = [];
    const [logA, logB] = [await connection("keep-alive-a"), await connection("keep-alive-b")];
    // What an older deployment left: the durable consumer with the old 30 s ack wait.
    await logA.jsm.consumers.add(STREAMS.commands, { durable_name: `actor-${type}`, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, filter_subject: commandFilter(type), ack_wait: 30_000 * 1_000_000 });
    let startedOnA!: () => void;
    const onA = new Promise<void>((r) => (startedOnA = r));
    await startHost(logA, choreActor(type, "A", starts, () => (startedOnA(), never())));
    expect((await logA.jsm.consumers.info(STREAMS.commands, `actor-${type}`)).config.ack_wait).toBe(ACK_WAIT_MS * 1_000_000);
    const id = await send(logA, type);
    await onA;
    await startHost(logB, choreActor(type, "B", starts, async () => undefined));

    logA.nc.close(); // A dies: its command is neither acknowledged nor handed back
    const diedAt = Date.now();
    await vi.waitFor(() => expect(starts.map((s) => s.host)).toEqual(["A", "B"]), { timeout: 30_000, interval: 50 });
    // Within seconds (the 5 s ack wait, a second of slack), not the 30 s the consumer was created with.
    expect(starts[1].at - diedAt).toBeLessThan(RESUMED_WITHIN_MS);
    await vi.waitFor(async () => expect(await eventTypes(logB, `${type}.${id}`)).toEqual(["chore.started", "chore.done"]), { timeout: 10_000, interval: 100 });
  }, 60_000);

  it("an effect that runs longer than the ack wait is not redelivered while its host lives", async () => {
    const type = "slowchore";
    const starts: Start[] = [];
    const effectMs = 2.5 * ACK_WAIT_MS;
    const slow = () => new Promise<void>((r) => setTimeout(r, effectMs));
    const [logA, logB] = [await connection("long-effect-a"), await connection("long-effect-b")];
    await startHost(logA, choreActor(type, "A", starts, slow));
    await startHost(logB, choreActor(type, "B", starts, slow));
    const id = await send(logA, type);
    await vi.waitFor(async () => expect(await eventTypes(logA, `${type}.${id}`)).toEqual(["chore.started", "chore.done"]), { timeout: effectMs + 15_000, interval: 200 });
    // One start, on one host; JetStream never handed the command out again.
    expect(starts).toHaveLength(1);
    const info = await logA.jsm.consumers.info(STREAMS.commands, `actor-${type}`);
    expect(info.num_redelivered).toBe(0);
    expect(info.num_ack_pending).toBe(0);
  }, 60_000);
});
