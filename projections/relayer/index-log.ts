// Appends memory-index maintenance events (schemas/relayer/memory-maintenance.ts) and waits for the memory_index projection to
// apply them, so a gateway can answer from the read model what its own write did (read-your-writes): forget's deleted
// count, a manual memory that is recallable on the next request, a restore whose rows are there when it returns.
import type { EventLog } from "../../eventlog/connection.ts";
import { EventStore, type AppendContext } from "../../eventlog/event-store.ts";
import { lastEventSeq } from "../../eventlog/last-message.ts";
import type { MemoryEvent, MemoryEventData, NewMemoryEvent } from "../../schemas/relayer/memory-maintenance.ts";
import type { Db } from "../../db/pool.ts";
import { MEMORY_INDEX, MEMORY_INDEX_FILTER } from "./memory-index.ts";
import { waitForProjection } from "../checkpoint-wait.ts";

export class IndexLog {
  private readonly store: EventStore<MemoryEventData>;

  constructor(
    private readonly log: EventLog,
    private readonly db: Db,
  ) {
    this.store = new EventStore(log.js, log.jsm);
  }

  /** Appends one commit to `evt.<aggregate>`; maintenance aggregates need no optimistic concurrency. */
  append(aggregate: string, events: readonly NewMemoryEvent[], ctx: AppendContext): Promise<{ seq: number; events: MemoryEvent[] }> {
    return this.store.append(aggregate, events, "any", ctx);
  }

  /** Stream sequence of the last event the memory index follows (0 when none): a barrier to wait for. */
  async lastIndexSeq(): Promise<number> {
    return lastEventSeq(this.log.jsm, MEMORY_INDEX_FILTER);
  }

  /** Resolves true once the memory_index projection has applied `seq`, false after `timeoutMs`. */
  waitApplied(seq: number, timeoutMs: number): Promise<boolean> {
    return waitForProjection(this.db, MEMORY_INDEX, seq, timeoutMs);
  }
}
