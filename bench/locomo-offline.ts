// Offline retrieval quality on LoCoMo (../shared/data/README.md): one namespace per conversation, one memory per turn,
// exact search, evidence recall@k / hit@k / MRR per category. Used to pick the embedders' defaults.
//   node --import tsx bench/locomo-offline.ts            hashing variants
//   node --import tsx bench/locomo-offline.ts --use      also USE-lite (slow: embeds ~5.9k turns)
import { readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { EmbeddingPort } from "../adapters/ports.ts";
import { HashingEmbedder } from "../adapters/embeddings/hashing.ts";

/** The LoCoMo file: LOCOMO_PATH, else `../shared/data/locomo10.json` from the repository root. */
export const LOCOMO_PATH = process.env.LOCOMO_PATH ?? fileURLToPath(new URL("../../shared/data/locomo10.json", import.meta.url));

export interface Turn { readonly id: string; readonly text: string }
export interface Query { readonly question: string; readonly evidence: readonly string[]; readonly category: number }
export interface Conversation { readonly turns: Turn[]; readonly queries: Query[] }

type RawTurn = { speaker: string; dia_id: string; text: string; blip_caption?: string };
type RawConv = { conversation: Record<string, unknown>; qa: { question: string; evidence?: string[]; category: number }[] };

/** "D8:6; D9:17" -> two ids, "D:11:26" -> "D11:26", "D30:05" -> "D30:5"; anything else unusable is dropped. */
export function normaliseEvidence(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (const part of raw.flatMap((e) => e.split(/[;,\s]+/))) {
    const m = /^D:?(\d+):0*(\d+)$/.exec(part.trim());
    if (m) out.push(`D${Number(m[1])}:${Number(m[2])}`);
  }
  return out;
}

/** `captions`: append the image caption to turns that share an image (the retrieval metric does). */
export function loadLocomo(path = LOCOMO_PATH, captions = true): Conversation[] {
  const data = JSON.parse(readFileSync(path, "utf8")) as RawConv[];
  return data.map((c) => {
    const sessions = Object.keys(c.conversation)
      .filter((k) => /^session_\d+$/.test(k))
      .sort((a, b) => Number(a.slice(8)) - Number(b.slice(8)));
    const turns = sessions.flatMap((k) =>
      (c.conversation[k] as RawTurn[]).map((t) => ({
        id: t.dia_id,
        text: `${t.speaker}: ${t.text}` + (captions && t.blip_caption ? ` [image: ${t.blip_caption}]` : ""),
      })),
    );
    const ids = new Set(turns.map((t) => t.id));
    const queries = c.qa
      .map((q) => ({ question: q.question, category: q.category, evidence: [...new Set(normaliseEvidence(q.evidence ?? []))].filter((e) => ids.has(e)) }))
      .filter((q) => q.evidence.length > 0);
    return { turns, queries };
  });
}

export interface Scores { n: number; r5: number; r10: number; hit10: number; mrr: number }

/** Query embedding given the conversation (namespace) it searches; defaults to the embedder itself. */
type QueryEmbed = (conv: Conversation, questions: string[]) => Float32Array[] | Promise<Float32Array[]>;

export async function evaluate(embedder: EmbeddingPort, convs: Conversation[], batch = 256, queryEmbed?: QueryEmbed): Promise<Map<string, Scores>> {
  const embedAll = async (texts: string[]) => {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += batch) out.push(...(await embedder.embed(texts.slice(i, i + batch))));
    return out;
  };
  const acc = new Map<string, Scores>();
  const add = (key: string, r5: number, r10: number, hit10: number, rr: number) => {
    const s = acc.get(key) ?? { n: 0, r5: 0, r10: 0, hit10: 0, mrr: 0 };
    s.n++, (s.r5 += r5), (s.r10 += r10), (s.hit10 += hit10), (s.mrr += rr);
    acc.set(key, s);
  };
  for (const conv of convs) {
    const docs = await embedAll(conv.turns.map((t) => t.text));
    const questions = conv.queries.map((q) => q.question);
    const qvecs = queryEmbed ? await queryEmbed(conv, questions) : await embedAll(questions);
    conv.queries.forEach((q, qi) => {
      const qv = qvecs[qi];
      const scored = docs.map((d, i) => {
        let s = 0;
        for (let j = 0; j < d.length; j++) s += d[j] * qv[j];
        return { i, s };
      });
      scored.sort((a, b) => b.s - a.s);
      const ev = new Set(q.evidence);
      let first = 0;
      let in5 = 0;
      let in10 = 0;
      for (let r = 0; r < scored.length; r++) {
        if (!ev.has(conv.turns[scored[r].i].id)) continue;
        if (!first) first = r + 1;
        if (r < 5) in5++;
        if (r < 10) in10++;
      }
      const args = [in5 / ev.size, in10 / ev.size, in10 > 0 ? 1 : 0, first ? 1 / first : 0] as const;
      add("all", ...args);
      add(`cat${q.category}`, ...args);
    });
  }
  for (const s of acc.values()) (s.r5 /= s.n), (s.r10 /= s.n), (s.hit10 /= s.n), (s.mrr /= s.n);
  return acc;
}

export function formatScores(label: string, scores: Map<string, Scores>): string {
  const a = scores.get("all")!;
  const cats = [1, 2, 3, 4, 5].filter((c) => scores.has(`cat${c}`)).map((c) => `c${c} ${scores.get(`cat${c}`)!.r10.toFixed(3)}`);
  return `${label.padEnd(34)} n=${a.n} R@5 ${a.r5.toFixed(3)} R@10 ${a.r10.toFixed(3)} hit@10 ${a.hit10.toFixed(3)} MRR ${a.mrr.toFixed(3)} | R@10 ${cats.join(" ")}`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const convs = loadLocomo();
  const variants: [string, EmbeddingPort][] = [];
  for (const dims of process.argv.includes("--all") ? [512, 1024, 1536, 2000] : [1024])
    for (const [bigrams, w] of [[false, 0], [true, 0.25], [true, 0.5]] as const)
      variants.push([`hashing d${dims} ${bigrams ? `bigrams w${w}` : "unigrams"}`, new HashingEmbedder({ dims, bigrams, bigramWeight: w || undefined })]);
  for (const [label, e] of variants) console.log(formatScores(label, await evaluate(e, convs)));
  // Query-side IDF (BM25's idf over the namespace's turns): needs per-namespace document frequencies, which a
  // stateless embedder lacks; measured to size the gain a keyed lexical index could bring.
  for (const [dims, bigrams] of [[1024, false], [1024, true], [2000, false], [2000, true]] as const) {
    const e = new HashingEmbedder({ dims, bigrams });
    const idfQuery: QueryEmbed = (conv, questions) => {
      const df = new Map<number, number>();
      for (const t of conv.turns) for (const f of e.features(t.text)) df.set(f, (df.get(f) ?? 0) + 1);
      const n = conv.turns.length;
      const idf = (f: number) => Math.log(1 + (n - (df.get(f) ?? 0) + 0.5) / ((df.get(f) ?? 0) + 0.5));
      return questions.map((q) => e.embedOne(q, idf));
    };
    console.log(formatScores(`hashing d${dims} ${bigrams ? "bigrams" : "unigrams"} +qIDF`, await evaluate(e, convs, 256, idfQuery)));
  }
  if (process.argv.includes("--use")) {
    const { UseLiteEmbedder } = await import("../adapters/embeddings/use-lite.ts");
    console.log(formatScores("use-lite 512", await evaluate(new UseLiteEmbedder(), convs, 64)));
  }
}
