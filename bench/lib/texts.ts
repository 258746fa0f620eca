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

/**
 * Prose of at most `bytes` UTF-8 bytes (and close to it) from the corpus' memory texts (long memories). The turns
 * hold a few non-ASCII characters, so it is cut by bytes, not characters: the relayer's limit is 1 MiB of UTF-8.
 */
export function prose(bytes: number, seed: number): string {
  const parts: string[] = [];
  let size = 0;
  for (const t of memoryTexts(Math.ceil(bytes / 40) + 8, seed)) {
    if (size >= bytes) break;
    parts.push(t);
    size += t.length + 1;
  }
  let text = parts.join(" ").slice(0, bytes);
  for (let over = Buffer.byteLength(text) - bytes; over > 0; over = Buffer.byteLength(text) - bytes) text = text.slice(0, text.length - over);
  // Never end on half a surrogate pair.
  return /[\uD800-\uDBFF]$/.test(text) ? text.slice(0, -1) : text;
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
