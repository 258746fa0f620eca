// Gathers the ciphertexts of remember jobs in flight (any owner's) into Walrus quilts: a quilt goes out when it holds
// QUILT_MAX_PATCHES members, when QUILT_MAX_BYTES would be passed, or when its pacing says so (quilt-pacing.ts: up to
// QUILT_MAX_IN_FLIGHT quilts in flight, spaced a share of one quilt's store apart; QUILT_MAX_WAIT_MS after its first
// reservation when none is in flight). One store for the lot (Walrus charges every blob a fixed metadata overhead that
// dominates small blobs); each member gets its own quilt patch id. A blob over QUILT_MAX_BYTES goes alone.
//
// Crash safety is a protocol in two steps, so that a ciphertext is never in two quilts:
//   1. `reserve` names the quilt (a fresh key) a job will join; the job records that key in its own events before
//      it calls `join`. A job that died after recording it finds its quilt again by that key (QuiltSealer's log).
//   2. Before the store, the quilt's members are sealed in the event log (`seal`: the first fact about a key wins).
//      Only then is the quilt stored. A member that arrives after its quilt was sealed without it is told to leave
//      and join another; a quilt that fails to store fails every member with the reason, and stays theirs to retry.
import { randomUUID } from "node:crypto";
import type { QuiltLimits } from "../../config/env.ts";
import type { QuiltMemberRef, QuiltStored } from "../../schemas/relayer/quilt.ts";
import { nextQuiltMove, nextStoreEstimate } from "./quilt-pacing.ts";

/** Stores patches as one quilt; answers the quilt's blob id and each identifier's quilt patch id. */
export type StoreQuilt = (patches: readonly { identifier: string; contents: Uint8Array }[]) => Promise<{ quiltId: string; patchIds: ReadonlyMap<string, string> }>;

/** Where a quilt's membership is made durable before it is stored (actors/relayer/remember-job.quilts.ts). */
export interface QuiltSealer {
  /** Records the members, in patch order, unless the key's fate was already decided: then throws QuiltAbandoned. */
  seal(key: string, members: readonly QuiltMemberRef[]): Promise<void>;
  /** Records the store's answer, which saves a rebuild after a crash (a member without it rebuilds the same quilt). */
  stored(key: string, stored: QuiltStored): Promise<void>;
}

/** The quilt's key was abandoned (a restarted job found it unsealed) before this writer could seal it. */
export class QuiltAbandoned extends Error {}

/** What joining a quilt ended in: a patch of the stored quilt, or the job is in no quilt and must join another. */
export type QuiltOutcome = { readonly kind: "stored"; readonly quiltId: string; readonly quiltPatchId: string } | { readonly kind: "left"; readonly reason: string };

export interface Clock {
  /** Runs `fn` after `ms`; the returned function cancels it. */
  after(ms: number, fn: () => void): () => void;
  /** Milliseconds on a monotonic clock. */
  now(): number;
}

export const realClock: Clock = {
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
  now: () => performance.now(),
};

interface Member {
  readonly jobId: string;
  readonly contents: Uint8Array;
  readonly outcome: Promise<QuiltOutcome>;
  readonly resolve: (o: QuiltOutcome) => void;
  readonly reject: (err: unknown) => void;
}

interface Gathering {
  readonly key: string;
  /** The clock's reading at its first reservation. */
  readonly firstAt: number;
  reserved: number;
  reservedBytes: number;
  readonly members: Member[];
  /** Closed, no further reservations: it goes out once every reserved member has joined, or at its join grace. */
  full: boolean;
  cancelGrace?: () => void;
}

const left = (reason: string): QuiltOutcome => ({ kind: "left", reason });

/**
 * How long a closed quilt waits for members that reserved a place but have not joined yet (their job is still
 * recording the key). Flushing without them at once would, under load (an append slower than the quilt's wait), send
 * every quilt before its members arrive and have them leave and reserve again without end; a member whose job died
 * only delays its quilt this long.
 */
export const JOIN_GRACE_MS = 5_000;

export class QuiltWriter {
  /** The quilt taking reservations now. */
  private current: Gathering | undefined;
  /** Quilts not yet sealed, by key: reservations made, members joining. */
  private readonly open = new Map<string, Gathering>();
  /** Quilts sealed and being stored, by key: their members. */
  private readonly sending = new Map<string, ReadonlyMap<string, Member>>();
  private readonly inFlight = new Set<Promise<void>>();
  /** The pacing's next look at the current quilt. */
  private cancelPace: (() => void) | undefined;
  private lastCloseAt: number | undefined;
  /** One quilt's store time, estimated from the recent ones. */
  private storeMs: number | undefined;

  constructor(
    private readonly store: StoreQuilt,
    private readonly sealer: QuiltSealer,
    private readonly limits: QuiltLimits,
    private readonly clock: Clock = realClock,
    private readonly newKey: () => string = randomUUID,
  ) {}

  /** The key of the quilt a ciphertext of `bytes` is to join (counted toward that quilt's limits). No I/O. */
  reserve(bytes: number): string {
    if (bytes > this.limits.maxBytes) {
      const solo = this.startGathering();
      solo.reserved = 1;
      solo.reservedBytes = bytes;
      solo.full = true;
      return solo.key;
    }
    let g = this.current;
    if (g && (g.reserved >= this.limits.maxPatches || g.reservedBytes + bytes > this.limits.maxBytes)) {
      this.close(g);
      g = undefined;
    }
    const fresh = !g;
    g ??= this.current = this.startGathering();
    g.reserved++;
    g.reservedBytes += bytes;
    if (g.reserved >= this.limits.maxPatches) this.close(g);
    else if (fresh) this.pace();
    return g.key;
  }

  /**
   * Joins the quilt `key` (reserved by this writer, and recorded by the job): resolves once that quilt is stored, or
   * with `left` when it went out without this job. Undefined when this writer does not know the key (another process
   * reserved it, or its quilt is over): the quilt's fate is then in the event log.
   */
  join(key: string, jobId: string, contents: Uint8Array): Promise<QuiltOutcome> | undefined {
    const g = this.open.get(key);
    if (g) {
      // A redelivery of the same job while its quilt gathers waits on the same patch.
      const already = g.members.find((m) => m.jobId === jobId);
      if (already) return already.outcome;
      const m = this.member(jobId, contents);
      g.members.push(m);
      if (g.full && g.members.length >= g.reserved) this.flush(g);
      return m.outcome;
    }
    const sending = this.sending.get(key);
    if (sending) return sending.get(jobId)?.outcome ?? Promise.resolve(left(`quilt ${key} went out without this job`));
    return undefined;
  }

  /** Members joined and not yet sealed. */
  get gathered(): number {
    let n = 0;
    for (const g of this.open.values()) n += g.members.length;
    return n;
  }

  /** Sends what is gathered now and waits for every quilt in flight (a stop drains, it does not drop). */
  async drain(): Promise<void> {
    this.cancelPace?.();
    for (const g of [...this.open.values()]) this.flush(g);
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  private member(jobId: string, contents: Uint8Array): Member {
    let resolve!: (o: QuiltOutcome) => void;
    let reject!: (err: unknown) => void;
    const outcome = new Promise<QuiltOutcome>((res, rej) => ((resolve = res), (reject = rej)));
    return { jobId, contents, outcome, resolve, reject };
  }

  private startGathering(): Gathering {
    const g: Gathering = { key: this.newKey(), firstAt: this.clock.now(), reserved: 0, reservedBytes: 0, members: [], full: false };
    this.open.set(g.key, g);
    return g;
  }

  /** Quilts closed and not over: waiting for their members, being sealed or stored. */
  private get quiltsInFlight(): number {
    let n = this.sending.size;
    for (const g of this.open.values()) if (g.full) n++;
    return n;
  }

  /** Asks the pacing about the current quilt (on its first reservation, and whenever a quilt in flight is over). */
  private pace(): void {
    this.cancelPace?.();
    this.cancelPace = undefined;
    const g = this.current;
    if (!g) return;
    const now = this.clock.now();
    const move = nextQuiltMove(
      { inFlight: this.quiltsInFlight, sinceFirstMs: now - g.firstAt, sinceLastCloseMs: this.lastCloseAt === undefined ? undefined : now - this.lastCloseAt, storeMs: this.storeMs },
      this.limits,
    );
    if (move.kind === "close") this.close(g);
    else if (move.kind === "wait") this.cancelPace = this.clock.after(move.ms, () => this.pace());
  }

  /** Takes no more reservations; goes out once every reserved member has joined, or JOIN_GRACE_MS from now. */
  private close(g: Gathering): void {
    g.full = true;
    this.lastCloseAt = this.clock.now();
    if (this.current === g) {
      this.current = undefined;
      this.cancelPace?.();
      this.cancelPace = undefined;
    }
    if (g.members.length >= g.reserved) return this.flush(g);
    g.cancelGrace = this.clock.after(JOIN_GRACE_MS, () => this.flush(g));
  }

  private flush(g: Gathering): void {
    if (!this.open.delete(g.key)) return;
    g.cancelGrace?.();
    if (this.current === g) this.current = undefined;
    // Nothing joined: nothing is sealed, and a late member finds the key unsealed in the log and abandons it.
    if (!g.members.length) return this.pace();
    const batch = g.members;
    const members = new Map(batch.map((m) => [m.jobId, m]));
    this.sending.set(g.key, members);
    // Identifiers only need to be unique within the quilt; the sealed list ties each to its job.
    const width = String(batch.length - 1).length;
    const refs = batch.map((m, i) => ({ job_id: m.jobId, identifier: `p${String(i).padStart(width, "0")}` }));
    const done = this.sealAndStore(g.key, batch, refs).finally(() => {
      this.sending.delete(g.key);
      this.pace();
    });
    const tracked = done.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  private async sealAndStore(key: string, batch: readonly Member[], refs: readonly QuiltMemberRef[]): Promise<void> {
    try {
      await this.sealer.seal(key, refs);
    } catch (err) {
      if (err instanceof QuiltAbandoned) for (const m of batch) m.resolve(left(err.message));
      else for (const m of batch) m.reject(err);
      return;
    }
    let stored: QuiltStored;
    try {
      const sentAt = this.clock.now();
      const { quiltId, patchIds } = await this.store(batch.map((m, i) => ({ identifier: refs[i].identifier, contents: m.contents })));
      const patches = refs.map((r) => ({ job_id: r.job_id, patch_id: patchIds.get(r.identifier) }));
      const missing = patches.find((p) => !p.patch_id);
      if (missing) throw new Error(`the publisher stored quilt ${quiltId} without patch ${refs.find((r) => r.job_id === missing.job_id)!.identifier}`);
      stored = { quilt_id: quiltId, patches: patches as QuiltStored["patches"] };
      this.storeMs = nextStoreEstimate(this.storeMs, this.clock.now() - sentAt);
    } catch (err) {
      for (const m of batch) m.reject(err);
      return;
    }
    stored.patches.forEach((p, i) => batch[i].resolve({ kind: "stored", quiltId: stored.quilt_id, quiltPatchId: p.patch_id }));
    // Best effort: without this record a member that crashed before recording its patch rebuilds the same quilt.
    await this.sealer.stored(key, stored).catch(() => undefined);
  }
}
