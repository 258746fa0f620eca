// An effect that only waits on other systems (EffectMeta.waitsOnly: a quilt's store, a transaction's finality) gives
// its command's slot back while it waits, so commands waiting seconds on a network do not cap what the host runs;
// the host still holds no more than `maxHeld` commands (the consumer's max_ack_pending), nor more than `maxHeldBytes`
// of them (a remember command carries its text). A real nats-server.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { randomUUID } from "node:crypto";
import { Effect } from "effect";
import { setup } from "xstate";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.ts";
import { openEventLog, type EventLog } from "../eventlog/connection.ts";
import { commandSubject } from "../eventlog/subjects.ts";
import { ActorHost, type ActorDefinition } from "../actors/host.ts";
import { silentLogger } from "../config/logger.ts";
import type { CommandEnvelope, NewEvent } from "../schemas/envelope.ts";

/** A job that works (on this host), then waits on something else: `waitsOnly` says whether the wait is declared so. */
const jobMachine = (waitsOnly: boolean) =>
  setup({ types: { events: {} as { type: "job.started" } | { type: "job.worked" } | { type: "job.done" } } }).createMachine({
    id: "job",
    initial: "idle",
    states: {
      idle: { on: { "job.started": "working" } },
      working: { meta: { effect: "work" }, on: { "job.worked": "waiting" } },
      waiting: { meta: { effect: "wait", waitsOnly }, on: { "job.done": "done" } },
      done: { type: "final" },
    },
  });
type JobMachine = ReturnType<typeof jobMachine>;

const event = (type: string): NewEvent => ({ type, version: 1, data: {} });

/** The jobs' waits, held until `open`. */
class Gate {
  waiting = 0;
  private opened!: () => void;
  private readonly open$ = new Promise<void>((r) => (this.opened = r));
  pass = async () => {
    this.waiting++;
    await this.open$;
  };
  open = () => this.opened();
}

function jobActor(aggregateType: string, waitsOnly: boolean, gate: Gate): ActorDefinition<CommandEnvelope, JobMachine> {
  return {
    aggregateType,
    machine: jobMachine(waitsOnly),
    snapshotVersion: 1,
    decide: (snapshot, command) => (command.type === "job.start" && snapshot.value === "idle" ? [event("job.started")] : []),
    effects: {
      work: () => Effect.succeed([event("job.worked")]),
      wait: () => Effect.promise(async () => (await gate.pass(), [event("job.done")])),
    },
  };
}

let nats: NatsServerHandle;
let log: EventLog;
const hosts: ActorHost<CommandEnvelope, JobMachine>[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  log = await openEventLog({ servers: nats.url, name: "actor-host-parking" });
}, 60_000);
afterAll(async () => {
  await Promise.all(hosts.map((h) => h.stop(0)));
  await log?.close();
  await nats?.cleanup();
});

async function startHost(def: ActorDefinition<CommandEnvelope, JobMachine>, opts: { concurrency: number; maxHeld?: number; maxHeldBytes?: number }) {
  const host = new ActorHost(log, def, silentLogger, opts);
  hosts.push(host);
  await host.start();
}

/** Sends `n` start commands; each carries `padding` characters, as a remember command carries its text. */
async function send(aggregateType: string, n: number, padding = 0): Promise<void> {
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    const command: CommandEnvelope = { type: "job.start", version: 1, id, aggregate: `${aggregateType}.${id}`, issued_at: new Date().toISOString(), correlation_id: id, data: padding ? { text: "x".repeat(padding) } : {} };
    await log.js.publish(commandSubject(aggregateType, id), JSON.stringify(command), { msgID: id });
  }
}

const settle = () => new Promise((r) => setTimeout(r, 1_000));

describe("an actor host and effects that only wait", () => {
  it("a command waiting in a waitsOnly effect gives its slot to the next: one slot, every job waiting at once", async () => {
    const gate = new Gate();
    await startHost(jobActor("parkjob", true, gate), { concurrency: 1 });
    await send("parkjob", 6);
    await vi.waitFor(() => expect(gate.waiting).toBe(6), { timeout: 10_000, interval: 50 });
    gate.open();
  });

  it("an effect not declared waitsOnly keeps its slot: one slot, one job waiting", async () => {
    const gate = new Gate();
    await startHost(jobActor("holdjob", false, gate), { concurrency: 1 });
    await send("holdjob", 3);
    await vi.waitFor(() => expect(gate.waiting).toBe(1), { timeout: 10_000, interval: 50 });
    await settle();
    expect(gate.waiting).toBe(1);
    gate.open();
    await vi.waitFor(() => expect(gate.waiting).toBe(3), { timeout: 10_000, interval: 50 });
  });

  it("parked commands count toward maxHeld: the host holds no more than that many at once", async () => {
    const gate = new Gate();
    await startHost(jobActor("heldjob", true, gate), { concurrency: 1, maxHeld: 4 });
    await send("heldjob", 7);
    await vi.waitFor(() => expect(gate.waiting).toBe(4), { timeout: 10_000, interval: 50 });
    await settle();
    expect(gate.waiting).toBe(4);
    gate.open();
    await vi.waitFor(() => expect(gate.waiting).toBe(7), { timeout: 10_000, interval: 50 });
  });

  it("parked commands count toward maxHeldBytes: past it a delivery is handed back, and every job still runs", async () => {
    const gate = new Gate();
    // Commands of ~10 KB: two fit in 25,000 bytes, a third does not.
    await startHost(jobActor("bytesjob", true, gate), { concurrency: 1, maxHeldBytes: 25_000 });
    await send("bytesjob", 5, 10_000);
    await vi.waitFor(() => expect(gate.waiting).toBe(2), { timeout: 10_000, interval: 50 });
    await settle();
    expect(gate.waiting).toBe(2);
    gate.open();
    await vi.waitFor(() => expect(gate.waiting).toBe(5), { timeout: 20_000, interval: 50 });
  });

  it("a host holding nothing takes a command larger than maxHeldBytes: no command is too big to run", async () => {
    const gate = new Gate();
    await startHost(jobActor("bigjob", true, gate), { concurrency: 1, maxHeldBytes: 1_000 });
    await send("bigjob", 2, 5_000);
    await vi.waitFor(() => expect(gate.waiting).toBe(1), { timeout: 10_000, interval: 50 });
    await settle();
    expect(gate.waiting).toBe(1);
    gate.open();
    await vi.waitFor(() => expect(gate.waiting).toBe(2), { timeout: 20_000, interval: 50 });
  });
});
