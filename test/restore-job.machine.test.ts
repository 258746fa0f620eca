// Given events / when command / then events, for the restore-job machine, its decider and its effect's outcomes
// (with in-memory ports: the black-box restore tests are in relayer-maintenance.test.ts).
import { describe, expect, it } from "vitest";
import { Effect } from "effect";
import { initialTransition, type AnyMachineSnapshot } from "xstate";
import { restoreJobMachine } from "../actors/relayer/restore-job.machine.ts";
import { restoreJobActor } from "../actors/relayer/restore-job.actor.ts";
import type { RestorePorts } from "../actors/relayer/restore-namespace.ts";
import { effectOf, evolve } from "../actors/host.ts";
import { RESTORE_EVENTS, type RestoreCommand, type RestoreCommandData } from "../schemas/relayer/restore-job.ts";
import type { EventEnvelope } from "../schemas/envelope.ts";
import type { NewEvent } from "../eventlog/event-store.ts";
import type { BlobObject } from "../adapters/ports.ts";
import { createLogger } from "../config/logger.ts";

const OWNER = "0x" + "a".repeat(64);
const SECRET = "session-secret-xyz";
const ev = (type: string, data: unknown, i = 0): EventEnvelope => ({
  type, version: 1, id: `e${i}`, aggregate: "restore.r1", occurred_at: new Date(0).toISOString(), causation_id: "c", correlation_id: "c", data,
});
const accepted = ev(RESTORE_EVENTS.accepted, { owner: OWNER, namespace: "ns", limit: 10, include_forgotten: false, scope: "owner" });
const completed = ev(RESTORE_EVENTS.completed, { restored: 1, skipped: 0, total: 1, truncated: false, forgotten: 0, failed: 0, applied: true }, 1);
const failed = ev(RESTORE_EVENTS.failed, { error: "catching up", status: 503 }, 1);

const fresh = () => initialTransition(restoreJobMachine)[0];
const replay = (events: EventEnvelope[]) => evolve(restoreJobMachine, fresh(), events);
const commandWith = (data: Partial<RestoreCommandData> = {}): RestoreCommand => ({
  type: "restore.start", version: 1, id: "c1", aggregate: "restore.r1", issued_at: "t", correlation_id: "c",
  data: { owner: OWNER, namespace: "ns", limit: 10, include_forgotten: false, candidate_cap: 100, scope: "owner", credential: { kind: "session", exported: SECRET }, ...data },
});
const logger = createLogger({ sink: () => undefined });

/** In-memory ports: one blob on chain for the namespace, none indexed; the barrier as given. */
function ports(o: { barrierReached?: boolean; blobStoreDown?: boolean } = {}) {
  const appended: { aggregate: string; events: readonly NewEvent[]; commitId?: string }[] = [];
  const blob: BlobObject = { objectId: "o1", blobId: "b1", owner: OWNER, namespace: "ns", packageId: "pkg", createdAtMs: 1_000, size: 3 };
  const p = {
    chain: { packageId: "pkg", listBlobs: async () => [blob] },
    blobs: { read: async () => { if (o.blobStoreDown) throw new Error("down"); return new Uint8Array([1, 2, 3]); } },
    encryption: { decryptMany: async (_owner: string, c: readonly Uint8Array[]) => c.map(() => new TextEncoder().encode("plain")) },
    embedder: { embedDocument: async () => new Float32Array([1, 0]) },
    db: { query: async () => ({ rows: [] }) },
    index: {
      lastIndexSeq: async () => 7,
      waitApplied: async () => o.barrierReached ?? true,
      append: async (aggregate: string, events: readonly NewEvent[], ctx: { commitId?: string }) => {
        appended.push({ aggregate, events, commitId: ctx.commitId });
        return { seq: 8, events: [] };
      },
    },
  } as unknown as RestorePorts;
  return { p, appended };
}

async function runEffect(actorPorts: RestorePorts, command: RestoreCommand): Promise<NewEvent[]> {
  const actor = restoreJobActor(actorPorts, logger);
  return Effect.runPromise(actor.effects.restore({ aggregateId: "r1", context: { owner: command.data.owner, namespace: command.data.namespace, limit: command.data.limit, include_forgotten: command.data.include_forgotten }, command }));
}

describe("restore-job machine", () => {
  it("given no events, when restore.start, then restore.accepted without the credential", () => {
    const events = restoreJobActor(ports().p, logger).decide(fresh(), commandWith());
    expect(events.map((e) => e.type)).toEqual([RESTORE_EVENTS.accepted]);
    expect(JSON.stringify(events)).not.toContain(SECRET);
  });

  it("given an accepted job, when restore.start is redelivered, then nothing new is decided", () => {
    expect(restoreJobActor(ports().p, logger).decide(replay([accepted]), commandWith())).toEqual([]);
  });

  it("walks pending → restoring (effect restore) → completed | failed", () => {
    const restoring = replay([accepted]);
    expect(restoring.value).toBe("restoring");
    expect(effectOf(restoring)).toEqual({ effect: "restore" });
    const done: AnyMachineSnapshot = replay([accepted, completed]);
    expect(done.value).toBe("completed");
    expect(done.status).toBe("done");
    expect(done.context.outcome).toMatchObject({ restored: 1 });
    expect(replay([accepted, failed]).value).toBe("failed");
  });

  it("the effect restores the missing blob under a commit id keyed by the job and its first row", async () => {
    const { p, appended } = ports();
    const events = await runEffect(p, commandWith());
    expect(events).toEqual([{ type: RESTORE_EVENTS.completed, version: 1, data: { restored: 1, skipped: 0, failed: 0, forgotten: 0, total: 1, truncated: false, applied: true } }]);
    expect(appended).toHaveLength(1);
    expect(appended[0].commitId).toBe("r1:b1:1");
    expect(JSON.stringify(appended)).not.toContain(SECRET);
  });

  it("ends with a 503 while the index is behind the log, and a 400 when a missing blob needs a credential not given", async () => {
    expect(await runEffect(ports({ barrierReached: false }).p, commandWith())).toEqual([
      { type: RESTORE_EVENTS.failed, version: 1, data: { error: expect.stringMatching(/catching up/), status: 503, retry_after_secs: 2 } },
    ]);
    const [noKey] = await runEffect(ports().p, commandWith({ credential: undefined }));
    expect(noKey.data).toMatchObject({ status: 400, error: expect.stringMatching(/x-encryption-session/) });
  });

  it("a blob that cannot be downloaded counts as failed, not as an error of the job", async () => {
    const [e] = await runEffect(ports({ blobStoreDown: true }).p, commandWith());
    expect(e.data).toMatchObject({ restored: 0, failed: 1, total: 1 });
  });
});
