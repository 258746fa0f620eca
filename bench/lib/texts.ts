// Benchmark text: LoCoMo conversation turns as memories and LoCoMo questions as recall queries (real
// conversational text, in ../shared/data beside the repository; see bench/locomo-offline.ts).
import { loadLocomo } from "../locomo-offline.ts";

let cache: { turns: string[]; questions: string[] } | undefined;

function corpus() {
  if (!cache) {
    const convs = loadLocomo(undefined, false);
    cache = { turns: convs.flatMap((c) => c.turns.map((t) => t.text)), questions: convs.flatMap((c) => c.queries.map((q) => q.question)) };
  }
  return cache;
}

/** `n` distinct memory texts: the turns, then pairs of turns (as a chat memory might merge two). `offset` shifts the sequence. */
export function memoryTexts(n: number, offset = 0): string[] {
  const { turns } = corpus();
  const T = turns.length;
  const out: string[] = [];
  for (let k = offset; k < offset + n; k++) {
    if (k < T) out.push(turns[k]);
    else {
      const round = Math.floor(k / T);
      const i = k % T;
      out.push(`${turns[i]} ${turns[(i * 7 + round * 131) % T]}`);
    }
  }
  return out;
}

/** Prose of `bytes` ASCII characters from the corpus' memory texts (long memories). */
export function prose(bytes: number, seed: number): string {
  const parts: string[] = [];
  let size = 0;
  for (const t of memoryTexts(Math.ceil(bytes / 40) + 8, seed)) {
    if (size >= bytes) break;
    parts.push(t);
    size += t.length + 1;
  }
  return parts.join(" ").slice(0, bytes);
}

export function queries(n: number, offset = 0): string[] {
  const { questions } = corpus();
  return Array.from({ length: n }, (_, k) => questions[(k + offset) % questions.length]);
}

/** Vocabulary of the corpus, for synthetic texts of other owners. */
export function vocabulary(): string[] {
  const { turns } = corpus();
  const words = new Set<string>();
  for (const t of turns) for (const w of t.toLowerCase().match(/[a-z']{3,}/g) ?? []) words.add(w);
  return [...words];
}
