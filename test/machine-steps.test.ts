// The actor host's machine steps (actors/machine-steps.ts) against xstate's own transition(): every machine the host
// runs, every event it knows from every state reached in up to three steps, the same snapshot (value, context, status).
import { describe, expect, it } from "vitest";
import { createMachine, initialTransition, transition, type AnyMachineSnapshot, type AnyStateMachine } from "xstate";
import { initialSnapshot, step } from "../actors/machine-steps.ts";
import { bucketMachine } from "../actors/console/bucket.machine.ts";
import { fileMachine } from "../actors/console/file.machine.ts";
import { keyMachine } from "../actors/console/key.machine.ts";
import { sponsorMachine } from "../actors/console/sponsor.machine.ts";
import { uploadMachine } from "../actors/console/upload.machine.ts";
import { rememberJobMachine } from "../actors/relayer/remember-job.machine.ts";
import { restoreJobMachine } from "../actors/relayer/restore-job.machine.ts";

const machines: AnyStateMachine[] = [bucketMachine, fileMachine, keyMachine, sponsorMachine, uploadMachine, rememberJobMachine, restoreJobMachine];
const view = (s: AnyMachineSnapshot) => JSON.stringify({ value: s.value, context: s.context, status: s.status, meta: s.getMeta() });
const attempt = (f: () => AnyMachineSnapshot) => {
  try {
    return view(f());
  } catch (err) {
    return `throws ${(err as Error).message}`;
  }
};

describe("actor host machine steps", () => {
  for (const machine of machines) {
    it(`${machine.id}: the same snapshots as xstate's transition()`, () => {
      const events = machine.events.filter((t) => !t.startsWith("xstate."));
      expect(events.length).toBeGreaterThan(0);
      expect(view(initialSnapshot(machine))).toBe(view(initialTransition(machine)[0]));
      let frontier: AnyMachineSnapshot[] = [initialTransition(machine)[0]];
      let compared = 0;
      for (let depth = 0; depth < 3; depth++) {
        const next: AnyMachineSnapshot[] = [];
        for (const s of frontier) {
          for (const type of events) {
            const event = { type, data: { n: depth, code: "c", message: "m" } };
            const ours = attempt(() => step(machine, s, event));
            expect(ours).toBe(attempt(() => transition(machine, s, event)[0]));
            compared++;
            if (!ours.startsWith("throws")) next.push(transition(machine, s, event)[0]);
          }
        }
        frontier = next.slice(0, 50);
      }
      expect(compared).toBeGreaterThan(events.length);
    });
  }

  it("refuses a machine that invokes actors (a shared scope would share them)", () => {
    const invoking = createMachine({ id: "invoking", initial: "a", states: { a: { invoke: { src: createMachine({}) } } } });
    expect(() => initialSnapshot(invoking)).toThrow(/invokes an actor/);
  });
});
