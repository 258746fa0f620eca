// Pure steps of the actor host's XState machines. xstate's transition() and initialTransition() build a throwaway
// actor for every call — and with it the machine's whole initial state — which cost about four times the step itself
// (200–240 µs against 40–55 µs for an upload job's initial state and three events, measured). The host's machines
// invoke and spawn nothing and change their context only with assign(), which a step applies itself; any other action
// is dropped, as the host always did with the actions transition() returned. So one inert scope per machine serves
// every step.
import { createActor, type AnyActorScope, type AnyMachineSnapshot, type AnyStateMachine, type ContextFrom, type EventObject, type SnapshotFrom } from "xstate";

const scopes = new WeakMap<AnyStateMachine, AnyActorScope>();

function scopeOf(machine: AnyStateMachine): AnyActorScope {
  let scope = scopes.get(machine);
  if (!scope) {
    refuseInvocations(machine);
    const self = createActor(machine);
    scope = { self, id: "", sessionId: "", logger: () => {}, defer: () => {}, emit: () => {}, system: self.system, stopChild: () => {}, actionExecutor: () => {} };
    scopes.set(machine, scope);
  }
  return scope;
}

/** A shared scope would share invoked actors between steps: such a machine needs xstate's own transition(). */
function refuseInvocations(machine: AnyStateMachine): void {
  const visit = (node: { id: string; invoke: readonly unknown[]; states: Record<string, unknown> }) => {
    if (node.invoke.length) throw new Error(`machine ${machine.id}: state ${node.id} invokes an actor, which the actor host's steps do not support`);
    for (const child of Object.values(node.states)) visit(child as typeof node);
  };
  visit(machine.root);
}

/** Machine M's own snapshot type, known to be a machine snapshot also where M is still generic (the host). */
export type SnapshotOf<M extends AnyStateMachine> = SnapshotFrom<M> & AnyMachineSnapshot;

/** The context of machine M's snapshot, as its effects see it. */
export function contextOf<M extends AnyStateMachine>(snapshot: SnapshotOf<M>): ContextFrom<M> {
  return (snapshot as AnyMachineSnapshot).context as ContextFrom<M>;
}

/** The machine's initial snapshot. */
export function initialSnapshot<M extends AnyStateMachine>(machine: M): SnapshotOf<M> {
  return machine.getInitialSnapshot(scopeOf(machine)) as SnapshotOf<M>;
}

/** The snapshot after `event`. */
export function step<M extends AnyStateMachine>(machine: M, snapshot: SnapshotOf<M>, event: EventObject & { readonly data?: unknown }): SnapshotOf<M> {
  return machine.transition(snapshot, event, scopeOf(machine)) as SnapshotOf<M>;
}
