// The mem0 side of the peer section (bench/sections/peer.ts), in its own process so that its CPU is its own and its
// database connections end with it. Protocol on stdio: it prints `ready <phase>`, waits for a line on stdin, runs the
// phase and prints `done <phase> <json>`; phases: add, then search.
//   node --import tsx bench/peer-mem0.ts   (env PEER_DB_URL, PEER_EMBED_URL, PEER_DIMS, PEER_ADDS, PEER_SEARCHES)
import { createInterface } from "node:readline";
import { memoryTexts, queries } from "./lib/texts.ts";
import { closedOps } from "./lib/closed-ops.ts";

process.env.MEM0_TELEMETRY = "false";
const { Memory } = await import("mem0ai/oss");
const env = (k: string) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is required`);
  return v;
};
const dims = Number(env("PEER_DIMS"));
const users = Number(process.env.PEER_USERS ?? 10);
const texts = memoryTexts(Number(env("PEER_ADDS")), 120_000);
const qs = queries(Number(env("PEER_SEARCHES")), 0);
const memory = new Memory({
  version: "v1.1",
  embedder: { provider: "openai", config: { apiKey: "bench", model: "hashing", baseURL: env("PEER_EMBED_URL"), embeddingDims: dims } },
  vectorStore: { provider: "pgvector", config: { collectionName: "mem0_bench", embeddingModelDims: dims, connectionString: env("PEER_DB_URL") } },
  llm: { provider: "openai", config: { apiKey: "bench", model: "unused", baseURL: env("PEER_EMBED_URL") } },
  disableHistory: true,
} as never);
await memory.add("warm-up", { userId: "warm", infer: false } as never);

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const phase = async (name: string, n: number, workers: number, op: (i: number) => Promise<unknown>) => {
  console.log(`ready ${name}`);
  await lines.next();
  const r = await closedOps(n, workers, op);
  console.log(`done ${name} ${JSON.stringify(r)}`);
};
await phase("add", texts.length, Number(process.env.PEER_WRITERS ?? 16), (i) => memory.add(texts[i], { userId: `user-${i % users}`, infer: false } as never));
await phase("search", qs.length, Number(process.env.PEER_READERS ?? 8), async (i) => {
  const r = (await memory.search(qs[i], { filters: { user_id: `user-${i % users}` }, limit: 10 } as never)) as { results: unknown[] };
  if (!Array.isArray(r.results)) throw new Error("mem0 search answered no results list");
});
process.exit(0);
