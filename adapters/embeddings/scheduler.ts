// Fair scheduling of embedding work in front of the model (one scheduler per process, passed to whoever embeds).
//
// - Query embeddings (recall, /api/embed, ask, analyze's duplicate check) go first: a query never waits behind a
//   document's windows, only (at worst) for one document batch already on a worker, which `maxBatchChars` keeps short.
// - Document windows (remember jobs, restores) go least-served first: the document with the fewest windows handed
//   out so far is next (a new memory's window before a long one's 30th; long ones alternate), so a 1 KiB memory is
//   embedded in the next batch even while a 1 MiB one, or ten, have dozens of windows waiting. (Plain round-robin
//   made a short memory wait a whole round of every document in progress: 7× its p99 beside eleven long texts.)
// - Up to `concurrency` batches are on the model at once (USE-lite: one per model thread).
// - Windows of long (multi-window) documents run apart: with a background model (USE-lite: one more model thread at a
//   lower OS priority) in batches of their own there, one at a time, so they take only the CPU the rest leaves (a
//   thread kept free of them was not enough on two cores: the long windows' thread still held a core, 2.76× the
//   others' p99). Without one, they hold at most concurrency − 1 of the model's batches, so one stays free for
//   queries and short memories, which would otherwise wait for a long document's batch to finish (6× their p99).
// - Every document embedding has a deadline derived from its size (its window count), counted in the model time the
//   document itself uses (its share of each batch it is in: the model thread's CPU time where the model reports it,
//   else wall time), so waiting behind other work, or for the CPU at a low priority, never fails a text: past it,
//   its windows leave the queue and it fails with TextTooLong, which the remember job reports as a permanent failure.
// - A document embedded under a key (the job id) is embedded once however often it is asked for while in progress
//   (a redelivered job joins the running embedding instead of queueing the same text again).
import type { EmbeddingPort } from "../ports.ts";
import { meanPool, windowsOf, type WindowSpec } from "./windows.ts";

/** deadline = baseMs + perWindowMs × windows. */
export interface DeadlineSpec {
  readonly baseMs: number;
  readonly perWindowMs: number;
}

export interface SchedulerOptions {
  readonly window: WindowSpec;
  readonly deadline: DeadlineSpec;
  /** Batches on the model at once. */
  readonly concurrency: number;
  /** Texts per model call. */
  readonly maxBatch: number;
  /** Characters of document windows per model call: bounds how long a query can wait behind one. */
  readonly maxBatchChars: number;
}

/** Where long documents' windows run apart from everything else, and what CPU each call took (undefined: unknown). */
export interface BackgroundModel {
  embedInBackground(texts: readonly string[]): Promise<{ readonly vectors: Float32Array[]; readonly cpuMs: number | undefined }>;
}

/** A text whose embedding did not finish within its deadline. The message is what the job reports. */
export class TextTooLong extends Error {
  override readonly name = "TextTooLong";
  constructor(readonly deadlineMs: number) {
    super(`text too long to embed within ${formatSeconds(deadlineMs)} s`);
  }
}

const formatSeconds = (ms: number) => (ms >= 10_000 ? String(Math.round(ms / 1000)) : String(Math.round(ms / 100) / 10));

export function deadlineMs(spec: DeadlineSpec, windows: number): number {
  return spec.baseMs + spec.perWindowMs * windows;
}

interface QueryItem {
  readonly text: string;
  readonly at: number;
  resolve(v: Float32Array): void;
  reject(e: unknown): void;
}

interface DocumentJob {
  readonly key: string;
  readonly windows: readonly string[];
  readonly vectors: Float32Array[];
  readonly at: number;
  readonly promise: Promise<Float32Array>;
  readonly limitMs: number;
  /** Model time spent on this document so far: its share of every batch it was in. */
  modelMs: number;
  /** When the document was asked for or its last window was embedded (readiness counts waits from here). */
  progressAt: number;
  next: number;
  done: number;
  settled: boolean;
  resolve(v: Float32Array): void;
  reject(e: unknown): void;
}

type Slot = { kind: "query"; item: QueryItem } | { kind: "window"; job: DocumentJob; index: number };

const isLong = (job: DocumentJob) => job.windows.length > 1;

/** What embeds whole documents (remember jobs, restores): a pooled vector per text. */
export interface DocumentEmbedder {
  readonly name: string;
  readonly dims: number;
  embedDocument(key: string | undefined, text: string): Promise<Float32Array>;
  /** The deadline `text`'s embedding gets (its effect budget follows from it). */
  deadlineMsFor(text: string): number;
}

export class EmbeddingScheduler implements EmbeddingPort, DocumentEmbedder {
  readonly name: string;
  readonly dims: number;
  private readonly queries: QueryItem[] = [];
  /** Documents with windows still to hand out, oldest first. */
  private readonly ready: DocumentJob[] = [];
  /** Every unsettled document by key. */
  private readonly documents = new Map<string, DocumentJob>();
  private inFlight = 0;
  /** Batches on the model (or the background model) that hold windows of long documents. */
  private inFlightLong = 0;
  private anonymous = 0;

  constructor(private readonly model: EmbeddingPort, readonly options: SchedulerOptions, private readonly background?: BackgroundModel) {
    this.name = model.name;
    this.dims = model.dims;
  }

  /**
   * Query embeddings: ahead of every document window, batched with the other queries waiting. A text longer than one
   * window is embedded as a document (windows, pooled, round-robin with the others): `/api/embed` then returns the
   * vector a remember of the same text stores, and a long text never holds a model thread ahead of the queue.
   */
  embed(texts: readonly string[]): Promise<Float32Array[]> {
    const at = performance.now();
    const all = Promise.all(texts.map((text) =>
      text.length > this.options.window.maxChars
        ? this.embedDocument(undefined, text)
        : new Promise<Float32Array>((resolve, reject) => this.queries.push({ text, at, resolve, reject }))));
    this.pump();
    return all;
  }

  /** A document's pooled vector. `key` (e.g. the job id) merges concurrent requests for the same document. */
  embedDocument(key: string | undefined, text: string): Promise<Float32Array> {
    const id = key ?? `\u0000${this.anonymous++}`;
    const running = this.documents.get(id);
    if (running) return running.promise;
    let resolve!: (v: Float32Array) => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<Float32Array>((res, rej) => ((resolve = res), (reject = rej)));
    const windows = windowsOf(text, this.options.window);
    const limitMs = deadlineMs(this.options.deadline, windows.length);
    const job: DocumentJob = { key: id, windows, vectors: new Array(windows.length), at: performance.now(), promise, limitMs, modelMs: 0, progressAt: performance.now(), next: 0, done: 0, settled: false, resolve, reject };
    this.documents.set(id, job);
    this.ready.push(job);
    this.pump();
    return promise;
  }

  deadlineMsFor(text: string): number {
    return deadlineMs(this.options.deadline, windowsOf(text, this.options.window).length);
  }

  /**
   * Milliseconds the longest-stalled unfinished embedding has gone without progress: a query since it was asked, a
   * document since its last window was embedded (or since it was asked); 0 when idle. A long document whose windows
   * keep coming back is not stalled however long it takes.
   */
  oldestWaitMs(): number {
    let oldest = Infinity;
    if (this.queries.length) oldest = this.queries[0].at;
    for (const job of this.documents.values()) oldest = Math.min(oldest, job.progressAt);
    return Number.isFinite(oldest) ? performance.now() - oldest : 0;
  }

  /** Embeddings waiting or in progress: queries and documents. */
  get waiting(): { readonly queries: number; readonly documents: number } {
    return { queries: this.queries.length, documents: this.documents.size };
  }

  private settle(job: DocumentJob, outcome: Float32Array | Error): void {
    if (job.settled) return;
    job.settled = true;
    this.documents.delete(job.key);
    const at = this.ready.indexOf(job);
    if (at >= 0) this.ready.splice(at, 1);
    if (outcome instanceof Error) job.reject(outcome);
    else job.resolve(outcome);
  }

  /** The next batch for the model: queries alone if any wait, else document windows (short ones only with a background model). */
  private nextBatch(): Slot[] {
    const batch: Slot[] = [];
    while (batch.length < this.options.maxBatch && this.queries.length) batch.push({ kind: "query", item: this.queries.shift()! });
    if (batch.length) return batch; // query batches stay pure: they must come back as soon as possible
    if (this.background) return this.windowBatch((job) => !isLong(job));
    const longAllowed = this.inFlightLong < Math.max(1, this.options.concurrency - 1);
    // A batch that may hold long documents' windows starts with one of them, so a steady stream of new short memories
    // cannot starve a long one (its windows progress).
    return this.windowBatch((job) => longAllowed || !isLong(job), longAllowed ? isLong : undefined);
  }

  /** Windows of the documents `eligible` accepts, least-served first, starting with one `first` accepts if any. */
  private windowBatch(eligible: (job: DocumentJob) => boolean, first?: (job: DocumentJob) => boolean): Slot[] {
    const batch: Slot[] = [];
    let chars = 0;
    let at = first ? this.leastServed(first) : -1;
    while (batch.length < this.options.maxBatch) {
      if (at < 0) at = this.leastServed(eligible);
      if (at < 0) break;
      const job = this.ready[at];
      const text = job.windows[job.next];
      if (batch.length && chars + text.length > this.options.maxBatchChars) break;
      batch.push({ kind: "window", job, index: job.next++ });
      chars += text.length;
      if (job.next === job.windows.length) this.ready.splice(at, 1);
      at = -1;
    }
    return batch;
  }

  /** Index in `ready` of the document `eligible` accepts with the fewest windows handed out (the oldest of equals), or -1. */
  private leastServed(eligible: (job: DocumentJob) => boolean): number {
    let best = -1;
    for (let i = 0; i < this.ready.length; i++) {
      const job = this.ready[i];
      if (eligible(job) && (best < 0 || job.next < this.ready[best].next)) best = i;
    }
    return best;
  }

  private pump(): void {
    while (this.inFlight < this.options.concurrency) {
      const batch = this.nextBatch();
      if (!batch.length) break;
      const long = batch.some((s) => s.kind === "window" && isLong(s.job));
      this.inFlight++;
      if (long) this.inFlightLong++;
      const model = this.model;
      void this.run(batch, async (texts) => ({ vectors: await model.embed(texts), cpuMs: undefined })).finally(() => {
        this.inFlight--;
        if (long) this.inFlightLong--;
        this.pump();
      });
    }
    const background = this.background;
    if (!background || this.inFlightLong > 0) return;
    const batch = this.windowBatch(isLong);
    if (!batch.length) return;
    this.inFlightLong++;
    void this.run(batch, (texts) => background.embedInBackground(texts)).finally(() => {
      this.inFlightLong--;
      this.pump();
    });
  }

  private async run(batch: Slot[], embed: BackgroundModel["embedInBackground"]): Promise<void> {
    const texts = batch.map((s) => (s.kind === "query" ? s.item.text : s.job.windows[s.index]));
    let vectors: Float32Array[];
    let cpuMs: number | undefined;
    const t0 = performance.now();
    try {
      ({ vectors, cpuMs } = await embed(texts));
    } catch (err) {
      for (const s of batch) {
        if (s.kind === "query") s.item.reject(err);
        else this.settle(s.job, err instanceof Error ? err : new Error(String(err)));
      }
      return;
    }
    // Each text of the batch is charged an equal share of the batch's time.
    const now = performance.now();
    const share = (cpuMs ?? now - t0) / batch.length;
    batch.forEach((s, i) => {
      if (s.kind === "query") return s.item.resolve(vectors[i]);
      const job = s.job;
      if (job.settled) return; // past its deadline: the result is dropped
      job.vectors[s.index] = vectors[i];
      job.done++;
      job.modelMs += share;
      job.progressAt = now;
      if (job.done === job.windows.length) this.settle(job, meanPool(job.vectors));
      else if (job.modelMs > job.limitMs) this.settle(job, new TextTooLong(job.limitMs));
    });
  }
}
