// An event log held in memory, for given/when/then tests of deciders through the aggregate store without NATS:
// commits numbered like stream sequences, the same optimistic check as a JetStream append (ConcurrencyConflict when
// the aggregate's last commit is not the one expected), and a hook to slip a concurrent writer in before an append.
import type { CommitLog } from "../../eventlog/aggregate-store.ts";
import type { LastCommit } from "../../eventlog/command-bus.ts";
import { ConcurrencyConflict, envelope, type NewEvent } from "../../eventlog/event-store.ts";
import { aggregateEventSubject } from "../../eventlog/subjects.ts";
import type { EventEnvelope } from "../../schemas/envelope.ts";

export class InMemoryCommitLog implements CommitLog {
  private seq = 0;
  private readonly commits = new Map<string, LastCommit[]>();
  /** Runs before each append's check (not before its own appends): a test's concurrent writer. */
  beforeAppend: ((aggregate: string) => Promise<void>) | null = null;
  private interleaving = false;
  appends = 0;

  async last(aggregate: string): Promise<LastCommit | null> {
    return this.commits.get(aggregate)?.at(-1) ?? null;
  }

  async append(aggregate: string, events: readonly NewEvent[], expectedSeq: number | "any", ctx: { correlationId: string; causationId: string }): Promise<{ seq: number }> {
    this.appends++;
    if (this.beforeAppend && !this.interleaving) {
      this.interleaving = true;
      try {
        await this.beforeAppend(aggregate);
      } finally {
        this.interleaving = false;
      }
    }
    const lastSeq = (await this.last(aggregate))?.seq ?? 0;
    if (expectedSeq !== "any" && expectedSeq !== lastSeq) throw new ConcurrencyConflict(aggregateEventSubject(aggregate), expectedSeq);
    const commit: LastCommit = { seq: ++this.seq, events: events.map((e) => envelope(aggregate, e, ctx)) };
    this.commits.set(aggregate, [...(this.commits.get(aggregate) ?? []), commit]);
    return { seq: commit.seq };
  }

  /** Every event of the aggregate, in order. */
  events(aggregate: string): EventEnvelope[] {
    return (this.commits.get(aggregate) ?? []).flatMap((c) => c.events);
  }
}
