// USE-lite vectors of every LoCoMo turn and question, embedded once and kept in a cache file (embedding ~8k texts
// takes minutes of CPU): the fusion tuning (bench/locomo-fusion.ts) re-reads them.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { UseLiteEmbedder } from "../adapters/embeddings/use-lite.ts";
import type { Conversation } from "./locomo-offline.ts";

export const USE_CACHE = process.env.LOCOMO_USE_CACHE ?? "/tmp/memrelay-locomo-use-lite.json";

export interface UseVectors { turns: Float32Array[][]; questions: Float32Array[][] }

const encode = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
const decode = (s: string) => {
  const b = Buffer.from(s, "base64");
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
};

export async function useVectors(convs: Conversation[]): Promise<UseVectors> {
  const key = convs.map((c) => `${c.turns.length}/${c.queries.length}`).join(",");
  if (existsSync(USE_CACHE)) {
    const j = JSON.parse(readFileSync(USE_CACHE, "utf8")) as { key: string; turns: string[][]; questions: string[][] };
    if (j.key === key) return { turns: j.turns.map((c) => c.map(decode)), questions: j.questions.map((c) => c.map(decode)) };
  }
  const use = new UseLiteEmbedder();
  const embedAll = async (texts: string[]) => {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += 64) out.push(...(await use.embed(texts.slice(i, i + 64))));
    return out;
  };
  const turns: Float32Array[][] = [];
  const questions: Float32Array[][] = [];
  for (const c of convs) {
    turns.push(await embedAll(c.turns.map((t) => t.text)));
    questions.push(await embedAll(c.queries.map((q) => q.question)));
  }
  writeFileSync(USE_CACHE, JSON.stringify({ key, turns: turns.map((c) => c.map(encode)), questions: questions.map((c) => c.map(encode)) }));
  return { turns, questions };
}
