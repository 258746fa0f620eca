// The quilt aggregate's log (schemas/relayer/quilt.ts) for the remember job: the quilt writer seals a quilt's members
// here before storing it, and a job that finds no live writer for the quilt it joined (its actor host died, or the job
// was redelivered to another host) learns the quilt's fate here:
//   - unsealed: nobody stored it; the job abandons the key (first fact wins) so a writer still alive cannot seal it
//     later, and joins another quilt;
//   - abandoned, or sealed without the job: the job is in no quilt; it joins another;
//   - sealed with the job: the job takes its patch id from `quilt.stored`, or rebuilds the quilt from its members'
//     recorded ciphertexts (`job.encrypted`) and stores it again. Same patches in the same order make the same bytes,
//     so the same quilt blob id, and the publisher answers `alreadyCertified` for a quilt it stored before.
// Jobs of one process recovering the same quilt share one rebuild.
import { ConcurrencyConflict, EventStore } from "../../eventlog/event-store.ts";
import type { EventLog } from "../../eventlog/connection.ts";
import { JOB, JOB_EVENTS, type JobEventData } from "../../schemas/relayer/remember-job.ts";
import { QUILT, QUILT_EVENTS, quiltEvent, quiltFate, type QuiltEventData, type QuiltFate, type QuiltMemberRef, type QuiltStored } from "../../schemas/relayer/quilt.ts";
import { QuiltAbandoned, type QuiltOutcome, type QuiltSealer, type StoreQuilt } from "../../adapters/blobs/quilt-writer.ts";

/** Member ciphertexts read at once while rebuilding (each read is a short-lived consumer on the event log). */
const REBUILD_READS = 16;

const aggregate = (key: string) => `${QUILT}.${key}`;

export class QuiltLog implements QuiltSealer {
  private readonly quilts: EventStore<QuiltEventData>;
  private readonly jobs: EventStore<JobEventData>;
  private readonly rebuilding = new Map<string, Promise<QuiltStored>>();

  constructor(log: EventLog, private readonly storeQuilt: StoreQuilt) {
    this.quilts = new EventStore<QuiltEventData>(log.js, log.jsm);
    this.jobs = new EventStore<JobEventData>(log.js, log.jsm);
  }

  async seal(key: string, members: readonly QuiltMemberRef[]): Promise<void> {
    try {
      await this.quilts.append(aggregate(key), [quiltEvent(QUILT_EVENTS.sealed, { members })], 0, { causationId: key, correlationId: key, commitId: `quilt:${key}:sealed` });
    } catch (err) {
      if (err instanceof ConcurrencyConflict) throw new QuiltAbandoned(`quilt ${key} was abandoned before it was sealed`);
      throw err;
    }
  }

  async stored(key: string, stored: QuiltStored): Promise<void> {
    // Any sequence: a second `stored` (two rebuilds) names the same quilt, and the fold keeps the first.
    await this.quilts.append(aggregate(key), [quiltEvent(QUILT_EVENTS.stored, stored)], "any", { causationId: key, correlationId: key, commitId: `quilt:${key}:stored` });
  }

  async fate(key: string): Promise<QuiltFate> {
    const { events } = await this.quilts.load(aggregate(key));
    return quiltFate(events);
  }

  /** Job `jobId`'s outcome in quilt `key`, from the log: its patch, or `left` when the quilt does not hold it. */
  async recover(key: string, jobId: string): Promise<QuiltOutcome> {
    for (;;) {
      const fate = await this.fate(key);
      if (fate.state === "unsealed") {
        if (await this.abandon(key, jobId)) return { kind: "left", reason: `quilt ${key} was never sealed (abandoned)` };
        continue; // sealed or abandoned meanwhile: read its fate again
      }
      if (fate.state === "abandoned") return { kind: "left", reason: `quilt ${key} was abandoned` };
      if (!fate.members.some((m) => m.job_id === jobId)) return { kind: "left", reason: `quilt ${key} was sealed without this job` };
      const stored = fate.stored ?? (await this.rebuildOnce(key, fate.members));
      const patch = stored.patches.find((p) => p.job_id === jobId);
      if (!patch) throw new Error(`quilt ${key} was stored without the patch of a member`);
      return { kind: "stored", quiltId: stored.quilt_id, quiltPatchId: patch.patch_id };
    }
  }

  /** Abandons an unsealed key; false when its fate was decided first. */
  private async abandon(key: string, jobId: string): Promise<boolean> {
    try {
      await this.quilts.append(aggregate(key), [quiltEvent(QUILT_EVENTS.abandoned, { by_job: jobId })], 0, { causationId: jobId, correlationId: key, commitId: `quilt:${key}:abandoned` });
      return true;
    } catch (err) {
      if (err instanceof ConcurrencyConflict) return false;
      throw err;
    }
  }

  private rebuildOnce(key: string, members: readonly QuiltMemberRef[]): Promise<QuiltStored> {
    let p = this.rebuilding.get(key);
    if (!p) {
      p = this.rebuild(key, members).finally(() => this.rebuilding.delete(key));
      this.rebuilding.set(key, p);
    }
    return p;
  }

  /** Stores the sealed quilt again from its members' recorded ciphertexts, and records the answer. */
  private async rebuild(key: string, members: readonly QuiltMemberRef[]): Promise<QuiltStored> {
    const contents: Uint8Array[] = [];
    for (let i = 0; i < members.length; i += REBUILD_READS) {
      contents.push(...(await Promise.all(members.slice(i, i + REBUILD_READS).map((m) => this.ciphertextOf(m.job_id)))));
    }
    const { quiltId, patchIds } = await this.storeQuilt(members.map((m, i) => ({ identifier: m.identifier, contents: contents[i] })));
    const patches = members.map((m) => {
      const patch_id = patchIds.get(m.identifier);
      if (!patch_id) throw new Error(`the publisher stored quilt ${quiltId} without patch ${m.identifier}`);
      return { job_id: m.job_id, patch_id };
    });
    const stored: QuiltStored = { quilt_id: quiltId, patches };
    await this.stored(key, stored);
    return stored;
  }

  /** The ciphertext a member recorded before it joined (a sealed member always has one). */
  private async ciphertextOf(jobId: string): Promise<Uint8Array> {
    const { events } = await this.jobs.load(`${JOB}.${jobId}`);
    const encrypted = events.map((e) => e.event).find((e) => e.type === JOB_EVENTS.encrypted);
    if (!encrypted || encrypted.type !== JOB_EVENTS.encrypted) throw new Error(`quilt member ${jobId} has no recorded ciphertext`);
    return Buffer.from(encrypted.data.ciphertext, "base64");
  }
}
