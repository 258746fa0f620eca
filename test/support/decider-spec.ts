// Given/when/then for deciders (the shape of Emmett's DeciderSpecification): given the events already on an
// aggregate, when a decision is handled by the aggregate store over an in-memory log, then these events are appended
// and this result answered, or this domain error and nothing appended. Starts neither NATS nor Postgres.
import { expect } from "vitest";
import { AggregateStore, type Decision, type Fold } from "../../eventlog/aggregate-store.ts";
import type { NewEvent } from "../../eventlog/event-store.ts";
import { InMemoryCommitLog } from "./in-memory-commit-log.ts";

const AGGREGATE = "spec.subject";
const ctx = { correlationId: "spec", causationId: "spec" };

/** Type and data of events: what a decision is judged on (ids and timestamps of the envelope are the log's). */
const facts = (events: readonly { type: string; data: unknown }[]) => events.map(({ type, data }) => ({ type, data }));

/**
 * `history: "one commit"` for an aggregate whose state is folded over all its events (an actor's machine, e.g. the
 * console key's): the aggregate store folds an aggregate's last commit only, so the given events go in as one.
 */
export function deciderSpec<S, E>(fold: Fold<S, E>, opts: { history?: "commit per event" | "one commit" } = {}) {
  return {
    given: (...history: NewEvent[]) => ({
      when: <R, Err>(decide: (state: S) => Decision<R, Err>) => {
        const handled = async () => {
          const log = new InMemoryCommitLog();
          if (opts.history === "one commit") {
            if (history.length) await log.append(AGGREGATE, history, "any", ctx);
          } else for (const e of history) await log.append(AGGREGATE, [e], "any", ctx);
          const outcome = await new AggregateStore(log).handle(AGGREGATE, fold, decide);
          return { outcome, appended: log.events(AGGREGATE).slice(history.length) };
        };
        return {
          async then(events: readonly NewEvent[], result?: R): Promise<void> {
            const { outcome, appended } = await handled();
            expect(outcome.ok ? null : outcome.error).toBeNull();
            expect(facts(appended)).toEqual(facts(events));
            if (result !== undefined && outcome.ok) expect(outcome.result).toEqual(result);
          },
          async thenRejects(error: Err): Promise<void> {
            const { outcome, appended } = await handled();
            expect(outcome.ok ? null : outcome.error).toEqual(error);
            expect(appended).toEqual([]);
          },
        };
      },
    }),
  };
}
